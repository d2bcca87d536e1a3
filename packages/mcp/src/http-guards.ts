import { createHash, timingSafeEqual } from 'node:crypto';

/** Host names a local hub answers to by default (DNS-rebinding protection). */
export const LOCALHOST_NAMES: readonly string[] = ['localhost', '127.0.0.1', '[::1]'];

/** A Host header value: a name, IPv4 or bracketed IPv6 address, and an optional port. */
const HOST_HEADER = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?$/;

/**
 * The host name of a Host header (port dropped, IPv6 kept in brackets, lowercased), or
 * undefined when the header is missing or not a plain host: `evil@127.0.0.1` would otherwise
 * parse as 127.0.0.1. Compared by name so one list works for every port.
 */
export function hostNameOf(host: string | null): string | undefined {
  const match = HOST_HEADER.exec(host ?? '');
  return match?.[1]?.toLowerCase();
}

/** The token of an `Authorization: Bearer <token>` header, or undefined. */
export function bearerToken(authorization: string | null): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  return match?.[1];
}

/** A token's SHA-256, so sessions keep no secret and compare in constant time. */
export function tokenDigest(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

export function sameDigest(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
