import type { ContextItem, ItemUses, Viewer } from '@ctxbus/core';
import { documentFilters, FREQUENT_DOC_USES, rankDocuments } from '@ctxbus/core';
import { expect } from 'vitest';
import type { ItemUsageDelta } from '../item-usage.js';
import type { ConformanceHarness } from './conformance-harness.js';
import { acme, acmeChat, globex } from './conformance-harness.js';

// Item usage (context analytics): recording adds up per day and per item, reads see only the
// viewer's team and the items it may read, never-used and idle items, and pruning (see
// runStoreConformance, which runs these).

export const USAGE_CASES = [
  'usage-record-and-read',
  'usage-unused-and-idle',
  'usage-prune',
  'usage-most-used-documents',
] as const;

export type UsageCase = (typeof USAGE_CASES)[number];

const DAY_MS = 86_400_000;

export function usageCases(h: ConformanceHarness): Record<UsageCase, () => Promise<void>> {
  const day = (offsetDays = 0) =>
    new Date(h.now().getTime() + offsetDays * DAY_MS).toISOString().slice(0, 10);
  const at = (offsetDays = 0) => new Date(h.now().getTime() + offsetDays * DAY_MS).toISOString();
  const delta = (fields: Partial<ItemUsageDelta> & { itemId: string }): ItemUsageDelta => ({
    teamId: 'acme',
    runtime: 'claude-code',
    day: day(),
    injected: 0,
    consumed: 0,
    searched: 0,
    lastInjectedAt: null,
    lastConsumedAt: null,
    lastSearchedAt: null,
    ...fields,
  });

  return {
    async 'usage-record-and-read'() {
      const store = h.store();
      const shared = await h.write({ title: 'shared decision', type: 'decision' });
      const secret = await h.write({ title: 'private note', visibility: 'private' }, acmeChat);
      const theirs = await h.write({ title: 'globex item' }, globex);
      await store.recordItemUsage([
        delta({ itemId: shared.id, day: day(-1), injected: 2, lastInjectedAt: at(-1) }),
        delta({
          itemId: shared.id,
          injected: 1,
          searched: 1,
          lastInjectedAt: at(),
          lastSearchedAt: at(),
        }),
        delta({ itemId: shared.id, runtime: 'openclaw', consumed: 1, lastConsumedAt: at() }),
        delta({ itemId: secret.id, runtime: 'openclaw', injected: 5, lastInjectedAt: at() }),
        delta({ itemId: theirs.id, teamId: 'globex', injected: 9, lastInjectedAt: at() }),
      ]);
      // A second flush adds to the same rows.
      await store.recordItemUsage([
        delta({ itemId: shared.id, injected: 1, lastInjectedAt: at() }),
      ]);
      const window = { fromDay: day(-6), toDay: day() };

      expect(await store.dailyUsage(acme, window)).toEqual([
        { day: day(-1), runtime: 'claude-code', injected: 2, consumed: 0, searched: 0 },
        { day: day(), runtime: 'claude-code', injected: 2, consumed: 0, searched: 1 },
        { day: day(), runtime: 'openclaw', injected: 0, consumed: 1, searched: 0 },
      ]);
      // The private item's owner sees its use; the team's other runtime and other teams do not.
      expect(await store.runtimeUsage(acmeChat, window)).toEqual([
        { runtime: 'claude-code', items: 1, injected: 4, consumed: 0, searched: 1 },
        { runtime: 'openclaw', items: 2, injected: 5, consumed: 1, searched: 0 },
      ]);
      expect(await store.runtimeUsage(acme, { ...window, runtime: 'openclaw' })).toEqual([
        { runtime: 'openclaw', items: 1, injected: 0, consumed: 1, searched: 0 },
      ]);
      expect(await store.runtimeUsage(globex, window)).toEqual([
        { runtime: 'claude-code', items: 1, injected: 9, consumed: 0, searched: 0 },
      ]);

      const top = await store.topUsedItems(acmeChat, { ...window, limit: 5 });
      expect(top.map((row) => [row.item.id, row.injected, row.consumed, row.searched])).toEqual([
        [shared.id, 4, 1, 1],
        [secret.id, 5, 0, 0],
      ]);
      expect(top[0]?.runtimes).toEqual(['claude-code', 'openclaw']);
      expect(top[0]?.lastUsedAt).toBe(at());
      expect(
        (await store.topUsedItems(acme, { ...window, limit: 5 })).map((r) => r.item.id),
      ).toEqual([shared.id]);
      // The window bounds the days: yesterday's injections are outside a one-day window.
      expect(
        (await store.topUsedItems(acme, { fromDay: day(), toDay: day(), limit: 1 }))[0],
      ).toMatchObject({ injected: 2, searched: 1, consumed: 1 });
    },

    async 'usage-unused-and-idle'() {
      const store = h.store();
      const old = await h.write({ title: 'old, used long ago' });
      const never = await h.write({ title: 'never used' });
      const recent = await h.write({ title: 'used today' });
      const replaced = await h.write({ title: 'replaced', key: 'k/one' });
      await h.write({ title: 'replacement', key: 'k/one' });
      await h.write({ title: 'not mine', visibility: 'private' }, acmeChat);
      await h.write({ title: 'other team' }, globex);
      h.advance(20 * DAY_MS);
      await store.recordItemUsage([
        delta({ itemId: old.id, day: day(-15), injected: 1, lastInjectedAt: at(-15) }),
        delta({ itemId: recent.id, runtime: 'openclaw', searched: 1, lastSearchedAt: at() }),
        delta({ itemId: replaced.id, injected: 1, lastInjectedAt: at(-19) }),
      ]);
      const now = at();

      const neverUsed = await store.unusedItems(acme, { now, limit: 10 });
      expect(neverUsed.items.map((row) => row.item.title)).toEqual(['never used', 'replacement']);
      expect(neverUsed.total).toBe(2);
      expect(neverUsed.items[0]?.lastUsedAt).toBeNull();
      // Per runtime: what openclaw never used (its own private item included).
      const byChat = await store.unusedItems(acmeChat, { now, limit: 2, runtime: 'openclaw' });
      expect(byChat.total).toBe(4);
      expect(byChat.items.map((row) => row.item.title)).toEqual([
        'old, used long ago',
        'never used',
      ]);

      const idle = await store.unusedItems(acme, { now, limit: 10, idleBefore: at(-14) });
      // Least recently used first (never used: from its creation); the superseded item and
      // the item used today are not idle.
      expect(idle.items.map((row) => [row.item.title, row.lastUsedAt])).toEqual([
        ['never used', null],
        ['replacement', null],
        ['old, used long ago', at(-15)],
      ]);
      expect(idle.total).toBe(3);
      expect(idle.items.map((row) => row.item.id)).toContain(never.id);
      expect((await store.unusedItems(globex, { now, limit: 10 })).total).toBe(1);
    },

    async 'usage-most-used-documents'() {
      const store = h.store();
      const runbook = await h.write({ title: 'Runbook', key: 'docs/runbook' });
      const guide = await h.write({ title: 'Guide', relevanceTags: ['reference'] });
      const api = await h.write({ title: 'Billing API', key: 'resource/billing-api' });
      const adr = await h.write({ type: 'decision', title: 'ADR 1', key: 'docs/adr-1' });
      const finding = await h.write({ title: 'A finding, not a document' });
      const gone = await h.write({ title: 'Expiring', key: 'docs/old', expiresAfterSeconds: 60 });
      const secret = await h.write(
        { title: 'Secret plan', key: 'docs/secret', visibility: 'private' },
        acmeChat,
      );
      const theirs = await h.write({ title: 'Their runbook', key: 'docs/runbook' }, globex);
      // Rewritten: the new version keeps the uses of the old one.
      const runbook2 = await h.write({ title: 'Runbook v2', key: 'docs/runbook' });
      const deltas = [
        delta({ itemId: runbook.id, day: day(-1), searched: 3, lastSearchedAt: at(-1) }),
        delta({ itemId: runbook2.id, day: day(-2), consumed: 1, lastConsumedAt: at(-2) }),
        delta({ itemId: runbook2.id, day: day(-1), injected: 90, lastInjectedAt: at(-1) }),
        delta({ itemId: guide.id, runtime: 'openclaw', searched: 4, lastSearchedAt: at() }),
        delta({ itemId: api.id, searched: 1, lastSearchedAt: at() }),
        delta({ itemId: api.id, day: day(-30), searched: 50, lastSearchedAt: at(-30) }),
        delta({ itemId: adr.id, searched: 10, lastSearchedAt: at() }),
        delta({ itemId: finding.id, searched: 10, lastSearchedAt: at() }),
        delta({ itemId: gone.id, searched: 10, lastSearchedAt: at() }),
        delta({ itemId: secret.id, runtime: 'openclaw', consumed: 20, lastConsumedAt: at() }),
        delta({ itemId: theirs.id, teamId: 'globex', searched: 7, lastSearchedAt: at() }),
      ];
      await store.recordItemUsage(deltas);
      const fromDay = day(-13);
      const now = new Date(h.now().getTime() + 120_000);
      const options = { fromDay, toDay: day(), kinds: FREQUENT_DOC_USES, now: now.toISOString() };
      const most = (viewer: Viewer, limit = 10) =>
        store.mostUsedItems(viewer, { ...options, filters: documentFilters(), limit });
      const [tied, other] = [runbook2, guide].sort((a, b) => (a.id < b.id ? -1 : 1));
      const rows = (list: { item: ContextItem; uses: number }[]) =>
        list.map((row) => [row.item.title, row.uses]);
      // Ties by id; the decision, the non-document, the expired document and the uses outside
      // the window do not count; injections are not asked for; the other runtime's private
      // document and the other team's never show.
      expect(rows(await most(acme))).toEqual([
        [tied?.title, 4],
        [other?.title, 4],
        ['Billing API', 1],
      ]);
      expect(rows(await most(acme, 2))).toEqual([
        [tied?.title, 4],
        [other?.title, 4],
      ]);
      expect(rows(await most(acmeChat, 1))).toEqual([['Secret plan', 20]]);
      expect(rows(await most(globex))).toEqual([['Their runbook', 7]]);
      expect(await store.mostUsedItems(acme, { ...options, filters: [], limit: 10 })).toEqual([]);
      // The same answer as the reference in memory, for every viewer.
      for (const viewer of [acme, acmeChat, globex]) {
        const all = await store.listItems(viewer, { limit: 100, includeSuperseded: true });
        const uses: ItemUses[] = deltas
          .filter((d) => d.teamId === viewer.teamId && d.day >= fromDay && d.day <= day())
          .map((d) => ({ itemId: d.itemId, uses: d.consumed + d.searched }));
        const reference = rankDocuments([...all, gone], uses, viewer, now, 10);
        expect(rows(await most(viewer))).toEqual(rows(reference));
      }
    },

    async 'usage-prune'() {
      const store = h.store();
      const item = await h.write({ title: 'kept item' });
      await store.recordItemUsage([
        delta({ itemId: item.id, day: day(-100), injected: 3, lastInjectedAt: at(-100) }),
        delta({ itemId: item.id, injected: 1, lastInjectedAt: at() }),
        delta({
          itemId: '0190a000-0000-7000-8000-000000000000',
          injected: 1,
          lastInjectedAt: at(),
        }),
      ]);
      // Old days and the usage of an item the store does not hold go; the item's totals stay.
      expect(await store.pruneItemUsage(day(-90))).toBe(2);
      expect(await store.dailyUsage(acme, { fromDay: day(-200), toDay: day() })).toEqual([
        { day: day(), runtime: 'claude-code', injected: 1, consumed: 0, searched: 0 },
      ]);
      expect((await store.unusedItems(acme, { now: at(), limit: 10 })).total).toBe(0);
      expect(await store.pruneItemUsage(day(-90))).toBe(0);
    },
  };
}
