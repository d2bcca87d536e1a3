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

describe('what the hub logs of a request that failed', () => {
  /** A logger that keeps what each level was given. */
  function recordingLogger() {
    const lines: { level: string; object: Record<string, unknown>; message?: string }[] = [];
    const at =
      (level: string) =>
      (object: object, message?: string): void => {
        lines.push({ level, object: object as Record<string, unknown>, message });
      };
    return {
      lines,
      logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') },
    };
  }

  it('keeps stacks for its own faults: a refusal any client can ask for is one warning, a client hanging up mid-body one info line', async () => {
    const recorded = recordingLogger();
    const logged = await createHub({ store, logger: recorded.logger });
    try {
      // No public URL, and a Host that is not loopback: 503, the hub's meant answer.
      const card = await logged.app.request('http://evil.example/.well-known/agent-card.json');
      expect(card.status).toBe(503);
      const minted = await mintToken(store, { role: 'runtime', teamId: 'acme', runtime: 'web' });
      const cut = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode('{"type":"status","ti'));
          controller.error(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }));
        },
      });
      const aborted = await logged.app.request('/api/context', {
        method: 'POST',
        headers: { authorization: `Bearer ${minted.token}`, 'content-type': 'application/json' },
        body: cut,
        duplex: 'half',
      } as RequestInit);
      expect(aborted.status).toBe(400);
      expect(recorded.lines.filter((line) => line.level === 'error')).toEqual([]);
      expect(recorded.lines.map((line) => [line.level, line.message])).toEqual(
        expect.arrayContaining([
          ['warn', expect.stringMatching(/no public URL/)],
          ['info', 'the client closed the connection mid-request'],
        ]),
      );
      expect(recorded.lines.some((line) => 'err' in line.object)).toBe(false);
    } finally {
      await logged.close();
    }
  });
});
