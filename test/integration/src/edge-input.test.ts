import type { HubProcess } from '@ctxbus/test-kit';
import { call, openStream, removeDir, runtimeToken, startHubProcess } from '@ctxbus/test-kit';
import { storeUrl, withPostgres } from '@ctxbus/test-kit/postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Edge input from the hardening review, on both stores: each was a 500, or a different answer
// on each backend. Every case must be the same clear 4xx (or the same 2xx) on both.

/** `{"a":{"a":...}}` nested `depth` levels deep, as JSON text. */
function nested(depth: number): string {
  return `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
}

function defineEdgeInput(name: string, start: () => Promise<HubProcess>) {
  describe(`edge input (${name})`, () => {
    let hub: HubProcess;
    let token: string;

    beforeAll(async () => {
      hub = await start();
      token = await runtimeToken(hub, 'acme', 'claude-code');
    });

    afterAll(async () => {
      expect(await hub.stop()).toBe(0);
      if (hub.dataDir) removeDir(hub.dataDir);
    });

    it('refuses runtimes named after Object.prototype members with unknown_runtime', async () => {
      for (const runtime of ['constructor', 'tostring', 'hasownproperty', 'valueof']) {
        const response = await call(hub.url, 'GET', `/api/context/shared?runtime=${runtime}`, {
          token,
        });
        expect(response.status, runtime).toBe(422);
        expect(response.body.error.code).toBe('unknown_runtime');
      }
    });

    it('refuses runtimeOptions nested 10,000 levels deep, and keeps serving', async () => {
      const body = `{"type":"status","title":"deep","runtimeOptions":{"web":${nested(10_000)}}}`;
      const response = await fetch(`${hub.url}/api/context`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body,
      });
      expect(response.status).toBe(400);
      const error = ((await response.json()) as { error: { code: string; message: string } }).error;
      expect(error.code).toBe('validation_failed');
      expect(error.message).toMatch(/nested deeper than 32 levels/);
      // 32 levels are fine.
      const shallow = `{"type":"status","title":"ok","runtimeOptions":{"web":${nested(30)}}}`;
      const accepted = await fetch(`${hub.url}/api/context`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: shallow,
      });
      expect(accepted.status).toBe(201);
    });

    it('refuses a search or a read with too many tags (at most 64)', async () => {
      const tags = Array.from({ length: 33_000 }, (_, index) => `t${index}`);
      const search = await call(hub.url, 'POST', '/api/context/search', {
        token,
        body: { query: 'anything', tags },
      });
      expect(search.status).toBe(400);
      expect(search.body.error.code).toBe('validation_failed');
      expect(search.body.error.message).toMatch(/tags/);
      const read = await call(hub.url, 'GET', `/api/context?tags=${tags.slice(0, 65).join(',')}`, {
        token,
      });
      expect(read.status).toBe(400);
      expect(read.body.error.message).toMatch(/at most 64 tags/);
      const fine = await call(hub.url, 'POST', '/api/context/search', {
        token,
        body: { query: 'anything', tags: tags.slice(0, 64) },
      });
      expect(fine.status).toBe(200);
    });

    it('stores lone surrogates as U+FFFD, the same in the write, the stream and the read', async () => {
      const stream = openStream(hub.url, token);
      await stream.ready;
      const written = await call(hub.url, 'POST', '/api/context', {
        token,
        body: {
          type: 'status',
          title: 'half \ud83d pair',
          content: 'low \udc00 alone',
          runtimeOptions: { web: { 'key\ud800': 'v\udfff' } },
        },
      });
      expect(written.status).toBe(201);
      const item = written.body.items[0];
      expect(item.title).toBe('half \ufffd pair');
      expect(item.content).toBe('low \ufffd alone');
      expect(item.runtimeOptions).toEqual({ web: { 'key\ufffd': 'v\ufffd' } });
      await stream.waitFor(() => stream.items().length >= 1);
      expect(stream.items()[0]?.item).toEqual(item);
      stream.close();
      const read = await call(hub.url, 'GET', `/api/context/${item.id}`, { token });
      expect(read.body.item).toEqual(item);
    });

    it('never passes the 100-subscriptions-per-runtime limit, however many creates race', async () => {
      const racer = await runtimeToken(hub, 'racing', 'web');
      const responses = await Promise.all(
        Array.from({ length: 150 }, () =>
          call(hub.url, 'POST', '/api/subscriptions', { token: racer, body: { delivery: 'pull' } }),
        ),
      );
      const statuses = responses.map((response) => response.status);
      expect(statuses.filter((status) => status === 201)).toHaveLength(100);
      expect(statuses.filter((status) => status === 400)).toHaveLength(50);
      const refused = responses.find((response) => response.status === 400);
      expect(refused?.body.error.message).toMatch(/at most 100 subscriptions/);
      const listed = await call(hub.url, 'GET', '/api/subscriptions', { token: racer });
      expect(listed.body.subscriptions).toHaveLength(100);
    });

    it('refuses sequence numbers beyond 2^53 - 1 with a 400, in since and Last-Event-ID', async () => {
      for (const value of ['9223372036854775807', '9223372036854775808', '9007199254740992']) {
        const list = await call(hub.url, 'GET', `/api/context?since=${value}`, { token });
        expect(list.status, `list since=${value}`).toBe(400);
        expect(list.body.error.code).toBe('validation_failed');
        const since = openStream(hub.url, token, { query: `since=${value}` });
        expect(await since.status, `stream since=${value}`).toBe(400);
        const header = openStream(hub.url, token, { lastEventId: value });
        expect(await header.status, `Last-Event-ID ${value}`).toBe(400);
      }
      // The largest safe sequence is accepted (and simply has nothing after it yet).
      const edge = String(Number.MAX_SAFE_INTEGER);
      const list = await call(hub.url, 'GET', `/api/context?since=${edge}`, { token });
      expect(list.status).toBe(200);
      expect(list.body.items).toEqual([]);
      const stream = openStream(hub.url, token, { lastEventId: edge });
      await stream.ready;
      stream.close();
    });
  });
}

defineEdgeInput('embedded store', () => startHubProcess());

await withPostgres('edge input on PostgreSQL', (url, schemas) => {
  defineEdgeInput('PostgreSQL', () =>
    startHubProcess({ store: storeUrl(url, schemas.next('edge')) }),
  );
});
