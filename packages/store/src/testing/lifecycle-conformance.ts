import { expect } from 'vitest';
import type { ConformanceHarness } from './conformance-harness.js';
import { acme, acmeChat, globex } from './conformance-harness.js';

// The lifecycle half of the store contract (see runStoreConformance, which runs these).

export const LIFECYCLE_CASES = [
  'sweep-expiry',
  'sweep-retention',
  'sweep-archive',
  'expire-key',
] as const;

export type LifecycleCase = (typeof LIFECYCLE_CASES)[number];

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

export function lifecycleCases(h: ConformanceHarness): Record<LifecycleCase, () => Promise<void>> {
  const iso = (offsetMs = 0) => new Date(h.now().getTime() + offsetMs).toISOString();
  return {
    async 'sweep-expiry'() {
      const store = h.store();
      const kept = await h.write({ title: 'no expiry', content: 'lighthouse keeper' });
      const decision = await h.write({
        type: 'decision',
        title: 'temporary rule',
        expiresAfterSeconds: 3600,
      });
      // The newest write expires too: the sequence must not go back once it is swept.
      const brief = await h.write({
        title: 'brief',
        content: 'lighthouse flash',
        expiresAfterSeconds: 60,
      });
      const latest = await store.latestSeq();
      expect(
        await store.sweepItems({ expiredBefore: iso(), mode: 'delete', limit: 100, now: iso() }),
      ).toEqual({
        expired: 0,
        aged: 0,
        archived: 0,
        more: false,
      });
      h.advance(2 * HOUR);
      // An explicit expiry is honoured for every type, decisions included.
      expect(
        await store.sweepItems({ expiredBefore: iso(), mode: 'delete', limit: 100, now: iso() }),
      ).toEqual({
        expired: 2,
        aged: 0,
        archived: 0,
        more: false,
      });
      expect(await store.getItem(acme, kept.id)).not.toBeNull();
      const changes = await store.readChanges({ afterSeq: 0, limit: 100 });
      expect(changes.map((change) => change.item.id)).toEqual([kept.id]);
      expect(await store.latestSeq()).toBe(latest);
      const next = await h.write({ title: 'after the sweep' });
      expect(next.seq).toBe(latest + 1);
      // Gone from search too, and nothing is left to sweep.
      const hits = await store.searchItems(acme, { query: 'lighthouse', limit: 10 });
      expect(hits.map((hit) => hit.item.id)).toEqual([kept.id]);
      expect(
        (await store.sweepItems({ expiredBefore: iso(), mode: 'delete', limit: 100, now: iso() }))
          .expired,
      ).toBe(0);
      expect([decision.id, brief.id]).not.toContain(kept.id);
    },

    async 'sweep-retention'() {
      const store = h.store();
      const oldStatus = await h.write({ type: 'status', title: 'old status' });
      const oldDiscovery = await h.write({ type: 'discovery', title: 'old discovery' });
      const replaced = await h.write({ type: 'decision', title: 'use MySQL' });
      const current = await h.write({
        type: 'decision',
        title: 'use PostgreSQL',
        supersedes: replaced.id,
      });
      const knowledge = await h.write({ type: 'discovery', title: 'stack', key: 'project/stack' });
      const oldAlert = await h.write({ type: 'alert', title: 'old alert' });
      h.advance(40 * DAY);
      const fresh = await h.write({ type: 'status', title: 'fresh status' });
      const cutoff = iso(-30 * DAY);
      const createdBefore = { status: cutoff, discovery: cutoff, decision: cutoff };
      // A limit sweeps part of what is due and says there is more.
      const first = await store.sweepItems({
        expiredBefore: iso(),
        createdBefore,
        mode: 'delete',
        limit: 2,
        now: iso(),
      });
      expect(first).toEqual({ expired: 0, aged: 2, archived: 0, more: true });
      const second = await store.sweepItems({
        expiredBefore: iso(),
        createdBefore,
        mode: 'delete',
        limit: 100,
        now: iso(),
      });
      expect(second).toEqual({ expired: 0, aged: 1, archived: 0, more: false });
      const left = await store.listItems(acme, { limit: 100, includeSuperseded: true });
      // Kept: the current decision and the key holder (until superseded), the alert (no
      // retention given for alerts) and anything younger than the cutoff.
      expect(left.map((item) => item.id).sort()).toEqual(
        [current.id, knowledge.id, oldAlert.id, fresh.id].sort(),
      );
      for (const gone of [oldStatus, oldDiscovery, replaced]) {
        expect(await store.getItem(acme, gone.id)).toBeNull();
      }
      // A decision ages once superseded.
      const newer = await h.write({
        type: 'decision',
        title: 'use PostgreSQL 17',
        supersedes: current.id,
      });
      const later = { decision: iso(1) };
      const third = await store.sweepItems({
        expiredBefore: iso(),
        createdBefore: later,
        mode: 'delete',
        limit: 100,
        now: iso(),
      });
      expect(third.aged).toBe(1);
      expect(await store.getItem(acme, current.id)).toBeNull();
      expect(await store.getItem(acme, newer.id)).not.toBeNull();
    },

    async 'sweep-archive'() {
      const store = h.store();
      const shared = await h.write({
        title: 'shared',
        expiresAfterSeconds: 60,
        relevanceTags: ['ops'],
      });
      const secret = await h.write({
        title: 'mine only',
        visibility: 'private',
        expiresAfterSeconds: 60,
      });
      const old = await h.write({ type: 'status', title: 'old' });
      await h.write({ title: 'other team', expiresAfterSeconds: 60 }, globex);
      h.advance(DAY);
      const result = await store.sweepItems({
        expiredBefore: iso(),
        createdBefore: { status: iso(-HOUR) },
        mode: 'archive',
        limit: 100,
        now: iso(),
      });
      expect(result).toEqual({ expired: 3, aged: 1, archived: 4, more: false });
      const mine = await store.listArchivedItems(acme, { limit: 10 });
      expect(mine.map((entry) => [entry.item.title, entry.reason])).toEqual([
        ['old', 'retention'],
        ['mine only', 'expired'],
        ['shared', 'expired'],
      ]);
      expect(mine[2]?.item).toEqual(shared);
      expect(mine[0]?.archivedAt).toBe(iso());
      expect(mine[0]?.item.id).toBe(old.id);
      // Private items stay with their runtime; teams stay apart; pages go back in time.
      const theirs = await store.listArchivedItems(acmeChat, { limit: 10 });
      expect(theirs.map((entry) => entry.item.id)).not.toContain(secret.id);
      expect(theirs).toHaveLength(2);
      expect(
        (await store.listArchivedItems(globex, { limit: 10 })).map((entry) => entry.item.title),
      ).toEqual(['other team']);
      const page = await store.listArchivedItems(acme, {
        limit: 1,
        beforeArchiveId: mine[1]?.archiveId ?? 0,
      });
      expect(page.map((entry) => entry.item.title)).toEqual(['shared']);
      expect(await store.getItem(acme, shared.id)).toBeNull();
    },

    async 'expire-key'() {
      const store = h.store();
      const key = 'resource/runbooks/deploy';
      const v1 = await h.write({ title: 'deploy v1', content: 'harbour crane', key });
      const v2 = await h.write({ title: 'deploy v2', content: 'harbour crane', key });
      const v3 = await h.write({ title: 'deploy v3', key });
      const theirs = await h.write({ title: 'globex deploy', key }, globex);
      const chat = await h.write(
        { title: 'chat only', key: 'resource/z', visibility: 'private' },
        acmeChat,
      );
      const through = { at: iso(), throughSeq: v2.seq };
      // Up to the sequence given, superseded values included; a later value keeps its expiry.
      expect(await store.expireKey(acme, key, through)).toBe(2);
      const left = await store.listItems(acme, { key, includeSuperseded: true, limit: 10 });
      expect(left.map((item) => item.id)).toEqual([v3.id]);
      expect(await store.getItem(acme, v1.id)).toBeNull();
      expect(await store.searchItems(acme, { query: 'harbour crane', limit: 10 })).toEqual([]);
      expect(await store.expireKey(acme, key, { at: iso(), throughSeq: v3.seq })).toBe(1);
      expect(await store.expireKey(acme, key, { at: iso(), throughSeq: v3.seq })).toBe(0);
      expect(await store.listItems(acme, { key, includeSuperseded: true, limit: 10 })).toEqual([]);
      // Another team's holder and another runtime's private item are not the caller's to expire.
      expect(await store.getItem(globex, theirs.id)).not.toBeNull();
      expect(await store.expireKey(acme, 'resource/z', { at: iso(), throughSeq: chat.seq })).toBe(
        0,
      );
      expect(await store.getItem(acmeChat, chat.id)).not.toBeNull();
      // The sweep takes them out like any expired item.
      h.advance(1);
      const swept = await store.sweepItems({
        expiredBefore: iso(),
        mode: 'delete',
        limit: 100,
        now: iso(),
      });
      expect(swept.expired).toBe(3);
      // A value written after is a fresh one.
      const next = await h.write({ title: 'deploy v4', key });
      expect(next.supersedes).toBeNull();
      expect((await store.listItems(acme, { key, limit: 1 }))[0]?.id).toBe(next.id);
    },
  };
}
