import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { newWebhookSecret, signWebhook } from './webhook-signature.js';

describe('webhook signatures', () => {
  it('sign id.timestamp.body with the secret key, as Standard Webhooks do', () => {
    const secret = newWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const body = '{"seq":1}';
    const signature = signWebhook(secret, 'sub_x.1', 1_700_000_000, body);
    const key = Buffer.from(secret.slice(6), 'base64');
    const expected = createHmac('sha256', key)
      .update(`sub_x.1.1700000000.${body}`)
      .digest('base64');
    expect(signature).toBe(`v1,${expected}`);
    // Any change to the id, time or body changes the signature.
    expect(signWebhook(secret, 'sub_x.2', 1_700_000_000, body)).not.toBe(signature);
    expect(signWebhook(secret, 'sub_x.1', 1_700_000_001, body)).not.toBe(signature);
    expect(signWebhook(secret, 'sub_x.1', 1_700_000_000, '{"seq":2}')).not.toBe(signature);
    expect(newWebhookSecret()).not.toBe(secret);
  });
});
