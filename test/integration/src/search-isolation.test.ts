import type { TestHub } from '@ctxbus/test-kit';
import { call } from '@ctxbus/test-kit';
import { storeUrl, withPostgres } from '@ctxbus/test-kit/postgres';
import { beforeAll, describe, expect, it } from 'vitest';
import { startInProcessServe, useInProcessHub } from './in-process-serve.ts';

// Search leaks nothing across teams or runtimes, through the API on both stores: a team's
// searches on a hub that also holds other teams' items and another runtime's private items
// (with the same words, in the same threads) answer exactly as on a hub holding the team's
// items alone. Before, scores used statistics of the whole hub: a team could tell from its
// own scores whether a word appeared in items it cannot see.

const WORDS = ['deploy', 'pipeline', 'database', 'migration', 'latency', 'invoice', 'rollback'];

function words(seed: number, count: number, skew: number): string {
  return Array.from({ length: count }, (_, index) => {
    const x = ((seed * 7919 + index * 104_729) % 1000) / 1000;
    return WORDS[Math.floor(x ** skew * WORDS.length)];
  }).join(' ');
}

const ours = Array.from({ length: 60 }, (_, index) => ({
  id: `0192f000-0000-7000-8000-${String(index).padStart(12, '0')}`,
  type: 'discovery',
  title: words(index, 2, 1),
  content: words(index + 100, 3 + (index % 8), 1),
  visibility: index % 6 === 0 ? 'private' : 'team',
  source: { threadId: `thread-${index % 3}` },
}));

const noise = Array.from({ length: 90 }, (_, index) => ({
  type: 'discovery',
  title: `${words(index + 500, 2, 3)} secretword`,
  content: words(index + 900, 25 + (index % 30), 3),
  visibility: index % 2 === 0 ? 'private' : 'team',
  source: { threadId: `thread-${index % 3}` },
}));

const QUESTIONS = [
  'when do we deploy the pipeline?',
  'database migration latency',
  'invoice rollback',
  'secretword',
  'deploy database invoice rollback latency',
];

function defineSearchIsolation(name: string, start: (label: string) => Promise<TestHub>) {
  describe(`search isolation (${name})`, () => {
    const clean = useInProcessHub({
      start: () => start('clean'),
      tokens: { clean: ['acme', 'claude-code'] },
    });
    const noisy = useInProcessHub({
      start: () => start('noisy'),
      tokens: {
        noisy: ['acme', 'claude-code'],
        noisyChat: ['acme', 'openclaw'],
        noisyGlobex: ['globex', 'web'],
      },
    });

    beforeAll(async () => {
      const write = async (hub: TestHub, token: string, items: readonly object[]) => {
        const response = await call(hub.url, 'POST', '/api/context', { token, body: { items } });
        expect(response.status, JSON.stringify(response.body)).toBe(201);
      };
      await write(clean, clean.tokens.clean, ours);
      // Interleaved, so that even the sequence numbers differ.
      for (let part = 0; part < 3; part++) {
        await write(noisy, noisy.tokens.noisyGlobex, noise.slice(part * 30, part * 30 + 15));
        await write(noisy, noisy.tokens.noisy, ours.slice(part * 20, part * 20 + 20));
        await write(
          noisy,
          noisy.tokens.noisyChat,
          noise.slice(part * 30 + 15, part * 30 + 30).map((item) => ({
            ...item,
            visibility: 'private',
          })),
        );
      }
    });

    it('answers a team exactly as if the items it cannot see were not there', async () => {
      const search = async (hub: TestHub, token: string, query: string) => {
        const response = await call(hub.url, 'POST', '/api/context/search', {
          token,
          body: { query, limit: 20 },
        });
        expect(response.status).toBe(200);
        return (
          response.body.results as { item: { id: string }; score: number; highlight: string }[]
        ).map(({ item, score, highlight }) => ({ id: item.id, score, highlight }));
      };
      for (const query of QUESTIONS) {
        const want = await search(clean, clean.tokens.clean, query);
        expect(await search(noisy, noisy.tokens.noisy, query), query).toEqual(want);
      }
      // The comparison means something: acme finds its items; the others find theirs.
      expect((await search(clean, clean.tokens.clean, QUESTIONS[0] ?? '')).length).toBe(20);
      expect(await search(noisy, noisy.tokens.noisy, 'secretword')).toEqual([]);
      expect((await search(noisy, noisy.tokens.noisyGlobex, 'secretword')).length).toBeGreaterThan(
        0,
      );
      expect((await search(noisy, noisy.tokens.noisyChat, 'secretword')).length).toBeGreaterThan(0);
    });
  });
}

defineSearchIsolation('embedded store', () => startInProcessServe());

await withPostgres('search isolation on PostgreSQL', (url, schemas) => {
  defineSearchIsolation('PostgreSQL', (label) =>
    startInProcessServe({ store: storeUrl(url, schemas.next(`search_${label}`)) }),
  );
});
