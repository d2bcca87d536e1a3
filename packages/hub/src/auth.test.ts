import type { Store } from '@ctxbus/store';
import { openSqliteStore } from '@ctxbus/store';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mintToken, TokenVerifier } from './auth.js';

let store: Store;
let lookups: number;
let delayMs: number;
let counting: Store;

beforeEach(() => {
  store = openSqliteStore({ path: ':memory:' });
  lookups = 0;
  delayMs = 0;
  counting = Object.create(store, {
    findTokenByHash: {
      // Reads at once, answers after delayMs (a slow round trip).
      value: async (hash: string) => {
        lookups += 1;
        const record = await store.findTokenByHash(hash);
        if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
        return record;
      },
    },
  });
});
afterEach(async () => {
  await store.close();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('TokenVerifier', () => {
  it('serves a token in steady use without waiting for the store, refreshing ahead', async () => {
    const { token } = await mintToken(store, { role: 'runtime', teamId: 't', runtime: 'web' });
    const verifier = new TokenVerifier(counting, 1_200);
    await verifier.verify(`Bearer ${token}`);
    expect(lookups).toBe(1);
    // Inside the last second of the verdict: served at once, re-read in the background.
    await sleep(300);
    delayMs = 150;
    const started = performance.now();
    await verifier.verify(`Bearer ${token}`);
    expect(performance.now() - started).toBeLessThan(100);
    expect(lookups).toBe(2);
    // Past the first verdict's end, the refreshed one is still valid: no wait either.
    await sleep(1_000);
    const again = performance.now();
    await verifier.verify(`Bearer ${token}`);
    expect(performance.now() - again).toBeLessThan(100);
  });

  it('applies a revocation made elsewhere within the cache time, even in steady use', async () => {
    const { token, record } = await mintToken(store, {
      role: 'runtime',
      teamId: 't',
      runtime: 'web',
    });
    const verifier = new TokenVerifier(counting, 600);
    await verifier.verify(`Bearer ${token}`);
    // Another hub revokes it: this verifier only learns through the store.
    await store.revokeToken(record.id);
    const revokedAt = Date.now();
    let rejectedAfter: number | null = null;
    while (Date.now() - revokedAt < 2_000) {
      try {
        await verifier.verify(`Bearer ${token}`);
      } catch (error) {
        expect((error as { code: string }).code).toBe('unauthorized');
        rejectedAfter = Date.now() - revokedAt;
        break;
      }
      await sleep(20);
    }
    expect(rejectedAfter).not.toBeNull();
    // Within the cache time (600 ms), plus slack for a loaded machine.
    expect(rejectedAfter ?? Number.POSITIVE_INFINITY).toBeLessThanOrEqual(600 + 400);
  });

  it('never caches a read that started before a revocation through this hub', async () => {
    const { token, record } = await mintToken(store, {
      role: 'runtime',
      teamId: 't',
      runtime: 'web',
    });
    const verifier = new TokenVerifier(counting, 1_100);
    await verifier.verify(`Bearer ${token}`);
    await sleep(200);
    // A refresh-ahead read starts (slow), then the token is revoked here and forgotten.
    delayMs = 200;
    await verifier.verify(`Bearer ${token}`);
    await store.revokeToken(record.id);
    verifier.forget(record.id);
    await sleep(300);
    delayMs = 0;
    await expect(verifier.verify(`Bearer ${token}`)).rejects.toMatchObject({
      code: 'unauthorized',
    });
  });
});
