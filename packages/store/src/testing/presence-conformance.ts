import { expect } from 'vitest';
import type { PresenceAnnouncement, Store } from '../store.js';
import type { ConformanceHarness } from './conformance-harness.js';
import { rejectsWith } from './conformance-harness.js';

// Presence: announce, renew, leave, expiry by the caller's clock, the team's cap, and what two
// stores on one database see (see runStoreConformance, which runs these).

export const PRESENCE_CASES = [
  'presence-announce',
  'presence-limit',
  'presence-siblings',
  'presence-concurrent-cap',
] as const;

export type PresenceCase = (typeof PRESENCE_CASES)[number];

export interface PresenceHarness extends ConformanceHarness {
  /** A second store over the same database (closed by the caller); absent: the same store. */
  sibling?(): Promise<Store>;
}

export function presenceCases(h: PresenceHarness): Record<PresenceCase, () => Promise<void>> {
  const at = (offsetMs = 0) => new Date(h.now().getTime() + offsetMs).toISOString();
  const announcement = (
    instanceId: string,
    fields: Partial<PresenceAnnouncement> = {},
  ): PresenceAnnouncement => ({
    teamId: 'acme',
    runtime: 'claude-code',
    instanceId,
    kind: 'worker',
    capabilities: ['code_execution'],
    capacity: 1,
    now: at(),
    expiresAt: at(30_000),
    ...fields,
  });
  const ids = async (store: Store, teamId = 'acme') =>
    (await store.listPresence(teamId, at())).map((entry) => entry.instanceId);
  const withSibling = async (work: (other: Store) => Promise<void>) => {
    const other = h.sibling ? await h.sibling() : h.store();
    try {
      await work(other);
    } finally {
      if (other !== h.store()) await other.close();
    }
  };

  return {
    async 'presence-announce'() {
      const store = h.store();
      await store.announcePresence(announcement('w2', { capacity: 4 }), 10);
      await store.announcePresence(
        announcement('bot', { runtime: 'openclaw', kind: 'adapter', capabilities: [] }),
        10,
      );
      await store.announcePresence(announcement('w1', { expiresAt: at(10_000) }), 10);
      await store.announcePresence(announcement('w1', { teamId: 'globex', kind: 'adapter' }), 10);
      expect(await store.listPresence('acme', at())).toEqual([
        {
          instanceId: 'w1',
          runtime: 'claude-code',
          kind: 'worker',
          capabilities: ['code_execution'],
          capacity: 1,
          lastSeen: at(),
          expiresAt: at(10_000),
        },
        expect.objectContaining({ instanceId: 'w2', capacity: 4 }),
        expect.objectContaining({ instanceId: 'bot', runtime: 'openclaw', capabilities: [] }),
      ]);
      // Another runtime cannot take, renew or remove an instance id it does not hold.
      await rejectsWith(
        store.announcePresence(announcement('w1', { runtime: 'openclaw' }), 10),
        'conflict',
      );
      expect(await store.leavePresence('acme', 'openclaw', 'w1', at())).toBe(false);
      // A renewal moves the expiry; expiry follows the caller's clock.
      h.advance(5_000);
      await store.announcePresence(announcement('w1', { expiresAt: at(10_000) }), 10);
      h.advance(9_000);
      expect(await ids(store)).toEqual(['w1', 'w2', 'bot']);
      h.advance(1_000);
      expect(await ids(store)).toEqual(['w2', 'bot']);
      expect(await store.leavePresence('acme', 'claude-code', 'w1', at())).toBe(false);
      // A lapsed id is free for any runtime.
      await store.announcePresence(announcement('w1', { runtime: 'openclaw' }), 10);
      expect(await store.leavePresence('acme', 'claude-code', 'w2', at())).toBe(true);
      expect(await store.leavePresence('acme', 'claude-code', 'w2', at())).toBe(false);
      expect(await ids(store)).toEqual(['bot', 'w1']);
      expect(await ids(store, 'globex')).toEqual(['w1']);
      // The sweep deletes what has lapsed in every team.
      h.advance(30_000);
      expect(await store.sweepPresence(at())).toBe(3);
      expect(await store.sweepPresence(at())).toBe(0);
      expect(await ids(store)).toEqual([]);
    },

    async 'presence-limit'() {
      const store = h.store();
      await store.announcePresence(announcement('a', { expiresAt: at(5_000) }), 2);
      await store.announcePresence(announcement('b'), 2);
      await rejectsWith(store.announcePresence(announcement('c'), 2), 'limit_reached');
      // Renewing one already counted is no new instance; another team has its own cap.
      await store.announcePresence(announcement('b'), 2);
      await store.announcePresence(announcement('c', { teamId: 'globex' }), 2);
      // An expired instance no longer counts.
      h.advance(5_000);
      await store.announcePresence(announcement('c'), 2);
      expect(await ids(store)).toEqual(['b', 'c']);
    },

    async 'presence-siblings'() {
      const store = h.store();
      await withSibling(async (other) => {
        await store.announcePresence(announcement('laptop'), 10);
        expect(await ids(other)).toEqual(['laptop']);
        await rejectsWith(
          other.announcePresence(announcement('laptop', { runtime: 'openclaw' }), 10),
          'conflict',
        );
        await other.announcePresence(announcement('laptop', { expiresAt: at(60_000) }), 10);
        expect((await store.listPresence('acme', at()))[0]?.expiresAt).toBe(at(60_000));
        expect(await other.leavePresence('acme', 'claude-code', 'laptop', at())).toBe(true);
        expect(await ids(store)).toEqual([]);
      });
    },

    async 'presence-concurrent-cap'() {
      const CAP = 5;
      const store = h.store();
      await withSibling(async (other) => {
        const stores = [store, other];
        const outcomes = await Promise.allSettled(
          Array.from({ length: 24 }, (_, index) =>
            (stores[index % 2] as Store).announcePresence(announcement(`i${index}`), CAP),
          ),
        );
        const refused = outcomes.filter((outcome) => outcome.status === 'rejected');
        for (const outcome of refused) {
          expect((outcome.reason as { code?: string }).code).toBe('limit_reached');
        }
        expect(outcomes.length - refused.length).toBe(CAP);
        expect(await ids(other)).toHaveLength(CAP);
      });
    },
  };
}
