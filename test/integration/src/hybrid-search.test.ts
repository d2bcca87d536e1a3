import type { EmbeddingsServer, TestHub } from '@ctxbus/test-kit';
import {
  call,
  removeDir,
  runCli,
  runtimeToken,
  startEmbeddingsServer,
  tempDir,
} from '@ctxbus/test-kit';
import { storeUrl, withPostgres } from '@ctxbus/test-kit/postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInProcessServe } from './in-process-serve.ts';

// Hybrid search with real `ctxbus serve` hubs (in the test's process) and a local server
// speaking the OpenAI embeddings API (the only thing faked: the model, at the network boundary).

interface SearchBody {
  mode: 'fulltext' | 'hybrid';
  vector?: { model: string; index: string; used: boolean; reason?: string };
  results: { item: { title: string }; highlight: string }[];
}

const KEY = 'sk-local-test-key';

async function write(hub: TestHub, token: string, body: Record<string, unknown>) {
  const response = await call(hub.url, 'POST', '/api/context', {
    token,
    body: { type: 'discovery', ...body },
  });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
}

async function search(hub: TestHub, token: string, query: string): Promise<SearchBody> {
  const response = await call(hub.url, 'POST', '/api/context/search', {
    token,
    body: { query },
  });
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body as SearchBody;
}

const titles = (body: SearchBody) => body.results.map((hit) => hit.item.title);

function embeddingArgs(server: EmbeddingsServer, extra: string[] = []): string[] {
  return ['--embeddings-url', server.url, '--embeddings-model', 'test-embed', ...extra];
}

describe('hybrid search on the embedded store', () => {
  let server: EmbeddingsServer;
  let hub: TestHub;
  let token: string;
  const dataDir = tempDir();

  beforeAll(async () => {
    server = await startEmbeddingsServer({ apiKey: KEY });
    hub = await startInProcessServe({
      dataDir,
      args: embeddingArgs(server),
      env: { CTXBUS_EMBEDDINGS_KEY: KEY },
    });
    token = await runtimeToken(hub, 'acme', 'claude-code');
  });
  afterAll(async () => {
    await hub?.stop();
    await server?.close();
    removeDir(dataDir);
  });

  it('embeds new items in the background and ranks by meaning as well as words', async () => {
    await write(hub, token, {
      title: 'Bought a new automobile',
      content: 'A red one, for long trips.',
    });
    await write(hub, token, { title: 'Parking', content: 'Leave the car in bay 4.' });
    await write(hub, token, { title: 'Lunch', content: 'Soup on Fridays.' });
    await write(hub, token, {
      title: 'My private car notes',
      content: 'secret-garage-code',
      visibility: 'private',
    });
    await expect.poll(async () => (await search(hub, token, 'car')).mode).toBe('hybrid');
    const result = await search(hub, token, 'car');
    expect(result.vector).toEqual({ model: 'test-embed', index: 'exact', used: true });
    expect(titles(result).slice(0, 3).sort()).toEqual([
      'Bought a new automobile',
      'My private car notes',
      'Parking',
    ]);
    // The key went to the provider; private items never did.
    expect(server.requests.every((request) => request.authorization === `Bearer ${KEY}`)).toBe(
      true,
    );
    expect(JSON.stringify(server.requests)).not.toContain('secret-garage-code');
    // Another runtime of the team does not see the private item, by words or by vector.
    const other = await runtimeToken(hub, 'acme', 'openclaw');
    expect(titles(await search(hub, other, 'car'))).not.toContain('My private car notes');
    // Another team sees nothing.
    const globex = await runtimeToken(hub, 'globex', 'web');
    expect(titles(await search(hub, globex, 'car'))).toEqual([]);
  });

  it('keeps full text ahead of a vector ranking that disagrees with it (a weak model)', async () => {
    // The stand-in model hashes every word, stop words included: for this question it prefers
    // chatter that shares "what", "did", "for" and "the" with it. Full text (stop words
    // dropped) ranks the painting first; plain reciprocal rank fusion put the chatter above it.
    const team = await runtimeToken(hub, 'lexicon', 'claude-code');
    const embedded = async () =>
      ((await call(hub.url, 'GET', '/health')).body.embeddings?.embedded as number) ?? 0;
    const before = await embedded();
    await write(hub, team, {
      title: 'Melanie painted a sunrise',
      content:
        'A sunrise over the lake in soft orange and pink, a gift to the animal shelter downtown, signed and framed in oak.',
    });
    await write(hub, team, {
      title: 'Shelter chatter',
      content: 'What did we do for the shelter? What did they say? What did the others do?',
    });
    for (const content of [
      'What did you do for the weekend? What did the kids do?',
      'What did the team say for the launch? What did they do?',
      'What did I eat for lunch? What did the cafe have?',
      'What did the weather do for the trip? What did it do?',
    ]) {
      await write(hub, team, { title: 'Small talk', content });
    }
    const question = 'what did Melanie paint for the shelter';
    // Every one of the six items has its vector before the question is asked.
    await expect.poll(embedded).toBeGreaterThanOrEqual(before + 6);
    const result = await search(hub, team, question);
    expect(result.mode).toBe('hybrid');
    const ranked = titles(result);
    expect(ranked[0]).toBe('Melanie painted a sunrise');
    expect(ranked[1]).toBe('Shelter chatter');
  });

  it('`ctxbus search` says how it ranked', async () => {
    const env = { CTXBUS_URL: hub.url, CTXBUS_TOKEN: token };
    const hybrid = await runCli(['search', 'car'], { env });
    expect(hybrid.code, hybrid.stderr).toBe(0);
    expect(hybrid.stdout).toContain('Bought a new automobile');
    expect(hybrid.stdout.trim().split('\n').at(-1)).toBe(
      '(hybrid: full text and test-embed vectors)',
    );
    server.down = true;
    const fallback = await runCli(['search', 'parking', 'bay'], { env });
    server.down = false;
    expect(fallback.code, fallback.stderr).toBe(0);
    expect(fallback.stdout.trim().split('\n').at(-1)).toMatch(
      /^\(full text only: the embedding provider failed: .*503/,
    );
  });

  it('keeps writing and searching (full text) while the provider is down, then catches up', async () => {
    server.down = true;
    await write(hub, token, { title: 'Physician appointment', content: 'Tuesday at nine.' });
    const during = await search(hub, token, 'doctor appointment');
    expect(during.mode).toBe('fulltext');
    expect(during.vector?.reason).toMatch(/embedding provider failed/);
    expect(titles(during)).toEqual(['Physician appointment']);
    server.down = false;
    // The background embedder retries (1 s, then doubling) and the new item gets its vector:
    // "doctor" (no shared word) now finds it through the vector side.
    await expect
      .poll(async () => titles(await search(hub, token, 'doctor')), { interval: 500 })
      .toContain('Physician appointment');
  });

  it('survives a restart without embedding everything again', async () => {
    const before = server.inputCount();
    await hub.stop();
    hub = await startInProcessServe({
      dataDir,
      args: embeddingArgs(server),
      env: { CTXBUS_EMBEDDINGS_KEY: KEY },
    });
    expect((await search(hub, token, 'automobile')).mode).toBe('hybrid');
    // One query embedded; no item again.
    expect(server.inputCount()).toBe(before + 1);
  });
});

describe('serve --embeddings-* options', () => {
  it.each([
    [['--embeddings-url', 'ftp://example.com/v1', '--embeddings-model', 'm'], /http or https/],
    [['--embeddings-url', 'http://127.0.0.1:1/v1'], /needs --embeddings-model/],
    [['--embeddings-model', 'm'], /need --embeddings-url/],
    [['--embeddings-url', 'http://user:pw@127.0.0.1/v1', '--embeddings-model', 'm'], /credentials/],
    [
      [
        '--embeddings-url',
        'http://127.0.0.1:1/v1',
        '--embeddings-model',
        'm',
        '--embeddings-dimensions',
        '0',
      ],
      /--embeddings-dimensions must be/,
    ],
    [['--vector-memory-mb', 'lots'], /--vector-memory-mb must be a number/],
  ])('refuses %j with a one-line reason', async (args, reason) => {
    const dataDir = tempDir();
    const result = await runCli(['serve', '--port', '0', '--data', dataDir, ...args], {
      env: { CTXBUS_EMBEDDINGS_URL: '', CTXBUS_EMBEDDINGS_MODEL: '' },
    });
    removeDir(dataDir);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(reason);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
  });
});

await withPostgres('hybrid search on PostgreSQL', (url, schemas) => {
  describe('two hubs on one schema, one embedding items', () => {
    const schema = schemas.next('hybrid');
    let server: EmbeddingsServer;
    let a: TestHub;
    let b: TestHub;
    let token: string;

    beforeAll(async () => {
      server = await startEmbeddingsServer({ apiKey: KEY });
      const env = { CTXBUS_EMBEDDINGS_KEY: KEY };
      a = await startInProcessServe({
        store: storeUrl(url, schema),
        args: embeddingArgs(server),
        env,
      });
      b = await startInProcessServe({
        store: storeUrl(url, schema),
        args: embeddingArgs(server, ['--no-embed-items']),
        env,
      });
      token = await runtimeToken(a, 'acme', 'claude-code');
    });
    afterAll(async () => {
      await a?.stop();
      await b?.stop();
      await server?.close();
    });

    it('writes on one hub are found by meaning on the other; only one hub embeds items', async () => {
      await write(b, token, { title: 'We acquired a vehicle', content: 'Van for deliveries.' });
      await write(b, token, { title: 'Office hours', content: 'Nine to five.' });
      await expect.poll(async () => (await search(b, token, 'car')).mode).toBe('hybrid');
      for (const hub of [a, b]) {
        const result = await search(hub, token, 'car');
        expect(titles(result)[0]).toBe('We acquired a vehicle');
        expect(['pgvector', 'exact']).toContain(result.vector?.index);
      }
      // Each item was embedded once (by hub a); the rest are the queries.
      const itemInputs = server.requests
        .flatMap((request) => request.inputs)
        .filter((input) => input.includes('\n'));
      expect(itemInputs).toHaveLength(2);
    });
  });
});
