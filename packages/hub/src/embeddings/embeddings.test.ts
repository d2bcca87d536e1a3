import type { Viewer } from '@ctxbus/core';
import { prepareItem, silentLogger } from '@ctxbus/core';
import type { Store } from '@ctxbus/store';
import { openSqliteStore } from '@ctxbus/store';
import type { EmbeddingsServer } from '@ctxbus/test-kit';
import { startEmbeddingsServer, waitFor } from '@ctxbus/test-kit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mintToken } from '../auth.js';
import type { Hub } from '../create-hub.js';
import { createHub } from '../create-hub.js';
import { fuseRankings, vectorWeight } from '../search/hybrid-search.js';
import { BackgroundEmbedder, embeddingText } from './background-embedder.js';
import type { EmbeddingProvider } from './embedding-provider.js';
import { EmbeddingError, openAiEmbeddings } from './embedding-provider.js';
import type { EmbeddingsOptions } from './hub-embeddings.js';

const acme: Viewer = { teamId: 'acme', runtime: 'claude-code' };

let server: EmbeddingsServer;
let store: Store;

async function write(input: Record<string, unknown>, viewer: Viewer = acme) {
  const [outcome] = await store.writeItems([
    prepareItem({ type: 'discovery', title: 'untitled', ...input }, viewer, { now: new Date() }),
  ]);
  if (!outcome) throw new Error('no outcome');
  return outcome.item;
}

async function failure(promise: Promise<unknown>): Promise<EmbeddingError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(EmbeddingError);
    return error as EmbeddingError;
  }
  throw new Error('expected an EmbeddingError');
}

beforeEach(async () => {
  server = await startEmbeddingsServer({ apiKey: 'sk-test' });
  store = openSqliteStore({ path: ':memory:' });
});
afterEach(async () => {
  await store.close();
  await server.close();
});

describe('openAiEmbeddings (against a local server speaking the OpenAI embeddings API)', () => {
  it('sends model, inputs and dimensions with the key, and returns vectors in order', async () => {
    const provider = openAiEmbeddings({
      url: server.url,
      model: 'text-embedding-3-small',
      apiKey: 'sk-test',
      dimensions: 32,
    });
    expect(provider.label).toBe('text-embedding-3-small@32');
    const vectors = await provider.embed(['the car', 'a physician']);
    expect(vectors.map((vector) => Array.from(vector))).toEqual([
      server.embed('the car', 32),
      server.embed('a physician', 32),
    ]);
    expect(server.requests).toEqual([
      {
        model: 'text-embedding-3-small',
        inputs: ['the car', 'a physician'],
        dimensions: 32,
        authorization: 'Bearer sk-test',
      },
    ]);
    expect(await provider.embed([])).toEqual([]);
    expect(server.requests).toHaveLength(1);
  });

  it('tells refusals (the input) from transient failures (key, outage, unreachable)', async () => {
    const provider = openAiEmbeddings({ url: server.url, model: 'm', apiKey: 'sk-test' });
    server.refuseInputsContaining = 'forbidden';
    const refused = await failure(provider.embed(['fine', 'forbidden words']));
    expect(refused.refused).toBe(true);
    expect(refused.message).toMatch(/answered 400: .*refused by the test server/);
    server.failNext(1, 429);
    expect((await failure(provider.embed(['fine']))).refused).toBe(false);
    const badKey = openAiEmbeddings({ url: server.url, model: 'm', apiKey: 'sk-wrong' });
    const unauthorized = await failure(badKey.embed(['fine']));
    expect(unauthorized.refused).toBe(false);
    expect(unauthorized.message).toContain('answered 401');
    // The key never appears in messages.
    expect(unauthorized.message).not.toContain('sk-wrong');
    const gone = openAiEmbeddings({ url: 'http://127.0.0.1:9/v1', model: 'm', timeoutMs: 2000 });
    const unreachable = await failure(gone.embed(['fine']));
    expect(unreachable.refused).toBe(false);
    expect(unreachable.message).toMatch(
      /^cannot reach the embeddings API at http:\/\/127\.0\.0\.1:9/,
    );
  });

  it('refuses bad settings and bad responses clearly', async () => {
    expect(() => openAiEmbeddings({ url: 'ftp://x', model: 'm' })).toThrow();
    expect(() => openAiEmbeddings({ url: server.url, model: ' ' })).toThrow();
    const wrongPath = openAiEmbeddings({
      url: `${server.url}/nope`,
      model: 'm',
      apiKey: 'sk-test',
    });
    expect((await failure(wrongPath.embed(['x']))).message).toContain('answered 404');
  });
});

describe('BackgroundEmbedder', () => {
  const provider = (): EmbeddingProvider =>
    openAiEmbeddings({ url: server.url, model: 'm', apiKey: 'sk-test' });

  it('embeds team-visible items in batches, never private ones, and only once', async () => {
    for (let index = 0; index < 5; index++) await write({ title: `car ${index}` });
    await write({ title: 'my secret plan', visibility: 'private' });
    const embedder = new BackgroundEmbedder(store, provider(), silentLogger, { batchSize: 2 });
    embedder.wake();
    await embedder.idle();
    expect(server.requests.map((request) => request.inputs.length)).toEqual([2, 2, 1]);
    expect(JSON.stringify(server.requests)).not.toContain('secret');
    expect(embedder.status()).toMatchObject({
      label: 'm',
      embedded: 5,
      refused: 0,
      lastError: null,
    });
    expect(await store.itemsToEmbed('m', { afterSeq: 0, limit: 10 })).toEqual([]);
    // New writes only.
    await write({ title: 'one more' });
    embedder.wake();
    await embedder.idle();
    expect(server.inputCount()).toBe(6);
    await embedder.close();
  });

  it('does not rescan what has its vectors on every wake', async () => {
    for (let index = 0; index < 3; index++) await write({ title: `car ${index}` });
    const scans: number[] = [];
    const watched: Store = Object.create(store, {
      itemsToEmbed: {
        value: (model: string, options: { afterSeq: number; limit: number }) => {
          scans.push(options.afterSeq);
          return store.itemsToEmbed(model, options);
        },
      },
    });
    const embedder = new BackgroundEmbedder(watched, provider(), silentLogger);
    embedder.wake();
    await embedder.idle();
    const latest = await store.latestSeq();
    scans.length = 0;
    embedder.wake();
    await embedder.idle();
    expect(scans).toEqual([latest]);
    await embedder.close();
  });

  it('embeds title, summary, content and tags', () => {
    expect(
      embeddingText({
        seq: 1,
        id: 'x',
        title: 'Title',
        summary: '',
        content: 'Body',
        tags: ['a', 'b'],
      }),
    ).toBe('Title\nBody\na b');
  });

  it('retries a failing provider with backoff, losing nothing', async () => {
    for (let index = 0; index < 3; index++) await write({ title: `item ${index}` });
    server.failNext(2, 503);
    const embedder = new BackgroundEmbedder(store, provider(), silentLogger, {
      backoffMs: 20,
      maxBackoffMs: 40,
    });
    embedder.wake();
    await expect.poll(() => embedder.status().lastError).toContain('answered 503');
    await expect.poll(() => embedder.status().embedded).toBe(3);
    await embedder.idle();
    expect(embedder.status().lastError).toBeNull();
    expect(server.requests).toHaveLength(3);
    await embedder.close();
  });

  it('marks items the provider refuses and embeds the rest of their batch', async () => {
    await write({ title: 'fine one' });
    await write({ title: 'poison pill' });
    await write({ title: 'fine two' });
    server.refuseInputsContaining = 'poison';
    const embedder = new BackgroundEmbedder(store, provider(), silentLogger);
    embedder.wake();
    await embedder.idle();
    expect(embedder.status()).toMatchObject({ embedded: 2, refused: 1 });
    // The refused item is not offered again, even to a new embedder (after a restart).
    const again = new BackgroundEmbedder(store, provider(), silentLogger);
    const before = server.requests.length;
    again.wake();
    await again.idle();
    expect(server.requests.length).toBe(before);
    await embedder.close();
    await again.close();
  });
});

describe('hybrid search through the hub', () => {
  let hub: Hub;
  let token: string;

  const search = async (query: string, extra: Record<string, unknown> = {}) => {
    const response = await hub.app.request('/api/context/search', {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query, ...extra }),
    });
    expect(response.status).toBe(200);
    return (await response.json()) as {
      mode: string;
      vector?: { model: string; index: string; used: boolean; reason?: string };
      results: { item: { title: string }; score: number; highlight: string }[];
    };
  };

  /** The provider's calls under way or done, so a test can wait for one it did not await. */
  let calls: Promise<unknown>[] = [];
  const trackedProvider = (): EmbeddingProvider => {
    const provider = openAiEmbeddings({ url: server.url, model: 'm', apiKey: 'sk-test' });
    return {
      label: provider.label,
      embed: (texts, signal) => {
        const call = provider.embed(texts, signal);
        calls.push(call);
        return call;
      },
    };
  };

  /** The hub again, with these embedding options. */
  const restartHub = async (options: Omit<EmbeddingsOptions, 'provider'>) => {
    await hub.close();
    calls = [];
    hub = await createHub({
      store,
      validateResponses: true,
      embeddings: { provider: trackedProvider(), ...options },
    });
  };

  beforeEach(async () => {
    hub = await createHub({
      store,
      validateResponses: true,
      embeddings: {
        provider: openAiEmbeddings({ url: server.url, model: 'm', apiKey: 'sk-test' }),
        backoffMs: 20,
      },
    });
    token = (await mintToken(store, { role: 'runtime', teamId: 'acme', runtime: 'claude-code' }))
      .token;
  });
  afterEach(async () => {
    await hub.close();
  });

  it('finds by meaning what full text cannot, and says how it ranked', async () => {
    await write({ title: 'Bought a new automobile', content: 'A red one, for the long trips.' });
    await write({ title: 'Visited the physician', content: 'Annual check-up went fine.' });
    await write({ title: 'Parking rules', content: 'Park the car in bay 4.' });
    hub.services.feed.notify();
    await hub.services.embeddings?.embedder?.idle();

    const result = await search('car');
    expect(result.mode).toBe('hybrid');
    expect(result.vector).toEqual({ model: 'm', index: 'exact', used: true });
    const titles = result.results.map((hit) => hit.item.title);
    // Full text finds only "Parking rules"; the vectors add the automobile.
    expect(titles.slice(0, 2).sort()).toEqual(['Bought a new automobile', 'Parking rules']);
    // Vectors that share nothing with the question (cosine 0) are not results.
    expect(titles).not.toContain('Visited the physician');
    const automobile = result.results.find((hit) => hit.item.title.includes('automobile'));
    expect(automobile?.highlight).toBe('A red one, for the long trips.');
    // Scores are fused ranks: positive, best first.
    const scores = result.results.map((hit) => hit.score);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    // Filters apply to both rankings.
    expect((await search('car', { type: 'decision' })).results).toEqual([]);
  });

  it('reports the embedder in /health', async () => {
    await write({ title: 'Park the car in bay 4' });
    hub.services.feed.notify();
    await hub.services.embeddings?.embedder?.idle();
    const health = async () => (await (await hub.app.request('/health')).json()) as unknown;
    expect(await health()).toMatchObject({
      embeddings: { model: 'm', embedded: 1, refused: 0, failing: false },
    });
    server.down = true;
    await write({ title: 'another' });
    hub.services.feed.notify();
    await expect.poll(health).toMatchObject({ embeddings: { failing: true } });
    server.down = false;
  });

  it('falls back to full text when the provider fails, and says why', async () => {
    await write({ title: 'Park the car in bay 4' });
    hub.services.feed.notify();
    await hub.services.embeddings?.embedder?.idle();
    server.down = true;
    const result = await search('car park');
    expect(result.mode).toBe('fulltext');
    expect(result.vector?.used).toBe(false);
    expect(result.vector?.reason).toMatch(/embedding provider failed: .*503/);
    expect(result.results.map((hit) => hit.item.title)).toEqual(['Park the car in bay 4']);
    server.down = false;
    expect((await search('car park')).mode).toBe('hybrid');
  });

  it('is full text while no item has a vector', async () => {
    // A hub that embeds queries only: nothing embeds the items.
    await restartHub({ embedItems: false });
    expect(hub.services.embeddings?.embedder).toBeNull();
    await write({ title: 'Park the car in bay 4' });
    const result = await search('car');
    expect(result.mode).toBe('fulltext');
    expect(result.vector?.reason).toBe(
      'no item of this team with a vector is related to the question',
    );
    expect(result.results.map((hit) => hit.item.title)).toEqual(['Park the car in bay 4']);
  });

  it('ranks by full text when the query vector is slow, and uses it once it came', async () => {
    await restartHub({ queryTimeoutMs: 100 });
    await write({ title: 'Park the car in bay 4' });
    hub.services.feed.notify();
    await hub.services.embeddings?.embedder?.idle();
    server.delayMs = 400;
    const slow = await search('vehicle');
    expect(slow.mode).toBe('fulltext');
    expect(slow.vector?.reason).toBe('the embedding provider failed: no answer within 100 ms');
    server.delayMs = 0;
    // The call went on, and its vector was kept: once it has answered, the search uses it.
    await waitFor(Promise.allSettled(calls), 'the slow query embedding call to answer');
    const requests = server.requests.length;
    const later = await search('vehicle');
    expect(later.mode).toBe('hybrid');
    expect(later.results.map((hit) => hit.item.title)).toEqual(['Park the car in bay 4']);
    expect(server.requests.length).toBe(requests);
  });

  it('caches query vectors', async () => {
    await write({ title: 'Park the car in bay 4' });
    hub.services.feed.notify();
    await hub.services.embeddings?.embedder?.idle();
    const before = server.requests.length;
    await search('where to park');
    await search('where to park');
    expect(server.requests.length).toBe(before + 1);
  });
});

describe('fuseRankings', () => {
  it('sums 1/(k + rank) over the lists; ties keep first appearance', () => {
    const fused = fuseRankings(
      [
        [{ id: 'a' }, { id: 'b' }, { id: 'c' }],
        [{ id: 'c' }, { id: 'd' }, { id: 'a' }],
      ],
      60,
    );
    expect(fused.map((entry) => entry.entry.id)).toEqual(['a', 'c', 'b', 'd']);
    expect(fused[0]?.score).toBeCloseTo(1 / 61 + 1 / 63, 12);
    expect(fused[2]?.score).toBeCloseTo(1 / 62, 12);
    expect(fuseRankings([[], []])).toEqual([]);
  });

  it('weighs each list by its weight', () => {
    const fused = fuseRankings([[{ id: 'a' }, { id: 'b' }], [{ id: 'b' }]], 60, [1, 0.25]);
    expect(fused.map((entry) => entry.entry.id)).toEqual(['b', 'a']);
    expect(fused[0]?.score).toBeCloseTo(1 / 62 + 0.25 / 61, 12);
    expect(fused[1]?.score).toBeCloseTo(1 / 61, 12);
  });
});

describe('vectorWeight', () => {
  const ids = (...names: string[]) => names.map((id) => ({ id }));
  const ten = ids('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j');
  it("is the square of the share of full text's first 10 that the vector ranking's first 10 has", () => {
    expect(vectorWeight(ten, ten)).toBe(1);
    expect(vectorWeight(ten, ids('a', 'b', 'c', 'd', 'e', 'x', 'y'))).toBeCloseTo(0.25, 12);
    expect(vectorWeight(ten, ids('x', 'y', 'z'))).toBe(0);
    // Agreement beyond the first 10 does not count.
    expect(
      vectorWeight(ten, [...ids('p', 'q', 'r', 's', 't', 'u', 'v', 'w', 'x', 'y'), ...ten]),
    ).toBe(0);
  });
  it('is 1 when full text found nothing: the vector ranking is all there is', () => {
    expect(vectorWeight([], ids('x'))).toBe(1);
  });
});
