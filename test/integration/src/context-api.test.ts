import { call, waitUntil } from '@ctxbus/test-kit';
import { describe, expect, it } from 'vitest';
import { useInProcessHub } from './in-process-serve.ts';

const hub = useInProcessHub({
  tokens: {
    code: ['acme', 'claude-code'],
    chat: ['acme', 'openclaw'],
    other: ['globex', 'claude-code'],
  },
});

const post = (body: unknown, token = hub.tokens.code) =>
  call(hub.url, 'POST', '/api/context', { token, body });
const get = (path: string, token = hub.tokens.code) => call(hub.url, 'GET', path, { token });

describe('writing', () => {
  it('stores one item and returns it with id and seq', async () => {
    const response = await post({
      type: 'decision',
      title: 'Use SQLite',
      content: 'Embedded and fast.',
    });
    expect(response.status).toBe(201);
    const [item] = response.body.items;
    expect(item).toMatchObject({
      title: 'Use SQLite',
      teamId: 'acme',
      source: { runtime: 'claude-code' },
    });
    expect(response.body.results).toEqual([{ id: item.id, seq: item.seq, status: 'created' }]);
  });

  it('stores a batch atomically, as an array or as {items}', async () => {
    const asArray = await post([
      { type: 'status', title: 'b1' },
      { type: 'status', title: 'b2' },
    ]);
    const wrapped = await post({ items: [{ type: 'status', title: 'b3' }] });
    expect(asArray.status).toBe(201);
    expect(wrapped.status).toBe(201);
    const seqs = [...asArray.body.items, ...wrapped.body.items].map(
      (item: { seq: number }) => item.seq,
    );
    const [start = 0] = seqs;
    expect(seqs).toEqual([start, start + 1, start + 2]);
    const bad = await post({
      items: [
        { type: 'status', title: 'never stored' },
        { type: 'nope', title: 'x' },
      ],
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/^body\.items\[1\]\.type/);
    const listed = await get('/api/context?limit=500');
    expect(listed.body.items.some((item: { title: string }) => item.title === 'never stored')).toBe(
      false,
    );
  });

  it('is idempotent for a repeated id and refuses the id for other content', async () => {
    const id = '019a0000-0000-7000-8000-0000000000aa';
    const first = await post({ id, type: 'discovery', title: 'once only' });
    const again = await post({ id, type: 'discovery', title: 'once only' });
    expect(first.status).toBe(201);
    expect(again.status).toBe(200);
    expect(again.body.results[0]).toMatchObject({
      id,
      status: 'existing',
      seq: first.body.items[0].seq,
    });
    const listed = await get('/api/context?limit=500');
    expect(listed.body.items.filter((item: { id: string }) => item.id === id)).toHaveLength(1);
    const clash = await post({ id, type: 'discovery', title: 'something else' });
    expect(clash.status).toBe(409);
    expect(clash.body.error.code).toBe('conflict');
  });

  it('redacts secrets before storage and says what it redacted', async () => {
    const response = await post({
      type: 'discovery',
      title: 'Staging credentials',
      content:
        'Use postgres://app:s3cretPassw0rd@db:5432/app and header Bearer abcdefghijklmnop1234',
    });
    const [item] = response.body.items;
    expect(item.content).not.toContain('s3cretPassw0rd');
    expect(item.content).not.toContain('abcdefghijklmnop1234');
    expect(item.redactions.map((r: { kind: string }) => r.kind).sort()).toEqual([
      'bearer-token',
      'url-password',
    ]);
    const stored = await get(`/api/context/${item.id}`);
    expect(stored.body.item.content).toBe(item.content);
  });
});

describe('reading', () => {
  it('lists newest first with filters and totalTokens', async () => {
    await post({
      type: 'alert',
      title: 'Disk almost full',
      urgency: 'blocking',
      relevanceTags: ['ops'],
    });
    await post(
      { type: 'discovery', title: 'Flaky test found', relevanceTags: ['ci', 'ops'] },
      hub.tokens.chat,
    );
    await post({ type: 'status', title: 'Task T-7 underway', scopeKey: 'task:T-7' });
    const all = await get('/api/context?limit=3');
    expect(all.status).toBe(200);
    expect(all.body.items.map((item: { title: string }) => item.title)).toEqual([
      'Task T-7 underway',
      'Flaky test found',
      'Disk almost full',
    ]);
    expect(all.body.totalTokens).toBe(
      all.body.items.reduce((sum: number, item: { tokens: number }) => sum + item.tokens, 0),
    );
    const titles = async (query: string) =>
      (await get(`/api/context?${query}`)).body.items.map((item: { title: string }) => item.title);
    expect(await titles('tags=ops&limit=10')).toEqual(['Flaky test found', 'Disk almost full']);
    expect(await titles('type=alert,status&limit=2')).toEqual([
      'Task T-7 underway',
      'Disk almost full',
    ]);
    expect(await titles('minUrgency=blocking')).toEqual(['Disk almost full']);
    expect(await titles('runtime=openclaw')).toEqual(['Flaky test found']);
    expect(await titles('scope=task')).toEqual(['Task T-7 underway']);
    expect(await titles('scopeKey=task:T-7')).toEqual(['Task T-7 underway']);
    const since = all.body.items[1].seq;
    expect(await titles(`since=${since}`)).toEqual(['Task T-7 underway']);
    // Seed 000's since={timestamp} as a Unix time in milliseconds (13 digits and more), or as
    // an ISO date-time: the items written after it.
    const times = all.body.items.map((item: { createdAt: string }) => Date.parse(item.createdAt));
    const oldest = Math.min(...times) - 1;
    const newest = Math.max(...times) + 1;
    for (const at of [String(oldest), new Date(oldest).toISOString()]) {
      expect(await titles(`since=${at}&limit=100`), at).toEqual(
        expect.arrayContaining(['Task T-7 underway', 'Flaky test found', 'Disk almost full']),
      );
    }
    for (const at of [String(newest), new Date(newest).toISOString()]) {
      expect(await titles(`since=${at}`), at).toEqual([]);
    }
    // Past the last date a time can name, digits stay a sequence number (nothing after it).
    expect((await get('/api/context?since=9000000000000000')).body.items).toEqual([]);
  });

  it('pages with before/nextBefore', async () => {
    const first = await get('/api/context?limit=2');
    expect(first.body.nextBefore).toBe(first.body.items[1].seq);
    const second = await get(`/api/context?limit=2&before=${first.body.nextBefore}`);
    expect(second.body.items[0].seq).toBeLessThan(first.body.items[1].seq);
  });

  it('gets one item, 404 for an unknown one, 400 for a malformed id', async () => {
    const written = await post({ type: 'discovery', title: 'findable' });
    const id = written.body.items[0].id;
    expect((await get(`/api/context/${id}`)).body.item.title).toBe('findable');
    const missing = await get('/api/context/019a0000-0000-7000-8000-00000000ffff');
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('not_found');
    const malformed = await get('/api/context/not-an-id');
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.message).toMatch(/^params\.id/);
  });

  it('hides superseded items and follows key supersession', async () => {
    const v1 = await post({
      type: 'decision',
      title: 'Deploy on Fridays',
      key: 'process/deploy-day',
    });
    const v2 = await post({
      type: 'decision',
      title: 'Deploy on Tuesdays',
      key: 'process/deploy-day',
    });
    expect(v2.body.items[0].supersedes).toBe(v1.body.items[0].id);
    const byKey = await get('/api/context?key=process/deploy-day');
    expect(byKey.body.items.map((item: { title: string }) => item.title)).toEqual([
      'Deploy on Tuesdays',
    ]);
    const history = await get('/api/context?key=process/deploy-day&includeSuperseded=true');
    expect(history.body.items).toHaveLength(2);
    const again = await post({ type: 'decision', title: 'No', supersedes: v1.body.items[0].id });
    expect(again.status).toBe(409);
  });

  it('never returns expired items', async () => {
    const shortLived = await post({ type: 'status', title: 'blink', expiresAfterSeconds: 1 });
    const { id, expiresAt } = shortLived.body.items[0];
    expect((await get(`/api/context/${id}`)).status).toBe(200);
    // The hub reads expiry by its clock, and this process shares it: wait until it is past.
    await waitUntil(() => Date.now() > Date.parse(expiresAt), `the clock to pass ${expiresAt}`);
    expect((await get(`/api/context/${id}`)).status).toBe(404);
    const listed = await get('/api/context?limit=500');
    expect(listed.body.items.some((item: { id: string }) => item.id === id)).toBe(false);
  });
});

describe('consuming', () => {
  it('records consumption per runtime, idempotently', async () => {
    const request = await post({ type: 'request', title: 'Approve the release?' });
    const id = request.body.items[0].id;
    const once = await call(hub.url, 'POST', `/api/context/${id}/consume`, {
      token: hub.tokens.chat,
    });
    const twice = await call(hub.url, 'POST', `/api/context/${id}/consume`, {
      token: hub.tokens.chat,
    });
    expect(once.status).toBe(200);
    expect(once.body.item.consumed).toBe(true);
    expect(twice.body.item.consumedBy).toEqual(once.body.item.consumedBy);
    const unconsumed = await get('/api/context?type=request&unconsumed=true');
    expect(unconsumed.body.items.some((item: { id: string }) => item.id === id)).toBe(false);
    const missing = await call(
      hub.url,
      'POST',
      '/api/context/019a0000-0000-7000-8000-00000000ffff/consume',
      { token: hub.tokens.chat },
    );
    expect(missing.status).toBe(404);
  });
});

describe('search', () => {
  it('ranks natural-language questions and highlights matches', async () => {
    await post({
      type: 'discovery',
      title: 'Lunch',
      content: 'Team lunch is on Thursday at the Thai place.',
    });
    await post({
      type: 'decision',
      title: 'Message queue',
      content: 'We picked NATS JetStream over Kafka for events.',
    });
    const response = await call(hub.url, 'POST', '/api/context/search', {
      token: hub.tokens.code,
      body: { query: 'Which message queue did we pick for events?', limit: 5 },
    });
    expect(response.status).toBe(200);
    expect(response.body.mode).toBe('fulltext');
    expect(response.body.results[0].item.title).toBe('Message queue');
    expect(response.body.results[0].highlight).toMatch(/\*\*/);
    const scores = response.body.results.map((result: { score: number }) => result.score);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    const filtered = await call(hub.url, 'POST', '/api/context/search', {
      token: hub.tokens.code,
      body: { query: 'lunch queue', type: 'discovery' },
    });
    expect(
      filtered.body.results.map((result: { item: { title: string } }) => result.item.title),
    ).toEqual(['Lunch']);
  });

  it("filters by seed 000's urgency: one or a list, exactly those", async () => {
    await post([
      { type: 'alert', title: 'Kiln one overheating', urgency: 'blocking' },
      { type: 'request', title: 'Kiln two needs a new thermocouple', urgency: 'attention' },
      { type: 'discovery', title: 'Kiln three fires evenly' },
    ]);
    const search = async (body: Record<string, unknown>) => {
      const response = await call(hub.url, 'POST', '/api/context/search', {
        token: hub.tokens.code,
        body: { query: 'kiln', ...body },
      });
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      return response.body.results
        .map((result: { item: { title: string } }) => result.item.title)
        .sort();
    };
    expect(await search({})).toHaveLength(3);
    expect(await search({ urgency: 'blocking' })).toEqual(['Kiln one overheating']);
    expect(await search({ urgency: ['attention', 'blocking'] })).toEqual([
      'Kiln one overheating',
      'Kiln two needs a new thermocouple',
    ]);
    expect(await search({ urgency: 'background', type: 'discovery' })).toEqual([
      'Kiln three fires evenly',
    ]);
    for (const urgency of ['urgent', [], ['blocking', 7]]) {
      const bad = await call(hub.url, 'POST', '/api/context/search', {
        token: hub.tokens.code,
        body: { query: 'kiln', urgency },
      });
      expect(bad.status, JSON.stringify(urgency)).toBe(400);
      expect(bad.body.error.message).toMatch(/^body\.urgency/);
    }
  });

  it('survives hostile queries and rejects an empty one', async () => {
    for (const query of ['"', 'NEAR(a b', 'title:* OR', '-- ; DROP TABLE items', '(((((']) {
      const response = await call(hub.url, 'POST', '/api/context/search', {
        token: hub.tokens.code,
        body: { query },
      });
      expect(response.status).toBe(200);
    }
    const empty = await call(hub.url, 'POST', '/api/context/search', {
      token: hub.tokens.code,
      body: { query: '  ' },
    });
    expect(empty.status).toBe(400);
    expect(empty.body.error.message).toMatch(/^body\.query/);
  });
});

describe('shared context', () => {
  it('builds Markdown for claude-code within budget, deterministically', async () => {
    const first = await get('/api/context/shared');
    const second = await get('/api/context/shared');
    expect(first.status).toBe(200);
    expect(first.body.runtime).toBe('claude-code');
    expect(first.body.format).toBe('markdown');
    expect(first.body.formattedMarkdown).toContain('## Recent decisions');
    expect(first.body.totalTokens).toBeLessThanOrEqual(4000);
    expect(second.body.contextHash).toBe(first.body.contextHash);
    expect(second.body.formatted).toBe(first.body.formatted);
  });

  it('gives openclaw terse text and web structured items', async () => {
    const text = await get('/api/context/shared?runtime=openclaw', hub.tokens.chat);
    expect(text.body.format).toBe('text');
    expect(text.body.formatted).not.toContain('##');
    expect(text.body.tokenBudget).toBe(2000);
    const web = await get('/api/context/shared?runtime=web');
    expect(web.body.items.length).toBeGreaterThan(0);
    const sectionIds = web.body.sections.map((section: { id: string }) => section.id);
    expect(sectionIds).toContain('blockedItems');
  });

  it('honours a small budget and records the trimming', async () => {
    const small = await get('/api/context/shared?tokenBudget=120');
    expect(small.body.totalTokens).toBeLessThanOrEqual(120);
    expect(small.body.trim.trimmed).toBe(true);
    expect(small.body.trim.actions.length).toBeGreaterThan(0);
  });

  it('gives a runtime without a resolver of its own the default format (Markdown)', async () => {
    const response = await get('/api/context/shared?runtime=my-agent');
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({
      runtime: 'my-agent',
      format: 'markdown',
      tokenBudget: 4000,
    });
    expect(response.body.formatted).toContain('formatted for my-agent');
    expect(response.body.items).toBeUndefined();
  });

  it('changes when a new decision arrives', async () => {
    const before = await get('/api/context/shared');
    await post({ type: 'decision', title: 'Adopt Biome for lint and format' });
    const after = await get('/api/context/shared');
    expect(after.body.contextHash).not.toBe(before.body.contextHash);
    expect(after.body.formatted).toContain('Adopt Biome for lint and format');
  });
});

describe("seed 000's API, verbatim", () => {
  it('accepts the seed write body with its flat source fields', async () => {
    const response = await post({
      type: 'decision',
      title: 'Adopt the seed API',
      content: 'Clients written against the proposal work unchanged.',
      summary: 'Seed clients work unchanged',
      scope: 'task',
      relevanceTags: ['api', 'seed'],
      urgency: 'attention',
      sourceRuntime: 'claude-code',
      sourceTaskId: 'T-000',
      sourceThreadId: 'thread-9',
      expiresAfterSeconds: 3600,
    });
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    const [item] = response.body.items;
    expect(item.source).toEqual({
      runtime: 'claude-code',
      agentId: null,
      taskId: 'T-000',
      threadId: 'thread-9',
    });
    expect(item.expiresAt).not.toBeNull();
    const read = await get(`/api/context/${item.id}`, hub.tokens.chat);
    expect(read.body.item.source).toEqual(item.source);
    // The seed's search body and response shape.
    const search = await call(hub.url, 'POST', '/api/context/search', {
      token: hub.tokens.chat,
      body: { query: 'seed API', scope: 'task', type: 'decision', limit: 5 },
    });
    expect(search.status).toBe(200);
    expect(search.body.results[0]).toMatchObject({
      item: { id: item.id },
      score: expect.any(Number),
      highlight: expect.any(String),
    });
  });

  it('refuses a sourceRuntime other than the token runtime, and flat fields that disagree', async () => {
    const other = await post({ type: 'status', title: 'posing as web', sourceRuntime: 'web' });
    expect(other.status).toBe(403);
    expect(other.body.error.code).toBe('forbidden');
    expect(other.body.error.message).toMatch(/sourceRuntime "web" is not this token's runtime/);
    const both = await post({
      type: 'status',
      title: 'two task ids',
      sourceTaskId: 'T-1',
      source: { taskId: 'T-2' },
    });
    expect(both.status).toBe(400);
    expect(both.body.error.message).toMatch(/sourceTaskId "T-1" disagrees with source.taskId/);
  });

  it("returns the seed's named fields and Markdown for every runtime", async () => {
    await post({ type: 'decision', title: 'Ship on Tuesdays', content: 'Freeze Monday 18:00.' });
    await post({ type: 'status', title: 'T-5: halfway', scopeKey: 'task:T-5' });
    for (const runtime of ['claude-code', 'openclaw', 'web']) {
      const response = await get(`/api/context/shared?runtime=${runtime}`);
      expect(response.status, runtime).toBe(200);
      const bundle = response.body;
      const section = (id: string) =>
        bundle.sections.find((entry: { id: string }) => entry.id === id)?.entries ?? [];
      expect(bundle.identity).toEqual({
        teamId: 'acme',
        runtime,
        entries: section('identity'),
      });
      expect(bundle.activeTasks).toEqual(section('activeTasks'));
      expect(bundle.recentDecisions).toEqual(section('recentDecisions'));
      expect(bundle.recentDecisions.map((entry: { text: string }) => entry.text).join()).toMatch(
        /Ship on Tuesdays/,
      );
      expect(bundle.blockedItems).toEqual(section('blockedItems'));
      expect(bundle.recentInteractionSummaries).toEqual(section('recentInteractions'));
      expect(bundle.threadSummaries).toEqual(section('threadSummaries'));
      expect(bundle.projectContext).toEqual(section('projectContext'));
      expect(typeof bundle.currentFocus).toBe('string');
      expect(bundle.totalTokens).toBeGreaterThan(0);
      expect(bundle.formattedMarkdown).toMatch(/^# Shared context \(ctxbus\)/);
      expect(bundle.formattedMarkdown).toContain('## Recent decisions');
    }
  });
});

describe('resolving one item (seed 000: resolve each new item, then inject it)', () => {
  it("answers {format, content, injection} for the caller's runtime or the one named", async () => {
    const written = await post(
      { type: 'decision', title: 'Ship on Friday', content: 'After the **review**.' },
      hub.tokens.chat,
    );
    const { id } = written.body.items[0];
    const mine = await get(`/api/context/${id}/resolved`);
    expect(mine.status).toBe(200);
    expect(mine.body.resolved).toEqual({
      format: 'markdown',
      content:
        '## Context Update: Ship on Friday\n_from openclaw, decision_\n\nAfter the **review**.',
      injection: 'hook-additional-context',
      itemId: id,
      runtime: 'claude-code',
    });
    const forChat = await get(`/api/context/${id}/resolved?runtime=openclaw`);
    expect(forChat.body.resolved).toMatchObject({ format: 'text', injection: 'prepend-context' });
    expect(forChat.body.resolved.content).toMatch(/^\[from openclaw, decision\] /);
    // Another team cannot read it, so cannot resolve it; a bad runtime name is refused.
    expect((await get(`/api/context/${id}/resolved`, hub.tokens.other)).status).toBe(404);
    const bad = await get(`/api/context/${id}/resolved?runtime=${encodeURIComponent('no spaces')}`);
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('validation_failed');
  });
});
