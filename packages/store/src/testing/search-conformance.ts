import type { Viewer } from '@ctxbus/core';
import { expect } from 'vitest';
import type { SearchHit, Store } from '../store.js';
import type { ConformanceHarness } from './conformance-harness.js';
import { acme, acmeChat, globex, seededRandom } from './conformance-harness.js';

// Search: ranking, filters, hostile input, and statistics that leak nothing across teams or
// runtimes (see runStoreConformance, which runs these).

export const SEARCH_CASES = [
  'search-ranking',
  'search-filters',
  'search-hostile-input',
  'search-crowded-index',
  'search-visible-statistics',
] as const;

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
  const { write, prepared } = h;
  return {
    async 'search-ranking'() {
      const store = h.store();
      await write({ title: 'Lunch', content: 'We had pizza for lunch on Friday.' });
      await write({
        title: 'Database choice',
        content: 'We chose SQLite with WAL for the embedded store.',
      });
      await write({ title: 'Deploy', content: 'The deploy pipeline runs on Fridays.' });
      const hits = await store.searchItems(acme, {
        query: 'Which database did we choose for the embedded store?',
        limit: 3,
      });
      expect(hits[0]?.item.title).toBe('Database choice');
      expect(hits[0]?.highlight).toContain('**');
      expect(hits[0]?.score).toBeGreaterThan(hits[1]?.score ?? Number.NEGATIVE_INFINITY);
      const tagged = await write({
        title: 'Tagged',
        content: 'nothing here',
        relevanceTags: ['kubernetes'],
      });
      const byTag = await store.searchItems(acme, { query: 'kubernetes', limit: 3 });
      expect(byTag.map((hit) => hit.item.id)).toEqual([tagged.id]);
    },
    async 'search-filters'() {
      const store = h.store();
      await write({ type: 'decision', title: 'Cache with Redis' });
      await write({
        type: 'discovery',
        title: 'Redis is slow on this box',
        relevanceTags: ['perf'],
      });
      const decisions = await store.searchItems(acme, {
        query: 'redis',
        limit: 10,
        types: ['decision'],
      });
      expect(decisions.map((hit) => hit.item.title)).toEqual(['Cache with Redis']);
      const perf = await store.searchItems(acme, { query: 'redis', limit: 10, tags: ['perf'] });
      expect(perf.map((hit) => hit.item.title)).toEqual(['Redis is slow on this box']);
      expect(await store.searchItems(acme, { query: 'redis', limit: 1 })).toHaveLength(1);
    },
    async 'search-hostile-input'() {
      const store = h.store();
      await write({ title: 'Quotes "inside" and NEAR(x y) AND stuff', content: 'col:umn * - ^' });
      for (const query of [
        '"',
        '""',
        'NEAR(',
        'a AND',
        'title:x',
        '*',
        '-x',
        '^start',
        '(((',
        "it's",
        '🙂 ünïcödé',
        'the of and',
        '   ',
      ]) {
        const hits = await store.searchItems(acme, { query, limit: 5 });
        expect(Array.isArray(hits)).toBe(true);
      }
      expect(await store.searchItems(acme, { query: 'the of and', limit: 5 })).toEqual([]);
      const quoted = await store.searchItems(acme, { query: 'NEAR stuff', limit: 5 });
      expect(quoted).toHaveLength(1);
    },
    async 'search-crowded-index'() {
      const store = h.store();
      // Another team's many better matches must not crowd out this team's one match, nor may
      // a narrow filter come back empty when matching items exist.
      const crowd = Array.from({ length: 260 }, (_, index) =>
        prepared(
          {
            type: 'discovery',
            title: `deploy pipeline deploy ${index}`,
            content: 'deploy deploy deploy',
          },
          globex,
        ),
      );
      await store.writeItems(crowd);
      const mine = await write({
        type: 'decision',
        title: 'We deploy on Tuesdays',
        content: 'after the standup',
      });
      const hits = await store.searchItems(acme, { query: 'when do we deploy?', limit: 5 });
      expect(hits.map((hit) => hit.item.id)).toEqual([mine.id]);
      const ownCrowd = Array.from({ length: 260 }, (_, index) =>
        prepared({
          type: 'status',
          title: `deploy status ${index}`,
          content: 'deploy deploy deploy',
        }),
      );
      await store.writeItems(ownCrowd);
      const decisions = await store.searchItems(acme, {
        query: 'deploy',
        limit: 5,
        types: ['decision'],
      });
      expect(decisions.map((hit) => hit.item.id)).toEqual([mine.id]);
    },
    async 'search-visible-statistics'() {
      // acme's items (team-wide, and private to acme's claude-code), identical in both stores.
      const random = seededRandom(7);
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
      const noiseRandom = seededRandom(11);
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
        await clean.writeItems(ours.map(({ input, viewer }) => prepared(input, viewer)));
        const expiring = Array.from({ length: 30 }, () =>
          prepared(
            { title: text(random, 2, 2), content: text(random, 12, 2), expiresAfterSeconds: 60 },
            acme,
          ),
        );
        await noisy.writeItems(
          noise.slice(0, 50).map(({ input, viewer }) => prepared(input, viewer)),
        );
        await noisy.writeItems(expiring);
        for (let start = 0; start < ours.length; start += 30) {
          await noisy.writeItems(
            ours.slice(start, start + 30).map(({ input, viewer }) => prepared(input, viewer)),
          );
          const from = 50 + (start / 30) * 25;
          await noisy.writeItems(
            noise.slice(from, from + 25).map(({ input, viewer }) => prepared(input, viewer)),
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
