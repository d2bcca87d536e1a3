// For tests only: Supabase's JWTs (HS256 with the project's JWT secret), signed and checked as
// its Data API (PostgREST) and Realtime do.
import { createHmac, timingSafeEqual } from 'node:crypto';

export type JwtClaims = Record<string, unknown> & { role?: string; exp?: number };

const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const sign = (data: string, secret: string) =>
  createHmac('sha256', secret).update(data).digest('base64url');

export function signJwt(claims: JwtClaims, secret: string): string {
  const data = `${encode({ alg: 'HS256', typ: 'JWT' })}.${encode(claims)}`;
  return `${data}.${sign(data, secret)}`;
}

/** The claims of a valid token, or why it is refused (the wording PostgREST uses). */
export function verifyJwt(
  token: string,
  secret: string,
  nowMs = Date.now(),
): { claims: JwtClaims } | { refused: string } {
  const [header, body, signature] = token.split('.');
  if (!header || !body || !signature)
    return { refused: 'JWSError (CompactDecodeError Invalid number of parts)' };
  const expected = Buffer.from(sign(`${header}.${body}`, secret));
  const given = Buffer.from(signature);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) {
    return { refused: 'JWSError JWSInvalidSignature' };
  }
  const claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as JwtClaims;
  if (typeof claims.exp === 'number' && claims.exp * 1000 <= nowMs)
    return { refused: 'JWT expired' };
  return { claims };
}
