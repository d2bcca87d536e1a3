import type { ContextItemInput, NewContextItem, Viewer } from '@ctxbus/core';
import { prepareItem } from '@ctxbus/core';
import { expect } from 'vitest';
import type { SearchHit, Store } from '../store.js';
import type { ConformanceHarness } from './conformance-harness.js';
import { acme, acmeChat, globex } from './conformance-harness.js';

// The search-isolation half of the store contract (see runStoreConformance, which runs these).

export const SEARCH_CASES = ['search-visible-statistics'] as const;

export type SearchCase = (typeof SEARCH_CASES)[number];

export interface SearchHarness extends ConformanceHarness {
  /** Another fresh, empty store on the same clock (closed by the case). */
  freshStore(): Promise<Store>;
}

/** A private item of acme's own runtime: the viewer sees it, so it counts in its statistics. */
const acmeMine = acme;
/** A runtime of acme whose private items acme's claude-code must not feel. */
const acmeOther: Viewer = acmeChat;

const WORDS = [
  'deploy',
  'pipeline',
  'database',
  'postgres',
  'migration',
  'tuesday',
  'rollback',
  'latency',
  'cache',
  'invoice',
  'customer',
  'schema',
  'replica',
  'budget',
  'incident',
  'review',
];

const QUESTIONS = [
  'when do we deploy the pipeline?',
  'which database and schema migration?',
  'latency of the cache replica',
  'customer invoice budget',
  'incident rollback review on tuesday',
  'postgres',
  'lighthouse',
  'deploy database latency customer incident',
];

/** A small seeded PRNG, so the datasets are the same on every run and backend. */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function text(random: () => number, words: number, bias: number): string {
  // bias > 1 skews towards the first words of the list (another population's statistics).
  return Array.from(
    { length: words },
    () => WORDS[Math.floor(random() ** bias * WORDS.length)] ?? 'deploy',
  ).join(' ');
}

/** What a caller can observe of a search: ids, scores and highlights, in order. */
function observed(hits: readonly SearchHit[]) {
  return hits.map((hit) => ({ id: hit.item.id, score: hit.score, highlight: hit.highlight }));
}

export function searchCases(h: SearchHarness): Record<SearchCase, () => Promise<void>> {
  const prepare = (input: Partial<ContextItemInput>, viewer: Viewer): NewContextItem =>
    prepareItem({ type: 'discovery', title: 'untitled', ...input }, viewer, { now: h.now() });
  return {
    async 'search-visible-statistics'() {
      // acme's items (team-wide, and private to acme's claude-code), identical in both stores.
      const random = seeded(7);
      const ours = Array.from({ length: 90 }, (_, index) => ({
        viewer: acmeMine,
        input: {
          id: `0192f000-0000-7000-8000-${String(index).padStart(12, '0')}`,
          title: text(random, 2, 1),
          content: text(random, 4 + (index % 9), 1),
          relevanceTags: index % 5 === 0 ? ['ops'] : [],
          visibility: index % 7 === 0 ? ('private' as const) : ('team' as const),
          source: { threadId: `thread-${index % 4}` },
        },
      }));
      // What acme cannot see: another team's items and another acme runtime's private items,
      // with other word frequencies and lengths, in the same threads, plus words of their own.
      const noiseRandom = seeded(11);
      const noise = Array.from({ length: 150 }, (_, index) => ({
        viewer: index % 3 === 0 ? acmeOther : globex,
        input: {
          title: `${text(noiseRandom, 3, 3)} lighthouse`,
          content: text(noiseRandom, 20 + (index % 40), 3),
          relevanceTags: ['ops'],
          visibility: index % 3 === 0 ? ('private' as const) : ('team' as const),
          source: { threadId: `thread-${index % 4}` },
        },
      }));

      const clean = h.store();
      const noisy = await h.freshStore();
      try {
        // Clean: acme's items alone. Noisy: the same, interleaved with the noise (so even
        // their sequence numbers differ), and acme items that expire and are swept before
        // the searches: a store must take swept items out of its statistics.
        await clean.writeItems(ours.map(({ input, viewer }) => prepare(input, viewer)));
        const expiring = Array.from({ length: 30 }, () =>
          prepare(
            { title: text(random, 2, 2), content: text(random, 12, 2), expiresAfterSeconds: 60 },
            acme,
          ),
        );
        await noisy.writeItems(
          noise.slice(0, 50).map(({ input, viewer }) => prepare(input, viewer)),
        );
        await noisy.writeItems(expiring);
        for (let start = 0; start < ours.length; start += 30) {
          await noisy.writeItems(
            ours.slice(start, start + 30).map(({ input, viewer }) => prepare(input, viewer)),
          );
          const from = 50 + (start / 30) * 25;
          await noisy.writeItems(
            noise.slice(from, from + 25).map(({ input, viewer }) => prepare(input, viewer)),
          );
        }
        h.advance(61_000);
        const sweep = await noisy.sweepItems({
          expiredBefore: h.now().toISOString(),
          mode: 'delete',
          limit: 1000,
          now: h.now().toISOString(),
        });
        expect(sweep.expired).toBe(expiring.length);

        for (const query of QUESTIONS) {
          for (const limit of [5, 20]) {
            const want = await clean.searchItems(acme, { query, limit });
            const got = await noisy.searchItems(acme, { query, limit });
            expect(observed(got), `"${query}" (limit ${limit})`).toEqual(observed(want));
          }
        }
        // The case means something: acme finds its own items, and the noise moves globex.
        const found = await clean.searchItems(acme, { query: QUESTIONS[0] ?? '', limit: 20 });
        expect(found.length).toBe(20);
        expect(await clean.searchItems(acme, { query: 'lighthouse', limit: 5 })).toEqual([]);
        expect(
          (await noisy.searchItems(globex, { query: 'lighthouse', limit: 5 })).length,
        ).toBeGreaterThan(0);
        // A filter sees the same.
        const tagged = { query: 'deploy pipeline', limit: 10, tags: ['ops'] };
        expect(observed(await noisy.searchItems(acme, tagged))).toEqual(
          observed(await clean.searchItems(acme, tagged)),
        );
      } finally {
        await noisy.close();
      }
    },
  };
}
