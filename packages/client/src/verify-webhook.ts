import type { WebhookPayload } from '@ctxbus/core/contract';
import { CtxbusError, webhookPayloadSchema } from '@ctxbus/core/contract';

// Verifies a ctxbus webhook on the receiving side (Standard Webhooks signatures, see the hub's
// webhook-signature.ts). WebCrypto only, so it runs in Node, browsers, Deno and edge runtimes.

export interface VerifyWebhookOptions {
  /** The `whsec_...` secret returned when the subscription was created. */
  secret: string;
  /** The request headers (a Headers object or a plain, lower- or mixed-case record). */
  headers: Headers | Record<string, string | string[] | undefined>;
  /** The raw request body, exactly as received (not re-serialised JSON). */
  body: string;
  /** Oldest (and furthest in the future) timestamp accepted, in seconds (default 300). */
  toleranceSeconds?: number;
  now?: Date;
}

function header(headers: VerifyWebhookOptions['headers'], name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') {
    return (headers as Headers).get(name) ?? undefined;
  }
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === name) return Array.isArray(value) ? value[0] : value;
  }
  return undefined;
}

const refuse = (message: string) => new CtxbusError('unauthorized', `webhook rejected: ${message}`);

function base64Bytes(text: string): Uint8Array<ArrayBuffer> | null {
  try {
    const binary = atob(text);
    const bytes = new Uint8Array(binary.length);
    for (let index = 0; index < binary.length; index++) bytes[index] = binary.charCodeAt(index);
    return bytes;
  } catch {
    return null;
  }
}

/**
 * Checks the signature and timestamp of a webhook request and returns its payload. Throws a
 * CtxbusError `unauthorized` when the signature does not match, a header is missing, or the
 * timestamp is outside the tolerance (a replay). Deduplicate on `payload.seq` or the
 * `webhook-id` header: delivery is at least once.
 */
export async function verifyWebhook(options: VerifyWebhookOptions): Promise<WebhookPayload> {
  const id = header(options.headers, 'webhook-id');
  const timestamp = header(options.headers, 'webhook-timestamp');
  const signatures = header(options.headers, 'webhook-signature');
  if (!id || !timestamp || !signatures) {
    throw refuse('missing webhook-id, webhook-timestamp or webhook-signature');
  }
  const seconds = Number(timestamp);
  if (!/^\d+$/.test(timestamp) || !Number.isSafeInteger(seconds)) {
    throw refuse('webhook-timestamp is not a number of seconds');
  }
  const now = Math.floor((options.now ?? new Date()).getTime() / 1000);
  const tolerance = options.toleranceSeconds ?? 300;
  if (Math.abs(now - seconds) > tolerance) {
    throw refuse(`timestamp ${seconds} is more than ${tolerance} s from now (${now})`);
  }
  if (!options.secret.startsWith('whsec_')) throw refuse('the secret must start with whsec_');
  const keyBytes = base64Bytes(options.secret.slice('whsec_'.length));
  if (!keyBytes) throw refuse('the secret is not valid base64');
  const key = await crypto.subtle.importKey(
    'raw',
    keyBytes,
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['verify'],
  );
  const signed = new TextEncoder().encode(`${id}.${timestamp}.${options.body}`);
  for (const entry of signatures.split(' ')) {
    const [version, value] = entry.split(',', 2);
    if (version !== 'v1' || !value) continue;
    const signature = base64Bytes(value);
    // crypto.subtle.verify compares in constant time.
    if (signature && (await crypto.subtle.verify('HMAC', key, signature, signed))) {
      let json: unknown;
      try {
        json = JSON.parse(options.body);
      } catch {
        throw refuse('the body is not JSON');
      }
      const parsed = webhookPayloadSchema.safeParse(json);
      if (!parsed.success) throw refuse(`unexpected payload: ${parsed.error.message}`);
      return parsed.data;
    }
  }
  throw refuse('no signature matches');
}
