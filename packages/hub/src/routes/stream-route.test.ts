import { get } from 'node:http';
import type { Store } from '@ctxbus/store';
import { openSqliteStore } from '@ctxbus/store';
import { waitUntil } from '@ctxbus/test-kit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mintToken } from '../auth.js';
import type { Hub } from '../create-hub.js';
import { createHub } from '../create-hub.js';
import type { RunningHub } from '../start-hub.js';
import { startHub } from '../start-hub.js';

let store: Store;
let token: string;

beforeEach(async () => {
  store = openSqliteStore({ path: ':memory:' });
  token = (await mintToken(store, { role: 'runtime', teamId: 'team', runtime: 'web' })).token;
});

afterEach(async () => {
  await store.close();
});

async function write(app: Hub['app'], title: string, content = ''): Promise<number> {
  const response = await app.request('/api/context', {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'status', title, content }),
  });
  expect(response.status).toBe(201);
  return ((await response.json()) as { results: { seq: number }[] }).results[0]?.seq ?? -1;
}

/** SSE events parsed from text: [event, id, data] per event. */
function parseEvents(text: string): { event: string; id?: string; data: string }[] {
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '' && !block.startsWith(':'))
    .map((block) => {
      const fields = Object.fromEntries(
        block
          .split('\n')
          .map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 2)]),
      );
      return {
        event: fields.event ?? '',
        data: fields.data ?? '',
        ...(fields.id && { id: fields.id }),
      };
    });
}

describe('GET /api/stream in process (app.request, as the MCP endpoint calls it)', () => {
  let hub: Hub;
  beforeEach(async () => {
    hub = await createHub({ store });
  });
  afterEach(async () => {
    await hub.close();
  });

  it('streams ready, then each change, and unsubscribes when the reader cancels', async () => {
    const response = await hub.app.request('/api/stream', {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = '';
    const readUntil = async (needle: string) => {
      while (!text.includes(needle)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`stream ended before ${needle}`);
        text += decoder.decode(value, { stream: true });
      }
    };
    await readUntil('event: ready');
    expect(hub.services.feed.subscriberCount).toBe(1);
    const seq = await write(hub.app, 'in process');
    await readUntil('"in process"');
    await readUntil(`id: ${seq}\n\n`);
    const events = parseEvents(text);
    expect(events.map((event) => event.event)).toEqual(['ready', 'context-added']);
    expect(events[1]).toMatchObject({ id: String(seq) });
    expect(JSON.parse(events[1]?.data ?? '')).toMatchObject({
      seq,
      event: 'context-added',
      item: { title: 'in process' },
    });
    await reader.cancel();
    await waitUntil(() => hub.services.feed.subscriberCount === 0, 'the subscriber to close');
  });

  it('gives its ready event the id it starts after, so an EventSource cut before any change resumes with no gap', async () => {
    // An EventSource sends back the last id it saw as Last-Event-ID: here, the ready event's.
    const open = (headers: Record<string, string> = {}) =>
      hub.app.request('/api/stream', { headers: { authorization: `Bearer ${token}`, ...headers } });
    const readFrom = async (response: Response, needle: string) => {
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      const decoder = new TextDecoder();
      let text = '';
      while (!text.includes(needle)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`stream ended before ${needle}`);
        text += decoder.decode(value, { stream: true });
      }
      await reader.cancel();
      return parseEvents(text);
    };
    await write(hub.app, 'before the stream');
    const [ready] = await readFrom(await open(), 'retry: 1000\n\n');
    const { afterSeq } = JSON.parse(ready?.data ?? '{}') as { afterSeq: number };
    expect(ready).toMatchObject({ event: 'ready', id: String(afterSeq) });
    const missed = await write(hub.app, 'written while cut off');
    const resumed = await readFrom(
      await open({ 'last-event-id': ready?.id ?? '' }),
      '"written while cut off"',
    );
    expect(resumed.find((event) => event.event === 'context-added')).toMatchObject({
      id: String(missed),
    });
  });
});

describe('GET /api/stream over Node HTTP', () => {
  let running: RunningHub;
  beforeEach(async () => {
    // A byte bound above the ~12 MB the slow reader below falls behind by: this test is about
    // drain (the stalled-reader cut-off is tested in test/integration/src/stream-abuse.test.ts).
    running = await startHub({ store, port: 0, maxStreamPendingBytes: 32 * 1024 * 1024 });
  });
  afterEach(async () => {
    await running.close();
  });

  it('holds a slow reader without losing or reordering events, and unsubscribes on disconnect', async () => {
    let text = '';
    let paused = true;
    const request = get(`${running.url}/api/stream`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const response = await new Promise<import('node:http').IncomingMessage>((resolve) =>
      request.once('response', resolve),
    );
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('text/event-stream');
    response.setEncoding('utf8');
    response.on('data', (chunk: string) => {
      text += chunk;
      // After the ready event, read nothing more until every write is done.
      if (paused && text.includes('event: ready')) response.pause();
    });
    await waitUntil(() => text.includes('event: ready'), 'the ready event');
    // ~12 MB of events: far more than the socket buffers, so the hub must wait for drain.
    const content = 'x'.repeat(60_000);
    const seqs: number[] = [];
    for (let index = 0; index < 200; index++) {
      seqs.push(await write(running.hub.app, `slow ${index}`, content));
    }
    paused = false;
    response.resume();
    await waitUntil(() => text.includes(`id: ${seqs.at(-1)}\n\n`), 'the last event');
    const added = parseEvents(text).filter((event) => event.event === 'context-added');
    expect(added.map((event) => Number(event.id))).toEqual(seqs);
    expect(added.map((event) => JSON.parse(event.data).item.title)).toEqual(
      seqs.map((_, index) => `slow ${index}`),
    );
    expect(running.hub.services.feed.subscriberCount).toBe(1);
    request.destroy();
    await waitUntil(
      () => running.hub.services.feed.subscriberCount === 0,
      'the subscriber to close',
    );
    // 200 writes of 60 KB and their drain take ~4 s on an idle 2-core machine: room for a busy one.
  });
});
