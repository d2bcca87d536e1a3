import type { ContextItem, Viewer } from '@ctxbus/core';
import { prepareItem } from '@ctxbus/core';
import { expect } from 'vitest';
import type { Store, VectorSearchOptions } from '../store.js';
import type { ConformanceHarness } from './conformance-harness.js';
import { acme, acmeChat, globex } from './conformance-harness.js';

// The vector half of the store contract (see runStoreConformance, which runs these).

export const VECTOR_CASES = [
  'vectors-to-embed',
  'vector-ranking',
  'vector-visibility',
  'vector-lifecycle',
] as const;

export type VectorCase = (typeof VECTOR_CASES)[number];

const MODEL = 'test-model';

const vec = (...values: number[]) => new Float32Array(values);

export function vectorCases(h: ConformanceHarness): Record<VectorCase, () => Promise<void>> {
  const ids = (hits: { item: ContextItem }[]) => hits.map((hit) => hit.item.title);
  return {
    async 'vectors-to-embed'() {
      const store = h.store();
      expect(['exact', 'pgvector']).toContain(store.info.vectorIndex);
      const first = await h.write({
        title: 'first',
        content: 'body one',
        summary: 'short',
        relevanceTags: ['alpha'],
      });
      await h.write({ title: 'private', visibility: 'private' });
      await h.write({ title: 'brief', expiresAfterSeconds: 60 });
      const other = await h.write({ title: 'other team' }, globex);
      const refused = await h.write({ title: 'refused' });
      const pending = await store.itemsToEmbed(MODEL, { afterSeq: 0, limit: 10 });
      // Private items never leave their runtime, so they are never offered to a provider.
      expect(pending.map((source) => source.title)).toEqual([
        'first',
        'brief',
        'other team',
        'refused',
      ]);
      expect(pending[0]).toEqual({
        seq: first.seq,
        id: first.id,
        title: 'first',
        summary: 'short',
        content: 'body one',
        tags: ['alpha'],
      });
      // Paging by sequence, and limits.
      expect(
        (await store.itemsToEmbed(MODEL, { afterSeq: first.seq, limit: 1 })).map((s) => s.title),
      ).toEqual(['brief']);
      // Saved ones (and refused ones, marked with an empty vector) are not offered again; a
      // vector for a sequence with no item is ignored.
      await store.saveVectors(MODEL, [
        { seq: first.seq, vector: vec(1, 0, 0) },
        { seq: other.seq, vector: vec(0, 1, 0) },
        { seq: refused.seq, vector: vec() },
        { seq: 999_999, vector: vec(1, 1, 1) },
      ]);
      h.advance(120_000);
      expect(
        (await store.itemsToEmbed(MODEL, { afterSeq: 0, limit: 10 })).map((s) => s.title),
      ).toEqual([]);
      // Another model has its own vectors.
      expect(
        (await store.itemsToEmbed('other-model', { afterSeq: 0, limit: 10 })).map((s) => s.title),
      ).toEqual(['first', 'other team', 'refused']);
      // The refused item is never a hit.
      const hits = await store.vectorSearch(acme, {
        model: MODEL,
        vector: vec(1, 1, 1),
        limit: 10,
      });
      expect(ids(hits)).toEqual(['first']);
    },

    async 'vector-ranking'() {
      const store = h.store();
      const north = await h.write({ title: 'north', type: 'decision', scope: 'global' });
      const east = await h.write({ title: 'east', type: 'discovery', scope: 'space' });
      const northeast = await h.write({ title: 'northeast', type: 'discovery', scope: 'global' });
      const south = await h.write({ title: 'south', type: 'status', scope: 'global' });
      const short = await h.write({ title: 'two dims', type: 'discovery' });
      // Saved at any length; stored at unit length, so scores are cosines.
      await store.saveVectors(MODEL, [
        { seq: north.seq, vector: vec(0, 10, 0) },
        { seq: east.seq, vector: vec(3, 0, 0) },
        { seq: northeast.seq, vector: vec(1, 1, 0) },
        { seq: south.seq, vector: vec(0, -2, 0) },
        { seq: short.seq, vector: vec(0, 1) },
      ]);
      const hits = await store.vectorSearch(acme, {
        model: MODEL,
        vector: vec(0, 5, 0),
        limit: 10,
      });
      // Vectors of another length are not comparable and never returned.
      expect(ids(hits)).toEqual(['north', 'northeast', 'east', 'south']);
      expect(hits[0]?.score).toBeCloseTo(1, 5);
      expect(hits[1]?.score).toBeCloseTo(Math.SQRT1_2, 5);
      expect(hits[2]?.score).toBeCloseTo(0, 5);
      expect(hits[3]?.score).toBeCloseTo(-1, 5);
      expect(hits[0]?.item).toEqual(await store.getItem(acme, north.id));
      expect(
        ids(await store.vectorSearch(acme, { model: MODEL, vector: vec(0, 1, 0), limit: 2 })),
      ).toEqual(['north', 'northeast']);
      // The same filters as every read.
      expect(
        ids(
          await store.vectorSearch(acme, {
            model: MODEL,
            vector: vec(0, 1, 0),
            limit: 10,
            types: ['discovery'],
            scopes: ['global'],
          }),
        ),
      ).toEqual(['northeast']);
      expect(
        ids(
          await store.vectorSearch(acme, { model: 'other-model', vector: vec(0, 1, 0), limit: 10 }),
        ),
      ).toEqual([]);
      expect(
        ids(await store.vectorSearch(acme, { model: MODEL, vector: vec(0, 1), limit: 10 })),
      ).toEqual(['two dims']);
      // A query with no direction finds nothing rather than failing.
      expect(
        await store.vectorSearch(acme, { model: MODEL, vector: vec(0, 0, 0), limit: 10 }),
      ).toEqual([]);
    },

    async 'vector-visibility'() {
      const store = h.store();
      const shared = await h.write({ title: 'shared' });
      const mine = await h.write({ title: 'mine', visibility: 'private' });
      const theirs = await h.write({ title: 'theirs' }, globex);
      const old = await h.write({ title: 'old rule', type: 'decision', key: 'rules/x' });
      const current = await h.write({ title: 'new rule', type: 'decision', key: 'rules/x' });
      const brief = await h.write({ title: 'brief', expiresAfterSeconds: 60 });
      // Even a vector stored for a private item (say, by an older ctxbus) stays private.
      await store.saveVectors(
        MODEL,
        [shared, mine, theirs, old, current, brief].map((item) => ({
          seq: item.seq,
          vector: vec(1, 0),
        })),
      );
      const search = (viewer: Viewer, includeSuperseded = false) =>
        store.vectorSearch(viewer, {
          model: MODEL,
          vector: vec(1, 0),
          limit: 10,
          includeSuperseded,
        });
      expect(ids(await search(acme)).sort()).toEqual(['brief', 'mine', 'new rule', 'shared']);
      expect(ids(await search(acmeChat)).sort()).toEqual(['brief', 'new rule', 'shared']);
      expect(ids(await search(acmeChat, true)).sort()).toEqual([
        'brief',
        'new rule',
        'old rule',
        'shared',
      ]);
      expect(ids(await search(globex))).toEqual(['theirs']);
      h.advance(120_000);
      expect(ids(await search(acmeChat)).sort()).toEqual(['new rule', 'shared']);
    },

    async 'vector-lifecycle'() {
      const store = h.store();
      const brief = await h.write({ title: 'brief', expiresAfterSeconds: 60 });
      const kept = await h.write({ title: 'kept' });
      await store.saveVectors(MODEL, [
        { seq: brief.seq, vector: vec(1, 0) },
        { seq: kept.seq, vector: vec(1, 0) },
      ]);
      // A search first, so that a store holding vectors in memory has loaded both.
      expect(
        ids(await store.vectorSearch(acme, { model: MODEL, vector: vec(1, 0), limit: 10 })).sort(),
      ).toEqual(['brief', 'kept']);
      h.advance(120_000);
      const now = h.now().toISOString();
      await store.sweepItems({ expiredBefore: now, mode: 'delete', limit: 100, now });
      // The swept item's vector went with it; saving one for it again is ignored.
      await store.saveVectors(MODEL, [{ seq: brief.seq, vector: vec(1, 0) }]);
      expect(
        ids(
          await store.vectorSearch(acme, {
            model: MODEL,
            vector: vec(1, 0),
            limit: 10,
            includeSuperseded: true,
          }),
        ),
      ).toEqual(['kept']);
    },
  };
}

/** `count` vectors of `dims` numbers in -0.5..0.5, the same for the same seed. */
export function randomVectors(count: number, dims: number, seed: number): Float32Array[] {
  let state = seed;
  const next = () => {
    state = (state * 48271) % 2147483647;
    return state / 2147483647 - 0.5;
  };
  return Array.from({ length: count }, () => Float32Array.from({ length: dims }, next));
}

/**
 * A store's in-memory exact scan (`memory`) must rank as its SQL scan (`scan`: the same
 * database opened with `vectorMemoryMb: 0`) does, filters included, and see vectors another
 * connection (`writer`) saves after it loaded. Needs an empty database.
 */
export async function expectVectorScansAgree(stores: {
  memory: Store;
  scan: Store;
  writer: Store;
}): Promise<void> {
  const { memory, scan, writer } = stores;
  const types = ['status', 'discovery', 'decision'] as const;
  const outcomes = await writer.writeItems(
    Array.from({ length: 300 }, (_, index) =>
      // One decision in 100: a selective filter needs more than the first candidates.
      prepareItem({ type: types[index % 100 === 0 ? 2 : index % 2], title: `v${index}` }, acme, {
        now: new Date(),
      }),
    ),
  );
  const vectors = randomVectors(300, 32, 3);
  const save = (from: number, to: number) =>
    writer.saveVectors(
      'm',
      outcomes.slice(from, to).map(({ item }, index) => ({
        seq: item.seq,
        vector: vectors[from + index] as Float32Array,
      })),
    );
  await save(0, 200);
  const query = randomVectors(1, 32, 99)[0] as Float32Array;
  const compare = async (filter: Partial<VectorSearchOptions>) => {
    const options = { model: 'm', vector: query, limit: 10, ...filter };
    const fromMemory = await memory.vectorSearch(acme, options);
    const fromScan = await scan.vectorSearch(acme, options);
    expect(fromMemory.map((hit) => hit.item)).toEqual(fromScan.map((hit) => hit.item));
    for (const [index, hit] of fromMemory.entries())
      expect(hit.score).toBeCloseTo(fromScan[index]?.score ?? Number.NaN, 5);
    return fromMemory;
  };
  expect(await compare({})).toHaveLength(10);
  expect(await compare({ types: ['decision'] })).toHaveLength(2);
  expect(await compare({ types: ['discovery'], limit: 100 })).toHaveLength(100);
  expect(await compare({ scopeKey: 'task:none' })).toEqual([]);
  // Another team sees none of these vectors.
  expect(await memory.vectorSearch(globex, { model: 'm', vector: query, limit: 10 })).toEqual([]);
  // Vectors saved after the memory loaded are found on the next search.
  await save(200, 300);
  expect(await compare({ types: ['decision'] })).toHaveLength(3);
  expect(await compare({ limit: 100 })).toHaveLength(100);
}
