import { createHmac, randomBytes } from 'node:crypto';

// Webhook signing in the Standard Webhooks scheme (standardwebhooks.com), so receivers can
// verify with any library that implements it, or with `verifyWebhook` from @ctxbus/client:
//   webhook-id: <message id, stable across retries: the idempotency key>
//   webhook-timestamp: <unix seconds of this attempt>
//   webhook-signature: v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<body>")>
// The key is the base64 part of the `whsec_...` secret. The timestamp is signed, so a
// receiver that rejects old timestamps cannot be fed a replayed request.

const PREFIX = 'whsec_';

/** A new signing secret: `whsec_` + 32 random bytes, base64. */
export function newWebhookSecret(): string {
  return `${PREFIX}${randomBytes(32).toString('base64')}`;
}

function secretKey(secret: string): Buffer {
  if (!secret.startsWith(PREFIX)) throw new Error('a webhook secret starts with whsec_');
  return Buffer.from(secret.slice(PREFIX.length), 'base64');
}

/** The `webhook-signature` header value for one attempt. */
export function signWebhook(secret: string, id: string, timestamp: number, body: string): string {
  const mac = createHmac('sha256', secretKey(secret))
    .update(`${id}.${timestamp}.${body}`)
    .digest('base64');
  return `v1,${mac}`;
}
