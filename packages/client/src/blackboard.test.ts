import { ContextOptimizer } from '@ctxbus/core';
import type { BlackboardEvent } from '@ctxbus/core/contract';
import { mintToken, startHub } from '@ctxbus/hub';
import type { InProcessHub } from '@ctxbus/test-kit/in-process-hub';
import { startInProcessHub } from '@ctxbus/test-kit/in-process-hub';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Blackboard } from './blackboard.js';
import type { CtxbusClient } from './ctxbus-client.js';
import { createClient } from './ctxbus-client.js';
import { PersistentResources } from './persistent-resources.js';

let hub: InProcessHub<'acme' | 'globex'>;
let client: CtxbusClient;
let outsider: CtxbusClient;

beforeAll(async () => {
  hub = await startInProcessHub(
    { startHub, mintToken },
    { tokens: { acme: ['acme', 'web'], globex: ['globex', 'web'] } },
  );
  client = createClient({ url: hub.url, token: hub.tokens.acme });
  outsider = createClient({ url: hub.url, token: hub.tokens.globex });
});

afterAll(() => hub.close());

describe('Blackboard', () => {
  it('holds the latest value of each entry, per board and per team', async () => {
    const board = new Blackboard({ client, board: { scope: 'thread', id: 'T-1' } });
    const other = new Blackboard({ client, board: { scope: 'space', id: 'T-1' } });
    await board.set('status', 'drafting');
    const item = await board.set('status', { phase: 'review' }, { kind: 'result', runId: 'r1' });
    await other.set('status', 'elsewhere');
    expect(await board.get('status')).toEqual({ phase: 'review' });
    expect(await other.get('status')).toBe('elsewhere');
    expect(await board.get('missing')).toBeUndefined();
    expect(item).toMatchObject({
      key: 'blackboard/thread/T-1/status',
      scope: 'thread',
      scopeKey: 'thread:T-1',
      relevanceTags: expect.arrayContaining(['blackboard', 'result']),
      source: { threadId: 'T-1', taskId: 'r1' },
      expiresAt: null,
    });
    expect((await board.entries()).map((entry) => [entry.name, entry.value, entry.kind])).toEqual([
      ['status', { phase: 'review' }, 'result'],
    ]);
    const theirs = new Blackboard({ client: outsider, board: { scope: 'thread', id: 'T-1' } });
    expect(await theirs.get('status')).toBeUndefined();
    expect(await theirs.entries()).toEqual([]);
  });

  it('remove hides an entry at once; ttlSeconds makes entries expire', async () => {
    const board = new Blackboard({
      client,
      board: { scope: 'space', id: 'swarm-1' },
      ttlSeconds: 3600,
    });
    const item = await board.set('url', 'https://example.com');
    expect(Date.parse(item.expiresAt ?? '') - Date.parse(item.createdAt)).toBe(3_600_000);
    await board.set('keep', 1);
    await board.remove('url');
    await board.remove('never-set'); // nothing to remove: no write
    expect(await board.get('url')).toBeUndefined();
    expect((await board.entries()).map((entry) => entry.name)).toEqual(['keep']);
    expect(() => new Blackboard({ client, board: { scope: 'team' as never, id: 'x' } })).toThrow(
      expect.objectContaining({ code: 'validation_failed' }),
    );
    await expect(board.set('bad name', 1)).rejects.toMatchObject({ code: 'validation_failed' });
  });

  it("state(): seed 004's board fields, each list element an entry of its own", async () => {
    const board = new Blackboard({ client, board: { scope: 'space', id: 'fields' } });
    await board.set('summary', { pages: 3 }, { kind: 'result' });
    const [noteId] = await board.addNotes([
      { content: 'check the staging DNS', tags: ['dns'], priority: 'high' },
    ]);
    await board.addToList('createdUrls', ['https://example.com/a', 'https://example.com/b']);
    await board.addToList('createdUrls', ['https://example.com/a']); // there already: one entry
    await board.addToList('activeRoutines', ['deploy', 'lint']);
    await board.addToList('resourceIds', ['runbooks/deploy']);
    expect(await board.removeFromList('activeRoutines', ['lint', 'never'])).toEqual(['lint']);
    await board.addToList('completedTasks', ['lint']);
    const state = await board.state();
    expect(state).toMatchObject({
      board: { scope: 'space', id: 'fields' },
      taskResults: { summary: { pages: 3 } },
      createdUrls: ['https://example.com/a', 'https://example.com/b'],
      activeRoutines: ['deploy'],
      completedTasks: ['lint'],
      resourceIds: ['runbooks/deploy'],
      updatedBy: 'web',
    });
    expect(state.sharedNotes).toEqual([
      {
        id: noteId,
        content: 'check the staging DNS',
        createdBy: 'web',
        createdAt: expect.any(String),
        tags: ['dns'],
        priority: 'high',
      },
    ]);
    const newest = (await board.entries()).at(-1)?.item;
    expect(state.lastUpdated).toBe(newest?.createdAt);
    await board.setList('createdUrls', ['https://example.com/b', 'https://example.com/c']);
    expect((await board.state()).createdUrls).toEqual([
      'https://example.com/b',
      'https://example.com/c',
    ]);
    const theirs = new Blackboard({ client: outsider, board: { scope: 'space', id: 'fields' } });
    expect(await theirs.state()).toMatchObject({
      taskResults: {},
      sharedNotes: [],
      updatedBy: null,
    });
  });

  it("updates() yields this board's blackboard-updated events only", async () => {
    const board = new Blackboard({ client, board: { scope: 'thread', id: 'watched' } });
    const noise = new Blackboard({ client, board: { scope: 'thread', id: 'noise' } });
    const controller = new AbortController();
    const seen: BlackboardEvent[] = [];
    let markReady: () => void = () => {};
    const ready = new Promise<void>((resolve) => {
      markReady = resolve;
    });
    const reading = (async () => {
      for await (const update of board.updates({ signal: controller.signal, onReady: markReady })) {
        seen.push(update);
        if (update.entry === 'last') controller.abort();
      }
    })();
    await ready;
    await noise.set('first', 'not for us');
    await client.write({
      type: 'status',
      title: 'not a board entry',
      relevanceTags: ['blackboard'],
    });
    await board.set('first', 1);
    await board.set('first', 2);
    await board.set('last', true);
    await reading;
    expect(seen.map((update) => [update.entry, update.change, update.item.content])).toEqual([
      ['first', 'context-added', '1'],
      // The new value is added, then the one it replaced is marked superseded.
      ['first', 'context-added', '2'],
      ['first', 'context-superseded', '1'],
      ['last', 'context-added', 'true'],
    ]);
  });

  it('optimize: archived entries and referenced values move to resources; the board fits', async () => {
    const board = new Blackboard({ client, board: { scope: 'thread', id: 'busy' } });
    const resources = new PersistentResources({ client });
    for (let index = 0; index < 5; index += 1) await board.set(`note-${index}`, `note ${index}`);
    await board.set('table', { rows: 'r'.repeat(2000) });
    const result = await board.optimize(
      new ContextOptimizer({
        techniques: ['reference', 'summarize', 'archive'],
        referencePrefix: 'ref/busy/',
      }),
      { maxEntries: 4, maxValueBytes: 200 },
      resources,
    );
    expect(result.withinBounds).toBe(true);
    const names = (await board.entries()).map((entry) => entry.name);
    expect(names).toHaveLength(4);
    expect(names).toEqual(
      expect.arrayContaining(['optimizer-summary', 'table', 'note-4', 'note-3']),
    );
    expect(await board.get('table')).toEqual({ $ref: 'ref/busy/table', bytes: 2011 });
    expect(await resources.get('ref/busy/table')).toEqual({ rows: 'r'.repeat(2000) });
    expect(await resources.get('archive/thread/busy/note-0')).toBe('note 0');
    expect(await board.get('note-0')).toBeUndefined();
    expect(await board.get('optimizer-summary')).toEqual({
      folded: 3,
      names: ['note-0', 'note-1', 'note-2'],
    });
  });
});

describe('PersistentResources', () => {
  it('keyed, long-lived, searchable; a second put replaces the value', async () => {
    const resources = new PersistentResources({ client, agentId: 'librarian' });
    await resources.put('runbooks/deploy', 'Deploy with blue-green switching', { tags: ['ops'] });
    const item = await resources.put('runbooks/deploy', 'Deploy with canary releases');
    expect(item).toMatchObject({
      key: 'resource/runbooks/deploy',
      expiresAt: null,
      scope: 'global',
      source: { agentId: 'librarian' },
    });
    expect(await resources.get('runbooks/deploy')).toBe('Deploy with canary releases');
    const found = await resources.search('canary');
    expect(found.results.map((result) => result.item.id)).toEqual([item.id]);
    expect((await resources.search('blue-green')).results).toEqual([]); // superseded
    await expect(resources.put('/bad', 1)).rejects.toMatchObject({ code: 'validation_failed' });
  });

  it('typed: a type, title, tags and visibility that later puts keep; add and update check first', async () => {
    const resources = new PersistentResources({ client });
    await resources.put(
      'routines/release',
      { steps: ['tag', 'publish'] },
      {
        type: 'routine',
        title: 'Release routine',
        tags: ['release'],
      },
    );
    await resources.put('routines/release', { steps: ['tag', 'build', 'publish'] });
    expect(await resources.read('routines/release')).toMatchObject({
      name: 'routines/release',
      type: 'routine',
      title: 'Release routine',
      tags: ['release'],
      visibility: 'team',
      value: { steps: ['tag', 'build', 'publish'] },
      createdBy: 'web',
    });
    await resources.put(
      'apis/github',
      { baseUrl: 'https://api.github.com' },
      { type: 'api-record' },
    );
    expect((await resources.list({ type: 'routine' })).map((r) => r.name)).toEqual([
      'routines/release',
    ]);
    expect((await resources.list({ prefix: 'apis' })).map((r) => r.type)).toEqual(['api-record']);
    await expect(resources.put('routines/release', 1, { expect: 'new' })).rejects.toMatchObject({
      code: 'conflict',
    });
    await expect(resources.put('routines/none', 1, { expect: 'existing' })).rejects.toMatchObject({
      code: 'not_found',
    });
  });

  it('delete removes the value and its history, for the team only', async () => {
    const resources = new PersistentResources({ client });
    const old = await resources.put('drafts/plan', 'plan with the fjord codename');
    await resources.put('drafts/plan', 'plan v2');
    expect(await new PersistentResources({ client: outsider }).delete('drafts/plan')).toBe(false);
    expect(await resources.delete('drafts/plan')).toBe(true);
    expect(await resources.get('drafts/plan')).toBeUndefined();
    expect(await resources.delete('drafts/plan')).toBe(false);
    const history = await client.list({ key: 'resource/drafts/plan', includeSuperseded: true });
    expect(history.items).toEqual([]);
    await expect(client.get(old.id)).rejects.toMatchObject({ code: 'not_found' });
    expect((await client.search({ query: 'fjord codename' })).results).toEqual([]);
    await resources.put('drafts/plan', 'a new plan');
    expect(await resources.get('drafts/plan')).toBe('a new plan');
  });
});
