import type {
  ContextItem,
  ContextItemInput,
  ListOptions,
  SharedCandidates,
  Viewer,
} from '@ctxbus/core';
import {
  applyListOptions,
  type CtxbusError,
  candidatesFromItems,
  documentFilters,
  FREQUENT_DOC_USES,
  frequentDocsCandidateLimit,
  frequentDocsWindow,
  rankDocuments,
  resolveSharedContext,
  sharedCandidateQueries,
  usageDay,
} from '@ctxbus/core';
import { expect } from 'vitest';
import type { ItemUsageDelta } from '../item-usage.js';
import type { Store } from '../store.js';
import type { ConformanceHarness } from './conformance-harness.js';
import {
  acme,
  acmeChat,
  expectCode,
  globex,
  rejectsWith,
  seededRandom,
} from './conformance-harness.js';

const DAY_MS = 86_400_000;

/** A random use of an item by its team, in the last few days (the reference-semantics data). */
function randomUse(
  item: ContextItem,
  pick: <T>(list: readonly T[]) => T,
  random: () => number,
): ItemUsageDelta {
  const day = usageDay(Date.parse(item.createdAt) - pick([0, 1, 1, 2, 20]) * DAY_MS);
  return {
    teamId: item.teamId,
    itemId: item.id,
    runtime: pick(['claude-code', 'openclaw']),
    day,
    injected: Math.floor(random() * 5),
    consumed: pick([0, 0, 1]),
    searched: pick([0, 1, 2, 3]),
    lastInjectedAt: null,
    lastConsumedAt: null,
    lastSearchedAt: null,
  };
}

// Items: writes, reads, supersession, expiry, filters, consumption (see runStoreConformance, which runs these).

export const ITEM_CASES = [
  'write-read',
  'idempotent-write',
  'atomic-batch',
  'supersession',
  'key-supersession',
  'expiry',
  'filters',
  'latest-per-scope-key',
  'paging',
  'isolation',
  'consumption',
  'persistence',
  'concurrent-conflict',
  'batch-duplicates',
  'reference-semantics',
  'concurrent-consume',
  'key-holder-visibility',
  'large-item',
  'concurrent-writes',
] as const;

export type ItemCase = (typeof ITEM_CASES)[number];

export interface ItemHarness extends ConformanceHarness {
  /** Closes the store and opens the same database again (the backend's `reopenStore`). */
  reopen(): Promise<Store>;
  /** Closes the store, opens a fresh empty one and sets the clock back to its start. */
  restart(): Promise<Store>;
}

export function itemCases(h: ItemHarness): Record<ItemCase, () => Promise<void>> {
  const { write, prepared } = h;
  return {
    async 'write-read'() {
      const store = h.store();
      const item = await write({
        type: 'decision',
        title: 'Use SQLite',
        content: 'Embedded and fast.',
        relevanceTags: ['storage'],
        source: { agentId: 'a1', taskId: 'T-1' },
        scope: 'task',
        urgency: 'attention',
        runtimeOptions: { 'claude-code': { pinned: true } },
      });
      expect(item.seq).toBeGreaterThan(0);
      const read = await store.getItem(acme, item.id);
      expect(read).toEqual(item);
      expect(read).toMatchObject({
        teamId: 'acme',
        type: 'decision',
        scopeKey: 'task:T-1',
        source: { runtime: 'claude-code', agentId: 'a1', taskId: 'T-1', threadId: null },
        relevanceTags: ['storage'],
        urgency: 'attention',
        consumed: false,
        consumedBy: [],
        supersededBy: null,
        runtimeOptions: { 'claude-code': { pinned: true } },
      });
      expect(await store.getItem(acme, '0192f000-0000-7000-8000-00000000dead')).toBeNull();
    },
    async 'idempotent-write'() {
      const store = h.store();
      const input = { id: '0192f000-0000-7000-8000-000000000001', title: 'once' };
      const [first] = await store.writeItems([prepared(input)]);
      h.advance(60_000);
      const [again] = await store.writeItems([prepared(input)]);
      expect(first?.status).toBe('created');
      expect(again?.status).toBe('existing');
      expect(again?.item).toEqual(first?.item);
      expect(await store.latestSeq()).toBe(1);
      await rejectsWith(store.writeItems([prepared({ ...input, title: 'different' })]), 'conflict');
      // Another team's use of the id is its own item: it learns nothing about acme's (a 409
      // would say the id exists), and each team reads, supersedes and consumes only its own.
      const [theirs] = await store.writeItems([prepared({ ...input, title: 'theirs' }, globex)]);
      expect(theirs?.status).toBe('created');
      expect((await store.getItem(acme, input.id))?.title).toBe('once');
      expect((await store.getItem(globex, input.id))?.title).toBe('theirs');
      const [again2] = await store.writeItems([prepared({ ...input, title: 'theirs' }, globex)]);
      expect(again2?.status).toBe('existing');
      await rejectsWith(
        store.writeItems([prepared({ ...input, title: 'theirs, changed' }, globex)]),
        'conflict',
      );
      const [successor] = await store.writeItems([
        prepared({ title: 'their successor', supersedes: input.id }, globex),
      ]);
      expect(successor?.item.supersedes).toBe(input.id);
      expect((await store.getItem(acme, input.id))?.supersededBy).toBeNull();
      expect((await store.getItem(globex, input.id))?.supersededBy).toBe(successor?.item.id);
      expect((await store.consumeItem(acme, input.id))?.title).toBe('once');
      expect((await store.getItem(globex, input.id))?.consumed).toBe(false);
    },
    async 'atomic-batch'() {
      const store = h.store();
      const taken = await write({ id: '0192f000-0000-7000-8000-000000000002', title: 'taken' });
      const batch = [
        prepared({ title: 'fine 1' }),
        prepared({ title: 'fine 2' }),
        prepared({ id: taken.id, title: 'clash' }),
      ];
      await rejectsWith(store.writeItems(batch), 'conflict');
      expect(await store.listItems(acme, { limit: 10 })).toHaveLength(1);
      expect(await store.latestSeq()).toBe(taken.seq);
      const outcomes = await store.writeItems([prepared({ title: 'a' }), prepared({ title: 'b' })]);
      expect(outcomes.map((outcome) => outcome.status)).toEqual(['created', 'created']);
    },
    async supersession() {
      const store = h.store();
      const old = await write({ type: 'decision', title: 'Use MySQL' });
      const replacement = await write({
        type: 'decision',
        title: 'Use SQLite',
        supersedes: old.id,
      });
      expect(replacement.supersedes).toBe(old.id);
      expect((await store.getItem(acme, old.id))?.supersededBy).toBe(replacement.id);
      // The outcome names the replaced item and its change, exactly as the change log has them.
      const [keyed] = await store.writeItems([
        prepared({ type: 'decision', title: 'Keyed v1', key: 'db/engine' }, acme),
      ]);
      const [rekeyed] = await store.writeItems([
        prepared({ type: 'decision', title: 'Keyed v2', key: 'db/engine' }, acme),
      ]);
      expect(keyed?.superseded).toBeUndefined();
      const logged = await store.readChanges({ afterSeq: rekeyed?.item.seq ?? 0, limit: 1 });
      expect(rekeyed?.superseded).toEqual({
        seq: logged[0]?.seq,
        item: logged[0]?.item,
        via: 'key',
      });
      expect(logged[0]).toMatchObject({ kind: 'superseded', item: { id: keyed?.item.id } });
      const live = await store.listItems(acme, { limit: 10 });
      expect(live.map((item) => item.title)).toEqual(['Keyed v2', 'Use SQLite']);
      const all = await store.listItems(acme, { limit: 10, includeSuperseded: true });
      expect(all.map((item) => item.title)).toEqual([
        'Keyed v2',
        'Keyed v1',
        'Use SQLite',
        'Use MySQL',
      ]);
      await rejectsWith(write({ title: 'again', supersedes: old.id }), 'conflict');
      await rejectsWith(
        write({ title: 'ghost', supersedes: '0192f000-0000-7000-8000-00000000beef' }),
        'invalid_reference',
      );
      await rejectsWith(
        write({ title: 'cross-team', supersedes: replacement.id }, globex),
        'invalid_reference',
      );
    },
    async 'key-supersession'() {
      const store = h.store();
      const first = await write({ title: 'Stack v1', key: 'project/ctxbus/stack' });
      const second = await write({ title: 'Stack v2', key: 'project/ctxbus/stack' });
      expect(second.supersedes).toBe(first.id);
      const byKey = await store.listItems(acme, { limit: 10, key: 'project/ctxbus/stack' });
      expect(byKey.map((item) => item.title)).toEqual(['Stack v2']);
      await write({ title: 'Other', key: 'project/ctxbus-web' });
      await write({ title: 'Deep', key: 'project/ctxbus/stack/db' });
      const underPrefix = await store.listItems(acme, { limit: 10, keyPrefix: 'project/ctxbus' });
      expect(underPrefix.map((item) => item.title)).toEqual(['Deep', 'Stack v2']);
      // Another team's same key is a different item.
      const theirs = await write({ title: 'Their stack', key: 'project/ctxbus/stack' }, globex);
      expect(theirs.supersedes).toBeNull();
    },
    async expiry() {
      const store = h.store();
      const shortLived = await write({ title: 'ephemeral', expiresAfterSeconds: 60 });
      const lasting = await write({ title: 'lasting' });
      expect(await store.getItem(acme, shortLived.id)).not.toBeNull();
      h.advance(61_000);
      expect(await store.getItem(acme, shortLived.id)).toBeNull();
      const listed = await store.listItems(acme, { limit: 10 });
      expect(listed.map((item) => item.id)).toEqual([lasting.id]);
      expect(await store.searchItems(acme, { query: 'ephemeral', limit: 5 })).toEqual([]);
      expect(await store.consumeItem(acme, shortLived.id)).toBeNull();
    },
    async filters() {
      const store = h.store();
      await write({ type: 'decision', title: 'd1', relevanceTags: ['db'], scope: 'space' });
      await write({
        type: 'alert',
        title: 'a1',
        urgency: 'blocking',
        relevanceTags: ['ops', 'db'],
      });
      await write({ type: 'status', title: 's1', scopeKey: 'task:T-9', urgency: 'attention' });
      await write({ type: 'status', title: 's2', scopeKey: 'thread:chat-1' });
      await write({ type: 'discovery', title: 'c1' }, acmeChat);
      const titles = async (filter: Record<string, unknown>) =>
        (await store.listItems(acme, { limit: 50, ...filter })).map((item) => item.title);
      expect(await titles({ types: ['decision', 'alert'] })).toEqual(['a1', 'd1']);
      expect(await titles({ tags: ['DB'] })).toEqual(['a1', 'd1']);
      expect(await titles({ scopes: ['space'] })).toEqual(['d1']);
      expect(await titles({ scopeKey: 'task:T-9' })).toEqual(['s1']);
      expect(await titles({ scopeKeyPrefix: 'thread:' })).toEqual(['s2']);
      expect(await titles({ scopeKeyPrefix: 'task:T' })).toEqual(['s1']);
      expect(await titles({ minUrgency: 'attention' })).toEqual(['s1', 'a1']);
      expect(await titles({ urgencies: ['blocking'] })).toEqual(['a1']);
      expect(await titles({ sourceRuntime: 'openclaw' })).toEqual(['c1']);
      expect(await titles({ sinceSeq: 3 })).toEqual(['c1', 's2']);
      expect(await titles({ hasKey: true })).toEqual([]);
      expect(await titles({ types: ['status'], unconsumed: true })).toEqual(['s2', 's1']);
      expect(await titles({ scopeKinds: ['task', 'thread'] })).toEqual(['s2', 's1']);
      expect(await titles({ scopeKinds: ['none'] })).toEqual(['c1', 'a1', 'd1']);
      expect(await titles({ withoutTags: ['ops'] })).toEqual(['c1', 's2', 's1', 'd1']);
    },
    async 'latest-per-scope-key'() {
      const store = h.store();
      await write({ type: 'status', title: 'T1 started', scopeKey: 'task:T1' });
      await write({ type: 'status', title: 'T2 started', scopeKey: 'task:T2' });
      await write({ type: 'status', title: 'T1 half way', scopeKey: 'task:T1' });
      await write({
        type: 'status',
        title: 'T2 done',
        scopeKey: 'task:T2',
        relevanceTags: ['done'],
      });
      await write({
        type: 'status',
        title: 'T3 secret',
        scopeKey: 'task:T3',
        visibility: 'private',
      });
      await write({ type: 'status', title: 'T4 started', scopeKey: 'task:T4' });
      await write({
        type: 'status',
        title: 'T4 fading',
        scopeKey: 'task:T4',
        expiresAfterSeconds: 30,
      });
      await write({ type: 'status', title: 'unscoped' });
      const latest = async (viewer: Viewer, extra: Record<string, unknown> = {}) =>
        (
          await store.listItems(viewer, {
            types: ['status'],
            scopeKinds: ['task'],
            latestPerScopeKey: true,
            limit: 10,
            ...extra,
          })
        ).map((item) => item.title);
      expect(await latest(acme)).toEqual(['T4 fading', 'T3 secret', 'T2 done', 'T1 half way']);
      // The newest item decides: T2 is finished, so it is dropped, not shown with an older status.
      expect(await latest(acme, { withoutTags: ['done'] })).toEqual([
        'T4 fading',
        'T3 secret',
        'T1 half way',
      ]);
      // Another runtime cannot see T3's private status, so T3 has none.
      expect(await latest(acmeChat)).toEqual(['T4 fading', 'T2 done', 'T1 half way']);
      h.advance(31_000);
      expect(await latest(acme, { limit: 2 })).toEqual(['T4 started', 'T3 secret']);
    },
    async paging() {
      const store = h.store();
      for (let index = 0; index < 7; index++) await write({ title: `p${index}` });
      const page1 = await store.listItems(acme, { limit: 3 });
      const last = page1.at(-1);
      const page2 = await store.listItems(acme, { limit: 3, beforeSeq: last?.seq ?? 0 });
      expect(page1.map((item) => item.title)).toEqual(['p6', 'p5', 'p4']);
      expect(page2.map((item) => item.title)).toEqual(['p3', 'p2', 'p1']);
    },
    async isolation() {
      const store = h.store();
      const shared = await write({ title: 'team note' });
      const secret = await write({ title: 'private note', visibility: 'private' });
      const other = await write({ title: 'globex note' }, globex);
      expect(await store.getItem(globex, shared.id)).toBeNull();
      expect(await store.getItem(acme, other.id)).toBeNull();
      expect(await store.getItem(acmeChat, secret.id)).toBeNull();
      expect(await store.getItem(acme, secret.id)).not.toBeNull();
      const chatView = await store.listItems(acmeChat, { limit: 10 });
      expect(chatView.map((item) => item.title)).toEqual(['team note']);
      expect(await store.searchItems(acmeChat, { query: 'private note', limit: 10 })).toHaveLength(
        1,
      );
      expect(await store.searchItems(globex, { query: 'team note', limit: 10 })).toHaveLength(1);
      expect(await store.consumeItem(globex, shared.id)).toBeNull();
      expect(await store.consumeItem(acmeChat, secret.id)).toBeNull();
      await rejectsWith(
        write({ title: 'sneaky', supersedes: secret.id }, acmeChat),
        'invalid_reference',
      );
    },
    async consumption() {
      const store = h.store();
      const item = await write({ type: 'request', title: 'Approve?' });
      const once = await store.consumeItem(acmeChat, item.id);
      const twice = await store.consumeItem(acmeChat, item.id);
      h.advance(1000);
      const byOther = await store.consumeItem(acme, item.id);
      expect(once?.consumed).toBe(true);
      expect(twice?.consumedBy).toEqual(once?.consumedBy);
      expect(byOther?.consumedBy.map((entry) => entry.runtime)).toEqual([
        'openclaw',
        'claude-code',
      ]);
      const consumptions = (await store.readChanges({ afterSeq: 0, limit: 10 })).filter(
        (change) => change.kind === 'consumed',
      );
      expect(consumptions).toHaveLength(2);
      expect(await store.listItems(acme, { limit: 10, unconsumed: true })).toEqual([]);
    },
    async persistence() {
      let store = h.store();
      const item = await write({ title: 'survives', relevanceTags: ['keep'] });
      store = await h.reopen();
      expect(await store.getItem(acme, item.id)).toEqual(item);
      expect((await store.searchItems(acme, { query: 'survives', limit: 1 }))[0]?.item.id).toBe(
        item.id,
      );
      const next = await write({ title: 'after reopen' });
      expect(next.seq).toBe(item.seq + 1);
    },
    async 'concurrent-conflict'() {
      const store = h.store();
      const taken = await write({ id: '0192f000-0000-7000-8000-000000000003', title: 'taken' });
      const results = await Promise.allSettled([
        store.writeItems([prepared({ title: 'first' })]),
        store.writeItems([prepared({ id: taken.id, title: 'clash' })]),
        store.writeItems([prepared({ title: 'third' }), prepared({ title: 'fourth' })]),
      ]);
      expect(results.map((result) => result.status)).toEqual([
        'fulfilled',
        'rejected',
        'fulfilled',
      ]);
      const rejected = results[1];
      if (rejected?.status === 'rejected') expectCode(rejected.reason, 'conflict');
      const listed = await store.listItems(acme, { limit: 10 });
      expect(listed.map((item) => item.title)).toEqual(['fourth', 'third', 'first', 'taken']);
      expect(listed.map((item) => item.seq)).toEqual([4, 3, 2, 1]);
    },
    async 'batch-duplicates'() {
      const store = h.store();
      const id = '0192f000-0000-7000-8000-000000000004';
      const outcomes = await store.writeItems([
        prepared({ id, title: 'twice' }),
        prepared({ id, title: 'twice' }),
      ]);
      expect(outcomes.map((outcome) => outcome.status)).toEqual(['created', 'existing']);
      expect(outcomes[1]?.item).toEqual(outcomes[0]?.item);
      await rejectsWith(
        store.writeItems([
          prepared({ title: 'x' }),
          prepared({ id: '0192f000-0000-7000-8000-000000000005', title: 'a' }),
          prepared({ id: '0192f000-0000-7000-8000-000000000005', title: 'b' }),
        ]),
        'conflict',
      );
      expect(await store.latestSeq()).toBe(1);
      const [old, replacement] = await store.writeItems([
        prepared({ id: '0192f000-0000-7000-8000-000000000006', type: 'decision', title: 'v1' }),
        prepared({
          type: 'decision',
          title: 'v2',
          supersedes: '0192f000-0000-7000-8000-000000000006',
        }),
      ]);
      expect(old?.item.supersededBy).toBe(replacement?.item.id);
      expect(await store.getItem(acme, old?.item.id ?? '')).toEqual(old?.item);
    },
    async 'reference-semantics'() {
      let store = h.store();
      // Seeded random datasets; every listing must equal core's in-memory reference
      // (applyListOptions), and so must the shared context built from the store's queries.
      const viewers: Viewer[] = [acme, acmeChat, globex];
      for (const seed of [1, 2, 3]) {
        store = await h.restart();
        const random = seededRandom(seed);
        const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T;
        const written: string[] = [];
        const usage: ItemUsageDelta[] = [];
        for (let index = 0; index < 160; index++) {
          const writer = pick([acme, acme, acmeChat, globex]);
          const scopeKey = pick([
            undefined,
            undefined,
            'task:T1',
            'task:T2',
            'task:T3',
            'task:T4',
            'thread:X1',
            'thread:X2',
            'thread:X3',
            'user:u1',
            'team:t',
          ]);
          const input: Partial<ContextItemInput> = {
            type: pick(['discovery', 'decision', 'status', 'status', 'request', 'alert'] as const),
            title: `item ${seed}-${index}`,
            urgency: pick(['background', 'background', 'attention', 'blocking'] as const),
            relevanceTags: ['done', 'ops', 'ci', 'reference'].filter(() => random() < 0.2),
            ...(scopeKey && { scopeKey }),
            ...(random() < 0.15 && {
              key: pick([
                'identity/user',
                'identity/prefs',
                'focus',
                'project/a',
                'project/a/b',
                'project/c',
                'notes/x',
                'docs/a',
                'docs/b',
                'resource/r',
              ]),
            }),
            ...(random() < 0.15 && { visibility: 'private' as const }),
            ...(random() < 0.1 && { expiresAfterSeconds: 30 }),
          };
          if (random() < 0.08 && written.length > 0) input.supersedes = pick(written);
          try {
            const item = await write(input, writer);
            written.push(item.id);
            if (random() < 0.5) usage.push(randomUse(item, pick, random));
            if (random() < 0.2)
              await store.consumeItem(
                { teamId: writer.teamId, runtime: pick(['claude-code', 'openclaw']) },
                item.id,
              );
          } catch (error) {
            // A random supersedes may name an item of another team, or one already superseded;
            // a private item may not replace another runtime's.
            expect(['invalid_reference', 'conflict', 'forbidden']).toContain(
              (error as CtxbusError).code,
            );
          }
        }
        await store.recordItemUsage(usage);
        const all = new Map<string, ContextItem>();
        for (const viewer of viewers) {
          for (const item of await store.listItems(viewer, {
            limit: 10_000,
            includeSuperseded: true,
          }))
            all.set(item.id, item);
        }
        h.advance(60_000);
        const now = h.now();
        const small = {
          identity: 1,
          activeTasks: 2,
          blockedItems: 2,
          recentDecisions: 2,
          currentFocus: 1,
          recentInteractions: 2,
          threadSummaries: 1,
          projectContext: 2,
          frequentlyAccessedDocs: 2,
          maxEntryTokens: 300,
        };
        const queries: ListOptions[] = [
          ...Object.values(sharedCandidateQueries()).flat(),
          ...Object.values(sharedCandidateQueries(small)).flat(),
          { limit: 500 },
          { limit: 500, includeSuperseded: true },
          { limit: 500, scopeKinds: ['none', 'user'] },
          { limit: 500, withoutTags: ['done', 'ci'] },
          { limit: 500, tags: ['ops'], unconsumed: true },
          { limit: 500, keyPrefix: 'project' },
          { limit: 500, minUrgency: 'attention', types: ['alert', 'request'] },
          { limit: 3, scopeKeyPrefix: 'task:', latestPerScopeKey: true, withoutTags: ['done'] },
          { limit: 500, scopeKinds: ['thread'], latestPerScopeKey: true, includeSuperseded: true },
        ];
        for (const viewer of viewers) {
          for (const query of queries) {
            const fromStore = (await store.listItems(viewer, query)).map((item) => item.id);
            const reference = applyListOptions([...all.values()], viewer, query, now).map(
              (item) => item.id,
            );
            expect(
              fromStore,
              `seed ${seed}, ${viewer.teamId}/${viewer.runtime}, ${JSON.stringify(query)}`,
            ).toEqual(reference);
          }
          const sections = sharedCandidateQueries();
          const fromStore = {} as Record<string, ContextItem[]>;
          for (const [section, list] of Object.entries(sections)) {
            fromStore[section] = (
              await Promise.all(list.map((query) => store.listItems(viewer, query)))
            ).flat();
          }
          // The frequently used documents: the store's ranking and the reference's.
          const window = frequentDocsWindow(now);
          const limit = frequentDocsCandidateLimit();
          const documents = await store.mostUsedItems(viewer, {
            ...window,
            kinds: FREQUENT_DOC_USES,
            filters: documentFilters(),
            now: now.toISOString(),
            limit,
          });
          const uses = usage
            .filter((d) => d.teamId === viewer.teamId && d.day >= window.fromDay)
            .filter((d) => d.day <= window.toDay)
            .map((d) => ({ itemId: d.itemId, uses: d.consumed + d.searched }));
          const ranked = rankDocuments([...all.values()], uses, viewer, now, limit);
          const label = `seed ${seed}, ${viewer.teamId}/${viewer.runtime}, documents`;
          expect(
            documents.map((row) => [row.item.id, row.uses]),
            label,
          ).toEqual(ranked.map((row) => [row.item.id, row.uses]));
          fromStore.frequentlyAccessedDocs = documents.map((row) => row.item);
          for (const runtime of ['claude-code', 'openclaw', 'web']) {
            const request = {
              runtime,
              viewer,
              now,
              tokenBudget: 1500,
              documentUses: new Map(documents.map((row) => [row.item.id, row.uses])),
            };
            const built = resolveSharedContext(fromStore as unknown as SharedCandidates, request);
            const reference = resolveSharedContext(
              candidatesFromItems([...all.values()], viewer, now, undefined, ranked),
              { ...request, documentUses: new Map(ranked.map((row) => [row.item.id, row.uses])) },
            );
            expect(built.formatted).toBe(reference.formatted);
            expect(built.contextHash).toBe(reference.contextHash);
          }
        }
      }
    },
    async 'concurrent-consume'() {
      const store = h.store();
      // The same runtime consuming one item twice at once records one consumption.
      const item = await write({ type: 'request', title: 'Approve the plan?' });
      const [first, second] = await Promise.all([
        store.consumeItem(acmeChat, item.id),
        store.consumeItem(acmeChat, item.id),
      ]);
      expect(first?.consumedBy).toHaveLength(1);
      expect(second?.consumedBy).toEqual(first?.consumedBy);
      const consumptions = (await store.readChanges({ afterSeq: 0, limit: 10 })).filter(
        (change) => change.kind === 'consumed',
      );
      expect(consumptions).toHaveLength(1);
      expect(await store.latestSeq()).toBe(item.seq + 1);
    },
    async 'key-holder-visibility'() {
      const store = h.store();
      // Writing a key supersedes only a holder the writer can see: not an expired one, not
      // another runtime's private one; a holder written earlier in the same batch, yes.
      const fading = await write({ title: 'fading', key: 'notes/fading', expiresAfterSeconds: 30 });
      const secret = await write({ title: 'secret', key: 'notes/shared', visibility: 'private' });
      h.advance(31_000);
      const renewed = await write({ title: 'renewed', key: 'notes/fading' });
      expect(renewed.supersedes).toBeNull();
      const theirs = await write({ title: 'theirs', key: 'notes/shared' }, acmeChat);
      expect(theirs.supersedes).toBeNull();
      expect((await store.getItem(acme, secret.id))?.supersededBy).toBeNull();
      expect(
        (await store.listItems(acme, { limit: 10, key: 'notes/shared' })).map((i) => i.title),
      ).toEqual(['theirs', 'secret']);
      expect(await store.getItem(acme, fading.id)).toBeNull();
      const [v1, v2] = await store.writeItems([
        prepared({ title: 'v1', key: 'notes/batch' }),
        prepared({ title: 'v2', key: 'notes/batch' }),
      ]);
      expect(v2?.item.supersedes).toBe(v1?.item.id);
      expect(v1?.item.supersededBy).toBe(v2?.item.id);
      expect(
        (await store.listItems(acme, { limit: 10, key: 'notes/batch' })).map((i) => i.title),
      ).toEqual(['v2']);
      // A private item never replaces a team item, another runtime's or its own: the team would
      // lose it to an item it cannot read, and read that item's id. By supersedes it is
      // refused; by key it goes beside the team value.
      const shared = await write({ title: 'team decision', key: 'notes/decided' });
      for (const writer of [acmeChat, acme]) {
        await rejectsWith(
          write({ title: 'hidden', supersedes: shared.id, visibility: 'private' }, writer),
          'forbidden',
        );
        const beside = await write(
          { title: `hidden of ${writer.runtime}`, key: 'notes/decided', visibility: 'private' },
          writer,
        );
        expect(beside.supersedes).toBeNull();
        expect((await store.getItem(writer, shared.id))?.supersededBy).toBeNull();
      }
      const acmeWeb = { teamId: 'acme', runtime: 'web' };
      expect(
        (await store.listItems(acmeChat, { limit: 10, key: 'notes/decided' })).map((i) => i.title),
      ).toEqual(['hidden of openclaw', 'team decision']);
      expect(
        (await store.listItems(acmeWeb, { limit: 10, key: 'notes/decided' })).map((i) => i.title),
      ).toEqual(['team decision']);
      // Another runtime's team value on a key this one keeps privately does not lock it out:
      // its next private value replaces its own, and the team value stays.
      const mine = await write({ title: 'mine v1', key: 'notes/lane', visibility: 'private' });
      const squat = await write({ title: 'theirs on my key', key: 'notes/lane' }, acmeChat);
      const mine2 = await write({ title: 'mine v2', key: 'notes/lane', visibility: 'private' });
      expect(mine2.supersedes).toBe(mine.id);
      expect((await store.getItem(acmeChat, squat.id))?.supersededBy).toBeNull();
      expect(
        (await store.listItems(acme, { limit: 10, key: 'notes/lane' })).map((i) => i.title),
      ).toEqual(['mine v2', 'theirs on my key']);
    },
    async 'large-item'() {
      const store = h.store();
      // The largest content a write may carry round-trips unchanged and stays searchable:
      // 15,000 distinct words, a 3,000-character token, and a word repeated to the limit.
      const words = Array.from({ length: 15_000 }, (_, index) => `w${index.toString(36)}`);
      const head = `${words.join(' ')} ${'x'.repeat(3_000)} `;
      const content = `${head}${'again '.repeat(100_000)}`.slice(0, 100_000);
      const item = await write({ title: 'Large', content, relevanceTags: ['big'] });
      expect((await store.getItem(acme, item.id))?.content).toBe(content);
      const hits = await store.searchItems(acme, { query: `${words.at(-1)} w1`, limit: 3 });
      expect(hits.map((hit) => hit.item.id)).toEqual([item.id]);
    },
    async 'concurrent-writes'() {
      const writes = Array.from({ length: 40 }, (_, index) => write({ title: `c${index}` }));
      const items = await Promise.all(writes);
      const seqs = items.map((item) => item.seq).sort((a, b) => a - b);
      expect(seqs).toEqual(Array.from({ length: 40 }, (_, index) => index + 1));
      expect(new Set(items.map((item) => item.id)).size).toBe(40);
    },
  };
}
