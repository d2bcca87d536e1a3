import type { Server } from 'node:http';
import { CtxbusError, prepareItem } from '@ctxbus/core';
import type { RunningHub } from '@ctxbus/hub';
import { mintToken, startHub } from '@ctxbus/hub';
import type { Store } from '@ctxbus/store';
import { openSqliteStore } from '@ctxbus/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from './ctxbus-client.js';

let store: Store;
let running: RunningHub;
let token: string;

beforeAll(async () => {
  store = openSqliteStore({ path: ':memory:' });
  running = await startHub({ store, port: 0, validateResponses: true });
  token = (await mintToken(store, { role: 'runtime', teamId: 'acme', runtime: 'web' })).token;
});

afterAll(async () => {
  await running.close();
  await store.close();
});

describe('createClient', () => {
  it('names the flag and the variable of a missing setting', () => {
    expect(() => createClient({ token: 'x', url: undefined })).toThrow(
      /pass --url or set CTXBUS_URL/,
    );
    expect(() => createClient({ url: 'http://x' })).toThrow(/pass --token or set CTXBUS_TOKEN/);
  });

  it('round-trips writes, reads, search and the shared bundle', async () => {
    const client = createClient({ url: running.url, token });
    const written = await client.write({ type: 'decision', title: 'Typed clients are nice' });
    const id = written.items[0]?.id ?? '';
    expect((await client.get(id)).title).toBe('Typed clients are nice');
    expect((await client.list({ type: 'decision' })).items).toHaveLength(1);
    expect((await client.search({ query: 'typed clients' })).results[0]?.item.id).toBe(id);
    expect((await client.shared()).format).toBe('markdown');
    expect((await client.consume(id)).consumed).toBe(true);
  });

  it('turns hub errors into CtxbusErrors with the hub code', async () => {
    const client = createClient({ url: running.url, token: 'cbx_wrong' });
    const error = await client.list().catch((caught: unknown) => caught);
    expect(CtxbusError.isInstance(error) && error.code).toBe('unauthorized');
    const good = createClient({ url: running.url, token });
    const missing = await good
      .get('019a0000-0000-7000-8000-00000000abcd')
      .catch((caught: unknown) => caught);
    expect(CtxbusError.isInstance(missing) && missing.code).toBe('not_found');
  });

  it('reports an unreachable hub as unavailable', async () => {
    const client = createClient({ url: 'http://127.0.0.1:9', token, retries: 0 });
    const error = await client.health().catch((caught: unknown) => caught);
    expect(CtxbusError.isInstance(error) && error.code).toBe('unavailable');
    expect((error as Error).message).toMatch(
      /cannot reach the ctxbus hub at http:\/\/127\.0\.0\.1:9/,
    );
  });

  it('reconnects a dropped stream and resumes without gaps or repeats', async () => {
    const client = createClient({ url: running.url, token });
    const controller = new AbortController();
    const titles: string[] = [];
    let reconnects = 0;
    let readyResolve: () => void = () => {};
    let ready = new Promise<void>((resolve) => {
      readyResolve = resolve;
    });
    const consumer = (async () => {
      for await (const event of client.stream({
        signal: controller.signal,
        type: 'status',
        onReady: () => readyResolve(),
        onReconnect: () => {
          reconnects += 1;
        },
      })) {
        titles.push(event.item.title);
        if (titles.length === 4) controller.abort();
      }
    })();
    const write = (title: string) =>
      store
        .writeItems([
          prepareItem(
            { type: 'status', title },
            { teamId: 'acme', runtime: 'web' },
            { now: new Date() },
          ),
        ])
        .then(() => running.hub.services.feed.notify());
    await ready;
    await write('s1');
    await expect.poll(() => titles.length).toBe(1);
    ready = new Promise<void>((resolve) => {
      readyResolve = resolve;
    });
    // Drop every connection: the client must come back with Last-Event-ID.
    (running.server as Server).closeAllConnections();
    await write('s2');
    await write('s3');
    await ready;
    await write('s4');
    await consumer;
    expect(titles).toEqual(['s1', 's2', 's3', 's4']);
    expect(reconnects).toBeGreaterThanOrEqual(1);
  });
});
