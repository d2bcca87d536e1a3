import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Store } from '@ctxbus/store';
import { openSqliteStore } from '@ctxbus/store';
import { openPostgresStore } from '@ctxbus/store/postgres';
import { call } from '@ctxbus/test-kit';
import { withPostgres } from '@ctxbus/test-kit/postgres';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mintToken } from '../auth.js';
import type { RunningHub } from '../start-hub.js';
import { startHub } from '../start-hub.js';

// Context analytics over real HTTP, on SQLite and PostgreSQL (issue 27, part 13; seed 000,
// phase 3: "Context analytics (what context is used, what's stale)"). What the hub served is
// what it counts: the items of each bundle it served a runtime for itself (not a preview), each
// consumption, each search result; per runtime and per day, on the hub's clock, turned here.

const DAY_MS = 86_400_000;
const START = Date.parse('2026-11-02T09:00:00.000Z');

interface Backend {
  open(): Promise<Store>;
  dispose(): void;
}

function analyticsCases(name: string, backend: () => Backend) {
  describe(`GET /api/analytics on ${name}`, () => {
    let now: number;
    let store: Store;
    let running: RunningHub;
    let disposable: Backend;
    const tokens: Record<string, string> = {};

    beforeEach(async () => {
      now = START;
      disposable = backend();
      store = await disposable.open();
      // Flushes only on demand (an analytics read, close): nothing depends on a timer.
      running = await startHub({
        store,
        port: 0,
        clock: () => new Date(now),
        validateResponses: true,
        usage: { flushIntervalMs: 0 },
      });
      for (const [key, teamId, runtime] of [
        ['code', 'acme', 'claude-code'],
        ['claw', 'acme', 'openclaw'],
        ['other', 'globex', 'claude-code'],
      ] as const) {
        tokens[key] = (await mintToken(store, { role: 'runtime', teamId, runtime })).token;
      }
      tokens.admin = (await mintToken(store, { role: 'admin', teamId: null, runtime: null })).token;
    });
    afterEach(async () => {
      await running.close();
      await store.close();
      disposable.dispose();
    });

    const api = (token: string, method: string, path: string, body?: unknown) =>
      call(running.url, method, path, { token, ...(body !== undefined && { body }) });
    const write = async (token: string, input: Record<string, unknown>) => {
      const response = await api(token, 'POST', '/api/context', input);
      expect(response.status, JSON.stringify(response.body)).toBe(201);
      return response.body.items[0] as { id: string; title: string };
    };
    const analytics = async (token: string, query = '') => {
      const response = await api(token, 'GET', `/api/analytics${query}`);
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      return response.body;
    };
    const bundleIds = (bundle: any): string[] =>
      [...bundle.identity.entries, ...bundle.sections.flatMap((section: any) => section.entries)]
        .flatMap((entry: any) => entry.refs.map((ref: any) => ref.id))
        .filter((id: string, index: number, all: string[]) => all.indexOf(id) === index);
    const ids = (list: { item: { id: string } }[]) => list.map((entry) => entry.item.id);

    it("seed 000: what context is used (injected, consumed, searched) and what's stale, per runtime and per day", async () => {
      const decision = await write(tokens.code as string, {
        type: 'decision',
        title: 'Queue on PostgreSQL',
        summary: 'We keep the queue in PostgreSQL.',
      });
      const finding = await write(tokens.claw as string, {
        type: 'discovery',
        title: 'Telegram rate limit is 30 messages a second',
      });
      // What Claude Code injects at session start: its own bundle.
      const served = await api(tokens.code as string, 'GET', '/api/context/shared');
      const injected = bundleIds(served.body);
      expect(injected).toContain(decision.id);
      // Looks that are not injections: a preview, and a bundle for another runtime.
      await api(tokens.claw as string, 'GET', '/api/context/shared?preview=true');
      await api(tokens.code as string, 'GET', '/api/context/shared?runtime=openclaw');
      // OpenClaw finds the decision, then acts on it.
      const found = await api(tokens.claw as string, 'POST', '/api/context/search', {
        query: 'queue postgresql',
      });
      expect(found.body.results.map((result: any) => result.item.id)).toEqual([decision.id]);
      expect(
        (await api(tokens.claw as string, 'POST', `/api/context/${decision.id}/consume`)).status,
      ).toBe(200);
      // Written after every use: never used by anyone.
      const unread = await write(tokens.claw as string, { type: 'alert', title: 'Disk at 91%' });

      const report = await analytics(tokens.code as string);
      expect(report.window).toEqual({ days: 7, from: '2026-10-27', to: '2026-11-02' });
      expect(report.runtimes).toEqual([
        {
          runtime: 'claude-code',
          items: injected.length,
          injected: injected.length,
          consumed: 0,
          searched: 0,
        },
        { runtime: 'openclaw', items: 1, injected: 0, consumed: 1, searched: 1 },
      ]);
      expect(report.totals).toEqual({ injected: injected.length, consumed: 1, searched: 1 });
      expect(report.daily).toHaveLength(7);
      expect(report.daily.slice(0, 6).every((day: any) => day.runtimes.length === 0)).toBe(true);
      expect(report.daily[6]).toMatchObject({ day: '2026-11-02', consumed: 1, searched: 1 });
      expect(report.topItems[0]).toMatchObject({
        item: {
          id: decision.id,
          type: 'decision',
          sourceRuntime: 'claude-code',
          superseded: false,
        },
        injected: 1,
        consumed: 1,
        searched: 1,
        runtimes: ['claude-code', 'openclaw'],
        lastUsedAt: new Date(START).toISOString(),
      });
      const neverUsed = ids(report.neverUsed.items);
      expect(neverUsed).toContain(unread.id);
      expect(neverUsed).not.toContain(decision.id);
      expect(neverUsed.includes(finding.id)).toBe(!injected.includes(finding.id));
      expect(report.stale).toEqual({ total: 0, items: [] });
      expect(report.staleRule.days).toBe(14);

      // Per runtime: what OpenClaw never used includes what only Claude Code was injected.
      const claw = await analytics(tokens.claw as string, '?runtime=openclaw');
      expect(claw.runtime).toBe('openclaw');
      expect(claw.runtimes.map((row: any) => row.runtime)).toEqual(['openclaw']);
      expect(ids(claw.neverUsed.items)).not.toContain(decision.id);
      if (injected.includes(finding.id)) expect(ids(claw.neverUsed.items)).toContain(finding.id);

      // Twenty days on, Claude Code looks the decision up again; nothing else was used since.
      now += 20 * DAY_MS;
      await api(tokens.code as string, 'POST', '/api/context/search', {
        query: 'queue postgresql',
      });
      const later = await analytics(tokens.code as string, '?window=30&staleDays=14&limit=50');
      const busyDays = later.daily.filter((day: any) => day.runtimes.length > 0);
      expect(busyDays.map((day: any) => day.day)).toEqual(['2026-11-02', '2026-11-22']);
      expect(busyDays[1]).toMatchObject({ injected: 0, consumed: 0, searched: 1 });
      expect(busyDays[1].runtimes).toEqual([
        { runtime: 'claude-code', injected: 0, consumed: 0, searched: 1 },
      ]);
      expect(ids(later.stale.items).sort()).toEqual([finding.id, unread.id].sort());
      expect(later.stale.total).toBe(2);
      expect(later.stale.items.find((row: any) => row.item.id === unread.id)).toMatchObject({
        lastUsedAt: null,
        idleDays: 20,
      });
      expect(later.stale.items.find((row: any) => row.item.id === finding.id)).toMatchObject({
        lastUsedAt: injected.includes(finding.id) ? new Date(START).toISOString() : null,
        idleDays: 20,
      });
      expect(later.staleRule.text).toContain('14 days');
      // A one-day window counts today's use only.
      const today = await analytics(tokens.code as string, '?window=1');
      expect(today.totals).toEqual({ injected: 0, consumed: 0, searched: 1 });
      // With a longer rule, nothing is stale yet.
      expect((await analytics(tokens.code as string, '?staleDays=30')).stale.total).toBe(0);
    });

    it('keeps teams apart and private items to their own runtime', async () => {
      const shared = await write(tokens.code as string, {
        type: 'decision',
        title: 'Ship on Friday',
      });
      const secret = await write(tokens.code as string, {
        type: 'discovery',
        title: 'My scratch notes on the release',
        visibility: 'private',
      });
      const theirs = await write(tokens.other as string, {
        type: 'decision',
        title: 'Globex plan',
      });
      // Claude Code finds its private note and the shared decision; globex injects its own.
      const found = await api(tokens.code as string, 'POST', '/api/context/search', {
        query: 'release notes friday ship scratch',
      });
      expect(found.body.results.map((result: any) => result.item.id).sort()).toEqual(
        [shared.id, secret.id].sort(),
      );
      await api(tokens.other as string, 'GET', '/api/context/shared');

      const mine = await analytics(tokens.code as string);
      expect(ids(mine.topItems).sort()).toEqual([shared.id, secret.id].sort());
      expect(mine.runtimes).toEqual([
        { runtime: 'claude-code', items: 2, injected: 0, consumed: 0, searched: 2 },
      ]);
      // OpenClaw, same team: the shared decision's use, never the private note or its use.
      const claw = await analytics(tokens.claw as string, '?limit=100');
      const seen = JSON.stringify(claw);
      expect(seen).not.toContain(secret.id);
      expect(seen).not.toContain('scratch notes');
      expect(ids(claw.topItems)).toEqual([shared.id]);
      expect(claw.runtimes).toEqual([
        { runtime: 'claude-code', items: 1, injected: 0, consumed: 0, searched: 1 },
      ]);
      // Globex sees its own item and use only.
      const other = await analytics(tokens.other as string, '?limit=100');
      expect(JSON.stringify(other)).not.toContain(shared.id);
      expect(ids(other.topItems)).toEqual([theirs.id]);
      expect(other.totals).toEqual({ injected: 1, consumed: 0, searched: 0 });
      expect(other.neverUsed).toEqual({ total: 0, items: [] });
    });

    it("counts a hook's reported injections: readable items only, each once a report", async () => {
      const code = tokens.code as string;
      const shared = await write(tokens.claw as string, { type: 'discovery', title: 'Team news' });
      const secret = await write(tokens.claw as string, {
        type: 'discovery',
        title: "OpenClaw's own",
        visibility: 'private',
      });
      const theirs = await write(tokens.other as string, { type: 'discovery', title: 'Globex' });
      const report = (token: string, itemIds: string[]) =>
        api(token, 'POST', '/api/analytics/injections', { itemIds });
      const answer = await report(code, [shared.id, shared.id, secret.id, theirs.id]);
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect(answer.body).toEqual({ recorded: 1 });
      expect((await report(code, [shared.id])).body).toEqual({ recorded: 1 });
      const seen = await analytics(code, '?runtime=claude-code');
      expect(seen.topItems.map((row: any) => [row.item.id, row.injected])).toEqual([
        [shared.id, 2],
      ]);
      // Nothing of it reached the private item's counts or the other team's.
      const own = await analytics(tokens.claw as string);
      expect(own.topItems.map((row: any) => row.item.id)).toEqual([shared.id]);
      expect((await analytics(tokens.other as string)).totals.injected).toBe(0);
      for (const body of [{ itemIds: [] }, { itemIds: ['not-a-uuid'] }, { ids: [shared.id] }]) {
        const refused = await api(code, 'POST', '/api/analytics/injections', body);
        expect(refused.status).toBe(400);
        expect(refused.body.error.code).toBe('validation_failed');
      }
    });

    it('refuses bad input with a typed 400, and callers without a runtime token', async () => {
      for (const query of [
        '?window=0',
        '?window=91',
        '?window=week',
        // What Number() would read as 16, 1 and 10: a query integer is digits only.
        '?window=0x10',
        '?limit=%201',
        '?staleDays=1e1',
        '?limit=0',
        '?staleDays=-1',
        '?runtime=Not%20A%20Runtime',
        '?since=2026-01-01',
      ]) {
        const response = await api(tokens.code as string, 'GET', `/api/analytics${query}`);
        expect(response.status, query).toBe(400);
        expect(response.body.error.code, query).toBe('validation_failed');
        expect(response.body.error.message, query).toMatch(/query/);
      }
      // A parameter taking one value, given twice, is told so (not "digits only").
      for (const [query, message] of [
        ['?window=7&window=8', 'query.window: given 2 times; it takes one value'],
        ['?window=7&window=x', 'query.window: given 2 times; it takes one value'],
        ['?runtime=openclaw&runtime=web', 'query.runtime: given 2 times; it takes one value'],
      ]) {
        const response = await api(tokens.code as string, 'GET', `/api/analytics${query}`);
        expect(response.status, query).toBe(400);
        expect(response.body.error.message, query).toBe(message);
      }
      const badFirst = await api(tokens.code as string, 'GET', '/api/analytics?window=x&window=7');
      expect(badFirst.body.error.message).not.toMatch(/given 2 times/);
      expect((await call(running.url, 'GET', '/api/analytics')).status).toBe(401);
      const admin = await api(tokens.admin as string, 'GET', '/api/analytics');
      expect(admin.status).toBe(403);
    });
  });
}

analyticsCases('SQLite', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ctxbus-analytics-'));
  return {
    open: async () => openSqliteStore({ path: join(dir, 'ctxbus.db') }),
    dispose: () => rmSync(dir, { recursive: true, force: true }),
  };
});

await withPostgres('analytics on PostgreSQL', (url, schemas) => {
  analyticsCases('PostgreSQL', () => {
    const schema = schemas.next('analytics');
    return {
      open: async () => openPostgresStore({ connectionString: url, schema }),
      dispose: () => {},
    };
  });
});
