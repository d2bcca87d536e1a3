import type { TestHub } from '@ctxbus/test-kit';
import { call, openStream, runtimeToken } from '@ctxbus/test-kit';
import { storeUrl, withPostgres } from '@ctxbus/test-kit/postgres';
import { describe, expect, it } from 'vitest';
import { startInProcessServe, useInProcessHub } from './in-process-serve.ts';

// Edge input from the hardening review, on both stores: each was a 500, or a different answer
// on each backend. Every case must be the same clear 4xx (or the same 2xx) on both.

/** `{"a":{"a":...}}` nested `depth` levels deep, as JSON text. */
function nested(depth: number): string {
  return `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
}

function defineEdgeInput(name: string, start: () => Promise<TestHub>) {
  describe(`edge input (${name})`, () => {
    const hub = useInProcessHub({ start, tokens: { token: ['acme', 'claude-code'] } });

    it('formats for runtimes named after Object.prototype members with the default resolver', async () => {
      for (const runtime of ['constructor', 'tostring', 'hasownproperty', 'valueof']) {
        const response = await call(hub.url, 'GET', `/api/context/shared?runtime=${runtime}`, {
          token: hub.tokens.token,
        });
        expect(response.status, runtime).toBe(200);
        expect(response.body).toMatchObject({ runtime, format: 'markdown' });
      }
    });

    it('refuses runtimeOptions nested 10,000 levels deep, and keeps serving', async () => {
      const body = `{"type":"status","title":"deep","runtimeOptions":{"web":${nested(10_000)}}}`;
      const response = await fetch(`${hub.url}/api/context`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${hub.tokens.token}`,
          'content-type': 'application/json',
        },
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
        headers: {
          authorization: `Bearer ${hub.tokens.token}`,
          'content-type': 'application/json',
        },
        body: shallow,
      });
      expect(accepted.status).toBe(201);
    });

    it('refuses a search or a read with too many tags (at most 64)', async () => {
      const tags = Array.from({ length: 33_000 }, (_, index) => `t${index}`);
      const search = await call(hub.url, 'POST', '/api/context/search', {
        token: hub.tokens.token,
        body: { query: 'anything', tags },
      });
      expect(search.status).toBe(400);
      expect(search.body.error.code).toBe('validation_failed');
      expect(search.body.error.message).toMatch(/tags/);
      const read = await call(hub.url, 'GET', `/api/context?tags=${tags.slice(0, 65).join(',')}`, {
        token: hub.tokens.token,
      });
      expect(read.status).toBe(400);
      expect(read.body.error.message).toMatch(/at most 64 tags/);
      const fine = await call(hub.url, 'POST', '/api/context/search', {
        token: hub.tokens.token,
        body: { query: 'anything', tags: tags.slice(0, 64) },
      });
      expect(fine.status).toBe(200);
    });

    it('stores lone surrogates as U+FFFD, the same in the write, the stream and the read', async () => {
      const stream = openStream(hub.url, hub.tokens.token);
      await stream.ready;
      const written = await call(hub.url, 'POST', '/api/context', {
        token: hub.tokens.token,
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
      const read = await call(hub.url, 'GET', `/api/context/${item.id}`, {
        token: hub.tokens.token,
      });
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
        const list = await call(hub.url, 'GET', `/api/context?since=${value}`, {
          token: hub.tokens.token,
        });
        expect(list.status, `list since=${value}`).toBe(400);
        expect(list.body.error.code).toBe('validation_failed');
        const since = openStream(hub.url, hub.tokens.token, { query: `since=${value}` });
        expect(await since.status, `stream since=${value}`).toBe(400);
        const header = openStream(hub.url, hub.tokens.token, { lastEventId: value });
        expect(await header.status, `Last-Event-ID ${value}`).toBe(400);
      }
      // The largest safe sequence is a valid query (a list simply has nothing after it yet);
      // a stream resumed there would skip every change until the hub's sequence got there
      // without a word, so a resume point past the newest change is refused.
      const edge = String(Number.MAX_SAFE_INTEGER);
      const list = await call(hub.url, 'GET', `/api/context?since=${edge}`, {
        token: hub.tokens.token,
      });
      expect(list.status).toBe(200);
      expect(list.body.items).toEqual([]);
      const stream = openStream(hub.url, hub.tokens.token, { lastEventId: edge });
      expect(await stream.status).toBe(400);
      const fromQuery = openStream(hub.url, hub.tokens.token, { query: `since=${edge}` });
      expect(await fromQuery.status).toBe(400);
    });

    it('refuses to resume a stream past the newest change; at the newest, it delivers what comes next', async () => {
      const written = await call(hub.url, 'POST', '/api/context', {
        token: hub.tokens.token,
        body: { type: 'status', title: 'the newest so far' },
      });
      const newest = written.body.items[0].seq as number;
      const ahead = await call(hub.url, 'GET', `/api/stream?since=${newest + 1000}`, {
        token: hub.tokens.token,
      });
      expect(ahead.status).toBe(400);
      expect(ahead.body.error.details).toMatchObject({ reason: 'beyond_newest' });
      expect(ahead.body.error.message).toMatch(/beyond the newest change/);
      const header = openStream(hub.url, hub.tokens.token, { lastEventId: String(newest + 1) });
      expect(await header.status).toBe(400);
      const atNewest = openStream(hub.url, hub.tokens.token, { lastEventId: String(newest) });
      await atNewest.ready;
      atNewest.close();
    });

    it('reads a sequence only as digits, in since and Last-Event-ID alike', async () => {
      // Number() would take these (1000, 16, 0, 0); a sequence is digits, as in the list's since.
      for (const value of ['1e3', '0x10', '', '-0', '+1', '1.0']) {
        const since = openStream(hub.url, hub.tokens.token, {
          query: `since=${encodeURIComponent(value)}`,
        });
        expect(await since.status, `stream since=${value}`).toBe(400);
        if (value === '') continue; // an empty Last-Event-ID is no Last-Event-ID
        const header = openStream(hub.url, hub.tokens.token, { lastEventId: value });
        expect(await header.status, `Last-Event-ID ${value}`).toBe(400);
      }
    });

    it('refuses a since date-time before year 1 (no store can compare it) with a 400', async () => {
      for (const value of ['0000-01-01T00:00:00Z', '0001-01-01T00:30:00+01:00']) {
        const list = await call(hub.url, 'GET', `/api/context?since=${encodeURIComponent(value)}`, {
          token: hub.tokens.token,
        });
        expect(list.status, value).toBe(400);
        expect(list.body.error.message).toMatch(/before 0001-01-01/);
      }
      const first = await call(hub.url, 'GET', '/api/context?since=0001-01-01T00:00:00Z', {
        token: hub.tokens.token,
      });
      expect(first.status).toBe(200);
    });

    it('refuses a since date that is no calendar day (Date.parse rolls it over) with a 400', async () => {
      const days: [string, number][] = [
        ['2026-11-31T20:48:00Z', 400],
        ['2026-02-29T00:00:00Z', 400],
        ['2026-04-31T08:00:00Z', 400],
        ['2026-00-10T00:00:00Z', 400],
        ['2024-02-29T00:00:00Z', 200],
        ['2026-11-30T23:59:59-05:00', 200],
        ['2026-12-31T00:00:00Z', 200],
        // A plain date is its midnight UTC, and checked the same way.
        ['2026-12-01', 200],
        ['2026-02-29', 400],
      ];
      for (const [value, status] of days) {
        const list = await call(hub.url, 'GET', `/api/context?since=${encodeURIComponent(value)}`, {
          token: hub.tokens.token,
        });
        expect(list.status, value).toBe(status);
        if (status === 400) expect(list.body.error.message).toMatch(/is not a valid date-time/);
      }
      // A plain date reads from its midnight UTC: an item written now is after today's, not
      // after tomorrow's.
      const written = await call(hub.url, 'POST', '/api/context', {
        token: hub.tokens.token,
        body: { type: 'status', title: 'written for the plain-date since' },
      });
      expect(written.status).toBe(201);
      const day = (offset: number) =>
        new Date(Date.parse(written.body.items[0].createdAt) + offset).toISOString().slice(0, 10);
      const ids = async (since: string) => {
        const list = await call(hub.url, 'GET', `/api/context?since=${since}&limit=500`, {
          token: hub.tokens.token,
        });
        return (list.body.items as { id: string }[]).map((item) => item.id);
      };
      expect(await ids(day(0))).toContain(written.body.items[0].id);
      expect(await ids(day(86_400_000))).not.toContain(written.body.items[0].id);
    });

    it('refuses NUL characters anywhere in a request, filters included, with a 400', async () => {
      const cases = [
        call(hub.url, 'GET', '/api/context?scopeKeyPrefix=a%00', { token: hub.tokens.token }),
        call(hub.url, 'POST', '/api/context/search', {
          token: hub.tokens.token,
          body: { query: 'x\u0000y' },
        }),
        call(hub.url, 'POST', '/api/subscriptions', {
          token: hub.tokens.token,
          body: { delivery: 'pull', label: 'a\u0000', filter: { scopeKey: 'task:\u0000' } },
        }),
        call(hub.url, 'POST', '/api/admin/tokens', {
          token: hub.adminToken,
          body: { teamId: 'acme', runtime: 'web', label: 'nul \u0000' },
        }),
        call(hub.url, 'POST', '/api/context', {
          token: hub.tokens.token,
          body: { type: 'status', title: 'x', runtimeOptions: { web: { 'k\u0000': 1 } } },
        }),
      ];
      for (const response of await Promise.all(cases)) {
        expect(response.status, JSON.stringify(response.body)).toBe(400);
        expect(response.body.error.code).toBe('validation_failed');
        expect(response.body.error.message).toMatch(/must not contain NUL characters/);
      }
    });

    it('lets another team use an id this team holds: its own item, and nothing of ours', async () => {
      const rival = await runtimeToken(hub, 'rival', 'claude-code');
      const ours = await call(hub.url, 'POST', '/api/context', {
        token: hub.tokens.token,
        body: { type: 'decision', title: 'ours', visibility: 'team' },
      });
      expect(ours.status).toBe(201);
      const id = ours.body.items[0].id as string;
      const ourStream = openStream(hub.url, hub.tokens.token, {
        lastEventId: String(ours.body.items[0].seq),
      });
      await ourStream.ready;
      // 201, exactly as for an id nobody has: the write says nothing of acme's item.
      const theirs = await call(hub.url, 'POST', '/api/context', {
        token: rival,
        body: { id, type: 'decision', title: 'theirs' },
      });
      expect(theirs.status).toBe(201);
      expect(theirs.body.items[0]).toMatchObject({ id, teamId: 'rival', title: 'theirs' });
      expect(theirs.body.results[0].status).toBe('created');
      // Within a team, the id is still the team's own: a retry is the same item, a change a 409.
      const retried = await call(hub.url, 'POST', '/api/context', {
        token: rival,
        body: { id, type: 'decision', title: 'theirs' },
      });
      expect(retried.body.results[0]).toMatchObject({ status: 'existing' });
      const changed = await call(hub.url, 'POST', '/api/context', {
        token: rival,
        body: { id, type: 'decision', title: 'theirs, changed' },
      });
      expect(changed.status).toBe(409);
      const mine = await call(hub.url, 'POST', '/api/context', {
        token: hub.tokens.token,
        body: { id, type: 'decision', title: 'ours, changed' },
      });
      expect(mine.status).toBe(409);
      // Each team reads, supersedes and consumes its own item under the id.
      const successor = await call(hub.url, 'POST', '/api/context', {
        token: rival,
        body: { type: 'decision', title: 'their successor', supersedes: id },
      });
      expect(successor.status).toBe(201);
      const consumed = await call(hub.url, 'POST', `/api/context/${id}/consume`, { token: rival });
      expect(consumed.body.item).toMatchObject({ teamId: 'rival', consumed: true });
      const ourRead = await call(hub.url, 'GET', `/api/context/${id}`, { token: hub.tokens.token });
      expect(ourRead.body.item).toEqual(ours.body.items[0]);
      const theirRead = await call(hub.url, 'GET', `/api/context/${id}`, { token: rival });
      expect(theirRead.body.item).toMatchObject({
        teamId: 'rival',
        title: 'theirs',
        supersededBy: successor.body.items[0].id,
        consumed: true,
      });
      // Our stream carried nothing of theirs (a later write of ours is the next event).
      const later = await call(hub.url, 'POST', '/api/context', {
        token: hub.tokens.token,
        body: { type: 'status', title: 'ours, later' },
      });
      await ourStream.waitFor(() => ourStream.items().length >= 1);
      expect(ourStream.items().map((event) => event.item.id)).toEqual([later.body.items[0].id]);
      ourStream.close();
    });
  });
}

defineEdgeInput('embedded store', () => startInProcessServe());

await withPostgres('edge input on PostgreSQL', (url, schemas) => {
  defineEdgeInput('PostgreSQL', () =>
    startInProcessServe({ store: storeUrl(url, schemas.next('edge')) }),
  );
});
