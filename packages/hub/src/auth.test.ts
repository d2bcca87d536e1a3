import type { Store } from '@ctxbus/store';
import { openSqliteStore } from '@ctxbus/store';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mintToken, RESERVED_RUNTIMES, TokenVerifier } from './auth.js';

// The verifier runs on an injected clock, and the store's token look-ups can be held open, so
// "served without waiting for the store" is shown by a verdict that arrives while the look-up
// is still pending, never by timing.

let store: Store;
let lookups: number;
let answers: number;
/** While set, look-ups read at once but answer only when it is released. */
let hold: { promise: Promise<void>; release: () => void } | null;
let counting: Store;
let clock: number;

function holdLookups() {
  let release: () => void = () => {};
  const promise = new Promise<void>((resolve) => {
    release = resolve;
  });
  hold = { promise, release };
  return hold;
}

beforeEach(() => {
  store = openSqliteStore({ path: ':memory:' });
  lookups = 0;
  answers = 0;
  hold = null;
  clock = 1_000_000;
  counting = Object.create(store, {
    findTokenByHash: {
      value: async (hash: string) => {
        lookups += 1;
        const gate = hold;
        const record = await store.findTokenByHash(hash);
        if (gate) await gate.promise;
        answers += 1;
        return record;
      },
    },
  });
});
afterEach(async () => {
  await store.close();
});

/** Waits until every look-up started so far has answered (background re-reads included). */
async function lookupsSettled(): Promise<void> {
  for (let turn = 0; answers < lookups; turn++) {
    if (turn > 1_000) throw new Error('a token look-up never answered');
    await new Promise((resolve) => setImmediate(resolve));
  }
  await new Promise((resolve) => setImmediate(resolve));
}

const verifierWith = (cacheMs: number) => new TokenVerifier(counting, cacheMs, () => clock);

/**
 * 'answered' when `promise` settles within the current turn of the event loop (so it did not
 * wait for a held look-up), 'waited' otherwise.
 */
function answeredWhileHeld(promise: Promise<unknown>): Promise<string> {
  const nextTurn = new Promise<string>((resolve) => setImmediate(resolve, 'waited'));
  return Promise.race([promise.then(() => 'answered'), nextTurn]);
}

describe('TokenVerifier', () => {
  it('serves a token in steady use without waiting for the store, refreshing ahead', async () => {
    const { token } = await mintToken(store, { role: 'runtime', teamId: 't', runtime: 'web' });
    const verifier = verifierWith(1_200);
    await verifier.verify(`Bearer ${token}`);
    expect(lookups).toBe(1);
    // Inside the last second of the verdict: answered at once, re-read in the background.
    clock += 300;
    const slow = holdLookups();
    expect(await answeredWhileHeld(verifier.verify(`Bearer ${token}`))).toBe('answered');
    expect(lookups).toBe(2);
    slow.release();
    await lookupsSettled();
    // Past the first verdict's end, the refreshed one (read at +300) is valid: no wait either.
    clock += 1_000;
    const slower = holdLookups();
    expect(await answeredWhileHeld(verifier.verify(`Bearer ${token}`))).toBe('answered');
    slower.release();
  });

  it('applies a revocation made elsewhere within the cache time, even in steady use', async () => {
    const { token, record } = await mintToken(store, {
      role: 'runtime',
      teamId: 't',
      runtime: 'web',
    });
    const verifier = verifierWith(600);
    await verifier.verify(`Bearer ${token}`);
    // Another hub revokes it: this verifier only learns through the store.
    await store.revokeToken(record.id);
    clock += 599;
    // Still the cached verdict (a background re-read starts: it is in its last second).
    await expect(verifier.verify(`Bearer ${token}`)).resolves.toMatchObject({ tokenId: record.id });
    // Once the cache time has passed, the token is refused, whatever the re-read did.
    clock += 2;
    await expect(verifier.verify(`Bearer ${token}`)).rejects.toMatchObject({
      code: 'unauthorized',
    });
  });

  it('never caches a read that started before a revocation through this hub', async () => {
    const { token, record } = await mintToken(store, {
      role: 'runtime',
      teamId: 't',
      runtime: 'web',
    });
    const verifier = verifierWith(1_100);
    await verifier.verify(`Bearer ${token}`);
    clock += 200;
    // A refresh-ahead read starts and is held; the token is revoked here and forgotten.
    const slow = holdLookups();
    await verifier.verify(`Bearer ${token}`);
    await store.revokeToken(record.id);
    verifier.forget(record.id);
    slow.release();
    await lookupsSettled();
    hold = null;
    await expect(verifier.verify(`Bearer ${token}`)).rejects.toMatchObject({
      code: 'unauthorized',
    });
  });

  it('re-reads a token from the store for open streams (stillValid)', async () => {
    const { token, record } = await mintToken(store, {
      role: 'runtime',
      teamId: 't',
      runtime: 'web',
    });
    const verifier = verifierWith(5_000);
    await verifier.verify(`Bearer ${token}`);
    const hash = record.hash;
    expect(await verifier.stillValid(hash)).toBe(true);
    await store.revokeToken(record.id);
    // No clock movement: stillValid reads the store, not the cached verdict.
    expect(await verifier.stillValid(hash)).toBe(false);
    await expect(verifier.verify(`Bearer ${token}`)).rejects.toMatchObject({
      code: 'unauthorized',
    });
  });
});

describe('mintToken', () => {
  it("refuses the hub's own runtime names, which its sweeps and conflict items are written as", async () => {
    for (const runtime of RESERVED_RUNTIMES) {
      await expect(
        mintToken(store, { role: 'runtime', teamId: 't', runtime }),
      ).rejects.toMatchObject({
        code: 'validation_failed',
        message: expect.stringContaining(`runtime ${runtime}`),
      });
    }
    expect(RESERVED_RUNTIMES).toEqual(['ctxbus', 'hub']);
  });
});
