import { createClient } from '@ctxbus/client';
import { waitUntil } from '@ctxbus/test-kit';
import { afterAll, describe, expect, it } from 'vitest';
import type { TestHub } from './test-kit.js';
import { startTestHub } from './test-kit.js';

// The MCP endpoint's sessions read the hub through the hub's own app, in process (no socket):
// a live stream its reader aborts must end in the hub at once. Found open until the next change
// the stream could see, one subscribe and unsubscribe after another filled the token's stream
// limit (100) with streams nobody read.

let hub: TestHub;
afterAll(() => hub?.close());

describe('an in-process live stream', () => {
  it('ends in the hub as soon as its reader aborts, with nothing written meanwhile', async () => {
    hub = await startTestHub();
    const { app, services } = hub.running.hub;
    const inProcess = createClient({
      url: 'http://ctxbus.internal',
      token: hub.token,
      retries: 0,
      fetch: (input, init) =>
        Promise.resolve(app.request(input instanceof Request ? input : String(input), init)),
    });
    const open = () => services.feed.subscriberCount;
    const before = open();
    // More rounds than the per-token limit: a leak would refuse the last ones.
    for (let round = 0; round < 120; round++) {
      const reader = new AbortController();
      let live: () => void = () => {};
      const ready = new Promise<void>((resolve) => {
        live = resolve;
      });
      const reading = (async () => {
        for await (const _ of inProcess.stream({ signal: reader.signal, onReady: () => live() })) {
          // nothing is written: no event comes
        }
      })();
      await ready;
      expect(open()).toBe(before + 1);
      reader.abort();
      await reading;
      await waitUntil(() => open() === before, `round ${round}: the hub to end the stream`);
    }
  });
});
