import type { Server } from 'node:http';
import { CtxbusError, prepareItem } from '@ctxbus/core';
import type { RunningHub } from '@ctxbus/hub';
import { mintToken, startHub } from '@ctxbus/hub';
import type { Store } from '@ctxbus/store';
import type { InProcessHub } from '@ctxbus/test-kit/in-process-hub';
import { startInProcessHub } from '@ctxbus/test-kit/in-process-hub';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from './ctxbus-client.js';
import { verifyWebhook } from './verify-webhook.js';

let hub: InProcessHub<'web', RunningHub>;
let store: Store;
let running: RunningHub;
let token: string;

beforeAll(async () => {
  hub = await startInProcessHub({ startHub, mintToken }, { tokens: { web: ['acme', 'web'] } });
  ({ store, running } = hub);
  token = hub.tokens.web;
});

afterAll(() => hub.close());

describe('subscriptions', () => {
  it('subscribe, pending, ack, list and unsubscribe', async () => {
    const client = createClient({ url: running.url, token });
    const { subscription, secret } = await client.subscribe({
      delivery: 'pull',
      filter: { tags: ['client'] },
    });
    expect(secret).toBeNull();
    await client.write({ type: 'status', title: 'for the puller', relevanceTags: ['client'] });
    const pending = await client.pending(subscription.id);
    expect(pending.changes.map((change) => change.item.title)).toEqual(['for the puller']);
    expect((await client.ack(subscription.id, pending.next)).cursor).toBe(pending.next);
    expect((await client.pending(subscription.id)).changes).toEqual([]);
    expect((await client.subscriptions()).map((s) => s.id)).toContain(subscription.id);
    expect(await client.deadLetters(subscription.id)).toEqual([]);
    await client.unsubscribe(subscription.id);
    await expect(client.subscription(subscription.id)).rejects.toMatchObject({ code: 'not_found' });
  });
});

describe('verifyWebhook', () => {
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  const item = prepareItem(
    { type: 'status', title: 'signed' },
    { teamId: 'acme', runtime: 'web' },
    { now: new Date() },
  );
  const body = JSON.stringify({
    subscriptionId: 'sub_x',
    seq: 1,
    event: 'context-added',
    item: { ...item, seq: 1, consumed: false, consumedBy: [], supersededBy: null },
  });

  async function sign(id: string, timestamp: number, text: string): Promise<string> {
    const key = await crypto.subtle.importKey(
      'raw',
      Buffer.from(secret.slice(6), 'base64'),
      { name: 'HMAC', hash: 'SHA-256' },
      false,
      ['sign'],
    );
    const mac = await crypto.subtle.sign(
      'HMAC',
      key,
      new TextEncoder().encode(`${id}.${timestamp}.${text}`),
    );
    return `v1,${Buffer.from(mac).toString('base64')}`;
  }

  it('accepts a good signature (among several), and rejects tampering, replays and gaps', async () => {
    const now = new Date();
    const timestamp = Math.floor(now.getTime() / 1000);
    const good = await sign('msg_1', timestamp, body);
    const headers = new Headers({
      'webhook-id': 'msg_1',
      'webhook-timestamp': String(timestamp),
      'webhook-signature': `v1,bm9wZQ== ${good}`,
    });
    const payload = await verifyWebhook({ secret, headers, body, now });
    expect(payload.item.title).toBe('signed');
    // Plain objects with any header case work too.
    await expect(
      verifyWebhook({
        secret,
        headers: {
          'Webhook-Id': 'msg_1',
          'Webhook-Timestamp': String(timestamp),
          'Webhook-Signature': good,
        },
        body,
        now,
      }),
    ).resolves.toMatchObject({ seq: 1 });
    const reject = (options: Partial<Parameters<typeof verifyWebhook>[0]>) =>
      expect(verifyWebhook({ secret, headers, body, now, ...options })).rejects.toMatchObject({
        code: 'unauthorized',
      });
    await reject({ body: body.replace('signed', 'forged') });
    await reject({
      headers: new Headers({
        'webhook-id': 'msg_2',
        'webhook-timestamp': String(timestamp),
        'webhook-signature': good,
      }),
    });
    await reject({ now: new Date(now.getTime() + 301_000) });
    await reject({ headers: new Headers({ 'webhook-id': 'msg_1', 'webhook-signature': good }) });
    await reject({ secret: 'not-a-secret' });
  });
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

  it('resumes without loss when the hub ends it as a slow reader', async () => {
    const strict = await startHub({ store, port: 0, maxStreamPendingBytes: 64 * 1024 });
    try {
      const client = createClient({ url: strict.url, token });
      const reconnects: unknown[] = [];
      let readyResolve: () => void = () => {};
      const ready = new Promise<void>((resolve) => {
        readyResolve = resolve;
      });
      const events = client.stream({
        type: 'discovery',
        onReady: () => readyResolve(),
        onReconnect: (error) => reconnects.push(error),
      });
      const content = 'x'.repeat(90_000);
      const write = async (...titles: string[]) => {
        const outcomes = await store.writeItems(
          titles.map((title) =>
            prepareItem(
              { type: 'discovery', title, content },
              { teamId: 'acme', runtime: 'web' },
              { now: new Date() },
            ),
          ),
        );
        strict.hub.services.feed.notify();
        return outcomes.map((outcome) => outcome.item.title);
      };
      const first = events.next();
      await ready;
      const titles = await write('big 0');
      expect((await first).value?.item.title).toBe('big 0');
      // The consumer takes nothing more while the writes pile up past the bound (ten items of
      // 90 KB a commit, until the socket buffers are full and the hub holds the rest).
      while (strict.hub.services.feed.ended.slow_reader === 0) {
        if (titles.length > 1_000) throw new Error('the hub never ended the stalled reader');
        const next = titles.length;
        titles.push(...(await write(...Array.from({ length: 10 }, (_, i) => `big ${next + i}`))));
      }
      const received = ['big 0'];
      while (received.length < titles.length) {
        const next = await events.next();
        received.push(next.value?.item.title ?? '');
      }
      await events.return(undefined);
      expect(received).toEqual(titles);
      expect(reconnects).toHaveLength(1);
      expect((reconnects[0] as Error).message).toMatch(/the hub ended the stream/);
    } finally {
      await strict.close();
    }
  });

  it('stops with unauthorized when its token is revoked', async () => {
    const minted = await mintToken(store, { role: 'runtime', teamId: 'acme', runtime: 'doomed' });
    const client = createClient({ url: running.url, token: minted.token });
    let readyResolve: () => void = () => {};
    const ready = new Promise<void>((resolve) => {
      readyResolve = resolve;
    });
    const consumer = (async () => {
      for await (const _event of client.stream({ onReady: () => readyResolve() })) {
        // nothing is written
      }
    })();
    await ready;
    await store.revokeToken(minted.record.id);
    running.hub.services.verifier.forget(minted.record.id);
    running.hub.services.feed.endToken(minted.record.id);
    await expect(consumer).rejects.toMatchObject({ code: 'unauthorized' });
  });
});
