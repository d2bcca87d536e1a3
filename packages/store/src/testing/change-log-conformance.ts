import { expect } from 'vitest';
import type { ConformanceHarness } from './conformance-harness.js';
import { acmeChat, globex } from './conformance-harness.js';

// The change feed: gapless sequence numbers and readChanges (see runStoreConformance, which
// runs these).

export const CHANGE_LOG_CASES = ['gapless-sequence', 'change-feed'] as const;

export type ChangeLogCase = (typeof CHANGE_LOG_CASES)[number];

export function changeLogCases(h: ConformanceHarness): Record<ChangeLogCase, () => Promise<void>> {
  const { write } = h;
  return {
    async 'gapless-sequence'() {
      const store = h.store();
      const first = await write({ title: 'one' });
      const second = await write({ title: 'two' });
      await store.consumeItem(acmeChat, first.id);
      const third = await write({ title: 'three', supersedes: second.id });
      expect(second.seq).toBe(first.seq + 1);
      // consumption took one seq, the new item one, the supersession one.
      expect(third.seq).toBe(second.seq + 2);
      expect(await store.latestSeq()).toBe(third.seq + 1);
      const changes = await store.readChanges({ afterSeq: 0, limit: 100 });
      expect(changes.map((change) => change.seq)).toEqual([1, 2, 3, 4, 5]);
      expect(changes.map((change) => change.kind)).toEqual([
        'added',
        'added',
        'consumed',
        'added',
        'superseded',
      ]);
    },
    async 'change-feed'() {
      const store = h.store();
      const a = await write({ title: 'a' });
      await write({ title: 'g' }, globex);
      const b = await write({ title: 'b' });
      const all = await store.readChanges({ afterSeq: 0, limit: 10 });
      expect(all.map((change) => change.item.title)).toEqual(['a', 'g', 'b']);
      const acmeOnly = await store.readChanges({ afterSeq: 0, limit: 10, teamId: 'acme' });
      expect(acmeOnly.map((change) => change.item.id)).toEqual([a.id, b.id]);
      const resumed = await store.readChanges({ afterSeq: a.seq, limit: 1 });
      expect(resumed.map((change) => change.seq)).toEqual([a.seq + 1]);
      expect(await store.readChanges({ afterSeq: b.seq, limit: 10 })).toEqual([]);
    },
  };
}
