import type { Store } from '@ctxbus/store';
import { openSqliteStore } from '@ctxbus/store';
import { waitUntil } from '@ctxbus/test-kit';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { mintToken } from './auth.js';
import type { Hub } from './create-hub.js';
import { createHub } from './create-hub.js';

let store: Store;
let hub: Hub;

beforeEach(async () => {
  // Only the interval timers are fake: the hub checks open streams' tokens on one, and the
  // test turns it; everything else (the store, the stream) runs on real time.
  vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
  store = openSqliteStore({ path: ':memory:' });
  hub = await createHub({ store, tokenCacheMs: 5_000 });
});

afterEach(async () => {
  await hub.close();
  await store.close();
  vi.useRealTimers();
});

describe('open streams of a token revoked elsewhere', () => {
  it('end at the next token check, one verdict interval later', async () => {
    const minted = await mintToken(store, { role: 'runtime', teamId: 'acme', runtime: 'web' });
    const response = await hub.app.request('/api/stream', {
      headers: { authorization: `Bearer ${minted.token}` },
    });
    expect(response.status).toBe(200);
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = '';
    const readUntil = async (needle: string) => {
      while (!text.includes(needle)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`the stream ended before ${needle}`);
        text += decoder.decode(value, { stream: true });
      }
    };
    await readUntil('event: ready');
    // Revoked behind this hub's back (as through another hub): nothing tells it.
    await store.revokeToken(minted.record.id);
    expect(hub.services.feed.subscriberCount).toBe(1);
    await vi.advanceTimersByTimeAsync(5_000);
    await waitUntil(
      () => hub.services.feed.subscriberCount === 0,
      "the token check to end the revoked token's stream",
    );
    await readUntil('event: disconnect');
    expect(text).toContain('"reason":"token_revoked"');
    expect(hub.services.feed.ended.token_revoked).toBe(1);
    await reader.cancel();
  });
});
