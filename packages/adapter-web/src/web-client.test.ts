import type { StreamEvent } from '@ctxbus/core/contract';
import { CtxbusError } from '@ctxbus/core/contract';
import { waitFor, waitUntil } from '@ctxbus/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestCapability, taskScopeKey } from './capability-request.js';
import { ItemCache } from './item-cache.js';
import { connectCache } from './live-cache.js';
import type { TestHub } from './test-hub.js';
import { controlledFetch, startTestHub } from './test-hub.js';
import { createWebClient } from './web-client.js';

let hub: TestHub;

beforeAll(async () => {
  hub = await startTestHub();
});

afterAll(async () => {
  await hub?.close();
});

/** Reads a stream in the background, keeping every event. */
function collect(iterable: AsyncIterable<StreamEvent>) {
  const events: StreamEvent[] = [];
  const done = (async () => {
    for await (const event of iterable) events.push(event);
  })();
  return {
    events,
    done,
    titles: () => events.map((event) => event.item.title),
    until: (title: string) =>
      waitUntil(
        () => events.some((event) => event.item.title === title),
        `"${title}" on the stream`,
      ),
  };
}

const fastBackoff = { initialMs: 20, maxMs: 100 };

describe('createWebClient', () => {
  it('writes, lists, gets and searches over fetch', async () => {
    const client = createWebClient({ url: hub.url, token: hub.token });
    const written = await client.write({
      type: 'decision',
      title: 'Ship the sidebar first',
      content: 'The dashboard comes after the adapter.',
      relevanceTags: ['web'],
    });
    const id = written.items[0]?.id ?? '';
    expect(written.items[0]?.source.runtime).toBe('web');
    expect((await client.get(id)).title).toBe('Ship the sidebar first');
    expect((await client.list({ tags: 'web' })).items.map((item) => item.id)).toContain(id);
    const found = await client.search({ query: 'sidebar first', limit: 5 });
    expect(found.results.map((result) => result.item.id)).toContain(id);
  });

  it('turns a wrong token into a CtxbusError with the hub code unauthorized', async () => {
    const client = createWebClient({ url: hub.url, token: 'ctxb_wrong' });
    const error = await client.list().catch((caught: unknown) => caught);
    expect(CtxbusError.isInstance(error)).toBe(true);
    expect((error as CtxbusError).code).toBe('unauthorized');
    expect((error as CtxbusError).status).toBe(401);
    // The stream ends at once with the same error: retrying cannot fix a token.
    const streamed = await collect(client.stream({ since: 0 })).done.catch(
      (caught: unknown) => caught,
    );
    expect((streamed as CtxbusError).code).toBe('unauthorized');
  });

  it('turns a hub refusal into its code and message (not_found, validation_failed)', async () => {
    const client = createWebClient({ url: hub.url, token: hub.token });
    const missing = await client.task('task_nope').catch((caught: unknown) => caught);
    expect(['not_found', 'validation_failed']).toContain((missing as CtxbusError).code);
    const invalid = await client
      .write({ type: 'nonsense' } as never)
      .catch((caught: unknown) => caught);
    expect((invalid as CtxbusError).code).toBe('validation_failed');
    expect((invalid as CtxbusError).message).toMatch(/type/);
  });
});

describe('the live stream', () => {
  it('resumes after a cut connection with Last-Event-ID: nothing missed, nothing twice', async () => {
    const control = controlledFetch();
    const client = createWebClient({ url: hub.url, token: hub.token, fetch: control.fetch });
    const controller = new AbortController();
    const states: string[] = [];
    const stream = collect(
      client.stream({
        tags: 'cut-test',
        signal: controller.signal,
        backoff: fastBackoff,
        onState: (state) => states.push(state),
      }),
    );
    const write = (title: string) =>
      client.write({ type: 'discovery', title, relevanceTags: ['cut-test'] });
    await write('cut A');
    await write('cut B');
    await stream.until('cut B');
    // The connection drops; what is written while the page is away must still arrive.
    control.hold();
    control.cut();
    await waitUntil(() => control.streamRequests.length === 2, 'the reconnection attempt');
    await write('cut C');
    await write('cut D');
    control.release();
    await write('cut E');
    await stream.until('cut E');
    expect(stream.titles()).toEqual(['cut A', 'cut B', 'cut C', 'cut D', 'cut E']);
    const seqs = stream.events.map((event) => event.seq);
    expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
    expect(control.streamRequests[1]?.lastEventId).toBe(String(stream.events[1]?.seq));
    expect(states).toContain('reconnecting');
    controller.abort();
    await waitFor(stream.done, 'the stream to end on abort');
    expect(states.at(-1)).toBe('closed');
  });

  it('resumes across a hub restart on the same port and SQLite file', async () => {
    const client = createWebClient({ url: hub.url, token: hub.token });
    const controller = new AbortController();
    const stream = collect(
      client.stream({ tags: 'restart-test', signal: controller.signal, backoff: fastBackoff }),
    );
    const write = (title: string) =>
      client.write({ type: 'discovery', title, relevanceTags: ['restart-test'] });
    await write('restart A');
    await stream.until('restart A');
    // The hub goes away (every connection closes) and comes back: the page resumes by itself.
    await hub.restart();
    await write('restart B');
    await write('restart C');
    await stream.until('restart C');
    expect(stream.titles()).toEqual(['restart A', 'restart B', 'restart C']);
    controller.abort();
    await waitFor(stream.done, 'the stream to end on abort');
  });
});

describe('ItemCache fed by the stream', () => {
  it('a write over REST reaches the cache, and views filter it', async () => {
    const writer = createWebClient({ url: hub.url, token: await hub.mint('claude-code') });
    const client = createWebClient({ url: hub.url, token: hub.token });
    await writer.write({
      type: 'decision',
      title: 'cache: listed before the stream',
      relevanceTags: ['cache-test'],
    });
    const cache = new ItemCache({ maxItems: 50 });
    const notified: number[] = [];
    cache.subscribe(() => notified.push(cache.size));
    const live = connectCache(client, cache, { tags: 'cache-test', backoff: fastBackoff });
    await waitFor(live.loaded, 'the first listing');
    expect(cache.snapshot().map((item) => item.title)).toEqual(['cache: listed before the stream']);
    const before = cache.snapshot();
    await writer.write([
      {
        type: 'alert',
        title: 'cache: blocking alert',
        urgency: 'blocking',
        relevanceTags: ['cache-test', 'ops'],
        scope: 'task',
        scopeKey: 'task:T-1',
      },
      { type: 'discovery', title: 'cache: background note', relevanceTags: ['cache-test'] },
    ]);
    await client.write({
      type: 'status',
      title: 'cache: written by web',
      urgency: 'attention',
      relevanceTags: ['cache-test'],
    });
    await waitUntil(
      () => cache.get(idOf(cache, 'cache: written by web')) !== undefined,
      'web write',
    );
    expect(cache.snapshot()).not.toBe(before);
    expect(notified.length).toBeGreaterThan(0);
    const titles = (filter: Parameters<ItemCache['items']>[0]) =>
      cache.items(filter).map((item) => item.title);
    expect(titles({ minUrgency: 'blocking' })).toEqual(['cache: blocking alert']);
    expect(titles({ tags: 'ops' })).toEqual(['cache: blocking alert']);
    expect(titles({ scope: 'task' })).toEqual(['cache: blocking alert']);
    expect(titles({ scopeKey: 'task:T-1' })).toEqual(['cache: blocking alert']);
    expect(titles({ runtime: 'web' })).toEqual(['cache: written by web']);
    expect(titles({ type: ['decision', 'discovery'] })).toEqual([
      'cache: background note',
      'cache: listed before the stream',
    ]);
    expect(titles({ urgency: 'attention' })).toEqual(['cache: written by web']);
    // Consumed and superseded changes update the item in place.
    const alertId = idOf(cache, 'cache: blocking alert');
    await writer.call('consumeContextItem', { params: { id: alertId } });
    await waitUntil(() => cache.get(alertId)?.consumed === true, 'the consumed change');
    expect(titles({ unconsumed: true, minUrgency: 'blocking' })).toEqual([]);
    const noteId = idOf(cache, 'cache: background note');
    await writer.write({
      type: 'discovery',
      title: 'cache: background note, corrected',
      relevanceTags: ['cache-test'],
      supersedes: noteId,
    });
    await waitUntil(() => cache.get(noteId)?.supersededBy !== null, 'the superseded change');
    expect(titles({ type: 'discovery' })).toEqual(['cache: background note, corrected']);
    expect(titles({ type: 'discovery', includeSuperseded: true })).toHaveLength(2);
    live.stop();
    await waitFor(live.done, 'the live cache to stop');
  });
});

function idOf(cache: ItemCache, title: string): string {
  return cache.items({ includeSuperseded: true }).find((item) => item.title === title)?.id ?? '';
}

describe('bundles', () => {
  it('sidebarBundle and markdownBundle are exactly what GET /api/context/shared returns', async () => {
    const client = createWebClient({ url: hub.url, token: hub.token });
    await client.write([
      { type: 'decision', title: 'Bundle: use SSE over fetch', relevanceTags: ['bundle'] },
      { type: 'request', title: 'Bundle: review the cache', urgency: 'blocking' },
    ]);
    const raw = async (query: string) =>
      (await (
        await client.open('sharedContext', {
          query: Object.fromEntries(new URLSearchParams(query)),
        })
      ).json()) as {
        sections: { id: string; title: string; entries: { id: string; text: string }[] }[];
        formattedMarkdown: string;
        contextHash: string;
        totalTokens: number;
        items: { id: string }[];
      };
    const sidebar = await client.sidebarBundle();
    const expected = await raw('runtime=web');
    expect(sidebar.contextHash).toBe(expected.contextHash);
    expect(
      sidebar.sections.map(({ id, title, entries }) => ({
        id,
        title,
        entries: entries.map(({ id: entryId, text, mode, refs }) => ({
          id: entryId,
          refs,
          mode,
          text,
        })),
      })),
    ).toEqual(expected.sections);
    const decisions = sidebar.sections.find((section) => section.id === 'recentDecisions');
    expect(decisions?.entries[0]?.items[0]?.title).toBe('Bundle: use SSE over fetch');

    const markdown = await client.markdownBundle();
    const defaultBudget = await raw('runtime=web&tokenBudget=4000');
    expect(markdown.markdown).toBe(defaultBudget.formattedMarkdown);
    expect(markdown.tokenBudget).toBe(4000);
    const small = await client.markdownBundle(60);
    const smallRaw = await raw('runtime=web&tokenBudget=60');
    expect(small.markdown).toBe(smallRaw.formattedMarkdown);
    expect(small.totalTokens).toBeLessThanOrEqual(60);
    expect(small.trimmed).toBe(true);
  });
});

describe('capability requests', () => {
  it('routes the work the page cannot do, and follows its status on the stream', async () => {
    const client = createWebClient({ url: hub.url, token: hub.token });
    // The web sandbox has no network: a command that needs it goes to claude-code.
    const request = await requestCapability(client, {
      title: 'run the tests with network',
      requiredCapabilities: ['code_execution'],
      input: { argv: ['npm', 'test'], cwd: '/home/me/app' },
      constraints: { network: true },
      idempotencyKey: 'web:turn-1',
    });
    expect(request.routing.runtime).toBe('claude-code');
    expect(request.routingLine).toMatch(/^Routing: (queue|proxy) -> claude-code: /);
    expect(request.routingLine.split('\n')).toHaveLength(1);
    const again = await requestCapability(client, {
      title: 'run the tests with network',
      requiredCapabilities: ['code_execution'],
      input: { argv: ['npm', 'test'], cwd: '/home/me/app' },
      constraints: { network: true },
      idempotencyKey: 'web:turn-1',
    });
    expect(again.task.id).toBe(request.task.id);

    const states: string[] = [];
    const followed = (async () => {
      for await (const update of request.follow({ backoff: fastBackoff })) {
        states.push(update.state);
        expect(update.item.scopeKey).toBe(taskScopeKey(request.task.id));
      }
    })();
    await waitUntil(() => states.includes('SUBMITTED'), 'the SUBMITTED status item');
    // A claude-code worker takes it and finishes it.
    const worker = createWebClient({ url: hub.url, token: await hub.mint('claude-code') });
    const claim = await worker.call('claimTask', { body: { workerId: 'laptop-1' } });
    expect(claim.task?.id).toBe(request.task.id);
    const completed = await worker.open('completeTask', {
      params: { id: request.task.id },
      body: { token: claim.task?.lease?.token ?? 0, result: { exitCode: 0 } },
    });
    expect(completed.status).toBe(200);
    await waitFor(followed, 'following to end at COMPLETED');
    expect(states).toEqual(['SUBMITTED', 'WORKING', 'COMPLETED']);
    expect((await client.task(request.task.id)).task.state).toBe('COMPLETED');
  });

  it('a command that needs a human shows AUTH_REQUIRED; the page that asked cannot approve it, a person at an approver channel can', async () => {
    const client = createWebClient({ url: hub.url, token: hub.token });
    const request = await requestCapability(client, {
      title: 'deploy with network',
      requiredCapabilities: ['code_execution'],
      input: { argv: ['./deploy.sh'], cwd: '/home/me/app' },
      constraints: { network: true },
      idempotencyKey: 'web:turn-approve',
    });
    const states: string[] = [];
    const followed = (async () => {
      for await (const update of request.follow({ backoff: fastBackoff })) {
        states.push(update.state);
        if (update.state === 'AUTH_REQUIRED') break;
      }
    })();
    await waitUntil(() => states.includes('SUBMITTED'), 'the SUBMITTED status item');
    // Claude Code's worker takes it, finds the command outside its allow-list, and asks.
    const worker = createWebClient({ url: hub.url, token: await hub.mint('claude-code') });
    const claim = await worker.call('claimTask', { body: { workerId: 'laptop-2' } });
    expect(claim.task?.id).toBe(request.task.id);
    const asked = await worker.open('requestApproval', {
      params: { id: request.task.id },
      body: {
        token: claim.task?.lease?.token ?? 0,
        request: {
          argv: ['./deploy.sh'],
          cwd: '/home/me/app',
          scriptHash: null,
          because: 'not_allowed',
        },
      },
    });
    expect(asked.status).toBe(200);
    await waitFor(followed, 'following to reach AUTH_REQUIRED');
    expect(states.at(-1)).toBe('AUTH_REQUIRED');

    // The page (runtime web) asked for the task: it is a party, so the hub refuses its answer.
    await expect(request.approve('looked at the script')).rejects.toMatchObject({
      code: 'forbidden',
      message: expect.stringMatching(/runtime web asked for this task: it cannot approve it/),
    });
    // A person answers through another approver runtime (the CLI's token, here over HTTP),
    // about the command they were shown: another command's digest decides nothing.
    const person = createWebClient({ url: hub.url, token: await hub.mint('cli') });
    const shown = (await person.task(request.task.id)).task.approval?.request.digest as string;
    await expect(
      person.decideTask(request.task.id, 'approve', 'stale page', '0'.repeat(64)),
    ).rejects.toMatchObject({
      code: 'conflict',
      message: expect.stringMatching(/waits on another command than the one shown/),
    });
    const approved = await person.decideTask(
      request.task.id,
      'approve',
      'looked at the script',
      shown,
    );
    expect(approved.state).toBe('SUBMITTED');
    expect(approved.approval).toMatchObject({
      status: 'approved',
      request: { argv: ['./deploy.sh'] },
      decidedBy: 'cli',
    });
    expect(approved.approval?.token).toEqual(expect.any(String));
    // Answering twice is refused, not applied twice.
    await expect(person.decideTask(request.task.id, 'approve')).rejects.toMatchObject({
      code: 'conflict',
    });
  });
});
