import { createClient } from '@ctxbus/client';
import type { SwarmBlackboard } from '@ctxbus/core/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCtxbusMcpServer } from '../create-ctxbus-mcp-server.js';
import type { ConnectedClient, TestHub } from '../test-kit.js';
import { connectInMemory, startTestHub, textOf } from '../test-kit.js';

// Seed 004's layers 2 and 3 through MCP, with the real SDK client against a real hub: the
// blackboard (update_swarm_shared_state) and persistent resources (resource_manage), as the
// seed writes the calls, with bad input refused, teams kept apart and private values private.

let hub: TestHub;
/** Claude Code and OpenClaw of team acme, and Claude Code of team globex. */
let claude: ConnectedClient;
let openclaw: ConnectedClient;
let globex: ConnectedClient;

async function connect(token: string): Promise<ConnectedClient> {
  const backend = createClient({ url: hub.url, token });
  return connectInMemory(createCtxbusMcpServer({ backend }));
}

beforeAll(async () => {
  hub = await startTestHub('claude-code');
  claude = await connect(hub.token);
  openclaw = await connect(await hub.mint('openclaw'));
  globex = await connect(await hub.mint('claude-code', 'globex'));
});

afterAll(async () => {
  for (const client of [claude, openclaw, globex]) await client.close();
  await hub.close();
});

async function call(as: ConnectedClient, name: string, args: Record<string, unknown>) {
  return as.client.callTool({ name, arguments: args });
}

/** A call that must succeed; its structured result. */
async function ok<T>(as: ConnectedClient, name: string, args: Record<string, unknown>): Promise<T> {
  const result = await call(as, name, args);
  expect(result.isError, textOf(result)).toBeFalsy();
  return result.structuredContent as T;
}

/** A call that must fail; its one-line message. */
async function refused(as: ConnectedClient, name: string, args: Record<string, unknown>) {
  const result = await call(as, name, args);
  expect(result.isError, JSON.stringify(args)).toBe(true);
  return textOf(result);
}

/** The hub as REST sees it (Claude Code of team acme), to look at the items as stored. */
const raw = () => createClient({ url: hub.url, token: hub.token });

const board = (as: ConnectedClient, args: Record<string, unknown> = {}) =>
  ok<{ board: SwarmBlackboard; changes: string[] }>(as, 'update_swarm_shared_state', args);

describe('update_swarm_shared_state', () => {
  it('is listed with both layer tools', async () => {
    const { tools } = await claude.client.listTools();
    const names = tools.map((tool) => tool.name);
    expect(names).toEqual(expect.arrayContaining(['update_swarm_shared_state', 'resource_manage']));
  });

  it("takes the seed's (key, value); another runtime of the team reads it", async () => {
    const written = await board(claude, {
      key: 'research-summary',
      value: { sources: 3, verdict: 'go' },
    });
    expect(written.changes).toEqual(['set research-summary']);
    const read = await board(openclaw);
    expect(read.board).toMatchObject({
      board: { scope: 'space', id: 'swarm' },
      taskResults: { 'research-summary': { sources: 3, verdict: 'go' } },
      updatedBy: 'claude-code',
    });
    expect(read.changes).toEqual([]);
    expect(Date.parse(read.board.lastUpdated ?? '')).not.toBeNaN();
  });

  it('changes nothing when the hub refuses a write, and names the argument that was too big', async () => {
    const args = { board: 'thread:T-atomic' };
    await board(claude, { ...args, add: { taskResults: { build: 'green', deploy: 'done' } } });
    await board(claude, { ...args, add: { sharedNotes: ['keep me'] } });
    const before = (await board(claude, args)).board;
    const big = 'x'.repeat(150_000);
    // A replace writes first: refused, it removes nothing.
    const replaced = await refused(claude, 'update_swarm_shared_state', {
      ...args,
      key: 'taskResults',
      value: { build: 'red', big },
    });
    expect(replaced).toMatch(/taskResults\.big: /);
    expect(replaced).not.toMatch(/body\./);
    await refused(claude, 'update_swarm_shared_state', {
      ...args,
      key: 'sharedNotes',
      value: [{ content: big }],
    });
    // An add is one write: the small result is not kept beside the refused big one.
    await refused(claude, 'update_swarm_shared_state', {
      ...args,
      add: { taskResults: { p1: 1, p2: big } },
    });
    expect(
      await refused(claude, 'update_swarm_shared_state', { ...args, key: 'big', value: big }),
    ).toMatch(/^value: |: value: /);
    const after = (await board(claude, args)).board;
    expect(after.taskResults).toEqual(before.taskResults);
    expect(after.taskResults).toEqual({ build: 'green', deploy: 'done' });
    expect(after.sharedNotes.map((note) => note.content)).toEqual(['keep me']);
  });

  it("keeps seed 004's board fields: notes with priority, URLs, routines, tasks", async () => {
    const args = { board: 'thread:T-7' };
    await board(claude, { ...args, key: 'createdUrls', value: ['https://example.com/pr/1'] });
    await board(openclaw, {
      ...args,
      add: {
        sharedNotes: [
          { content: 'staging DNS is flaky', priority: 'high', tags: ['dns'] },
          'ask ops about quotas',
        ],
        activeRoutines: ['deploy', 'lint'],
        createdUrls: ['https://example.com/pr/2'],
        resourceIds: ['runbooks/deploy'],
      },
    });
    const after = await board(claude, {
      ...args,
      remove: { activeRoutines: ['lint'] },
      add: { completedTasks: ['lint'] },
    });
    expect(after.board).toMatchObject({
      board: { scope: 'thread', id: 'T-7' },
      createdUrls: ['https://example.com/pr/1', 'https://example.com/pr/2'],
      activeRoutines: ['deploy'],
      completedTasks: ['lint'],
      resourceIds: ['runbooks/deploy'],
      updatedBy: 'claude-code',
    });
    expect(
      after.board.sharedNotes.map(({ content, priority, tags, createdBy }) => ({
        content,
        priority,
        tags,
        createdBy,
      })),
    ).toEqual([
      { content: 'staging DNS is flaky', priority: 'high', tags: ['dns'], createdBy: 'openclaw' },
      { content: 'ask ops about quotas', priority: undefined, tags: [], createdBy: 'openclaw' },
    ]);
    // A thread's board is its own: the team's default board has none of it.
    expect((await board(claude)).board.createdUrls).toEqual([]);
    // Replacing a field keeps exactly what was given.
    const replaced = await board(claude, { ...args, key: 'activeRoutines', value: 'release' });
    expect(replaced.board.activeRoutines).toEqual(['release']);
    const noteId = after.board.sharedNotes[1]?.id ?? '';
    const dropped = await board(claude, { ...args, remove: { sharedNotes: [noteId] } });
    expect(dropped.board.sharedNotes.map((note) => note.content)).toEqual(['staging DNS is flaky']);
    expect(textOf(await call(claude, 'update_swarm_shared_state', args))).toMatch(
      /\[high\] staging DNS is flaky .*#dns/,
    );
  });

  it("takes a note back as it returned it: createdBy and createdAt are the hub's", async () => {
    const args = { board: 'thread:T-round-trip' };
    const note = {
      id: 'n1',
      content: 'note one',
      createdBy: 'claude-code',
      createdAt: '2026-02-07T00:00:00Z',
      tags: [],
      priority: 'low',
    };
    const written = await board(openclaw, { ...args, key: 'sharedNotes', value: [note] });
    const [stored] = written.board.sharedNotes;
    expect(stored).toMatchObject({ id: 'n1', content: 'note one', priority: 'low', tags: [] });
    expect(stored?.createdBy).toBe('openclaw');
    expect(stored?.createdAt).not.toBe('2026-02-07T00:00:00Z');
    // What the board returned goes back unchanged.
    const again = await board(claude, {
      ...args,
      key: 'sharedNotes',
      value: written.board.sharedNotes,
    });
    expect(again.board.sharedNotes.map(({ id, content }) => ({ id, content }))).toEqual([
      { id: 'n1', content: 'note one' },
    ]);
    expect(
      await refused(claude, 'update_swarm_shared_state', {
        ...args,
        key: 'sharedNotes',
        value: [{ ...note, author: 'me' }],
      }),
    ).toMatch(/value: for key "sharedNotes" give a note or a list of notes/);
  });

  it('stores a string value as the string itself, and reads it back a string', async () => {
    const args = { board: 'thread:T-strings' };
    await board(claude, {
      ...args,
      add: { sharedNotes: ['Use the staging DB for tests'] },
      key: 'answer',
      value: '42',
    });
    await board(claude, { ...args, key: 'flag', value: 'true' });
    await board(claude, { ...args, key: 'count', value: 42 });
    const read = (await board(openclaw, args)).board;
    expect(read.taskResults).toEqual({ answer: '42', flag: 'true', count: 42 });
    expect(read.sharedNotes.map((note) => [note.content, note.tags])).toEqual([
      ['Use the staging DB for tests', []],
    ]);
    const items = (await raw().list({ keyPrefix: 'blackboard/thread/T-strings' })).items;
    const contents = items.map((item) => [item.content, item.summary]).sort();
    expect(contents).toEqual([
      ['42', '42'],
      ['42', '42'],
      ['Use the staging DB for tests', 'Use the staging DB for tests'],
      ['true', 'true'],
    ]);
  });

  it('refuses bad input, naming the form it takes', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ key: 'x', value: 1, note: 'hi' }, /takes no "note"; it takes board, key, value/],
      [{ add: { urls: ['https://x'] } }, /add takes only sharedNotes, taskResults, resourceIds/],
      [{ key: 'orphan' }, /key needs a value: \{"key"/],
      [{ value: 3 }, /value and kind go with key/],
      [
        { key: 'createdUrls', value: { url: 'x' } },
        /for key "createdUrls" give a string or a list/,
      ],
      [{ key: 'lastUpdated', value: 'now' }, /lastUpdated is kept by the hub/],
      [{ key: 'createdUrls', value: [], kind: 'url' }, /kind goes with an entry key/],
      [{ key: 'has spaces', value: 1 }, /key: a blackboard entry name is letters/],
      [
        { add: { sharedNotes: [{ content: 'x', priority: 'urgent' }] } },
        /sharedNotes\[0\]: a note is text, or \{content, tags \(up to 10\), priority \(low, medium or high\)/,
      ],
      [{ board: 'team:x' }, /a board is "thread:<id>"/],
    ];
    for (const [args, message] of cases) {
      expect(await refused(claude, 'update_swarm_shared_state', args)).toMatch(message);
    }
  });

  it('another team never sees the board, nor removes from it', async () => {
    await board(claude, { board: 'isolated', key: 'plan', value: 'acme only' });
    const theirs = await board(globex, { board: 'isolated' });
    expect(theirs.board).toMatchObject({ taskResults: {}, updatedBy: null, lastUpdated: null });
    const attempt = await board(globex, { board: 'isolated', remove: { entries: ['plan'] } });
    expect(attempt.changes).toEqual(['plan was not on the board']);
    expect((await board(claude, { board: 'isolated' })).board.taskResults).toEqual({
      plan: 'acme only',
    });
  });

  it('a private entry stays with the runtime that wrote it', async () => {
    await board(claude, { board: 'mixed', key: 'draft', value: 'mine', visibility: 'private' });
    await board(claude, {
      board: 'mixed',
      add: { createdUrls: ['https://example.com/secret'] },
      visibility: 'private',
    });
    await board(openclaw, { board: 'mixed', key: 'shared', value: 'ours' });
    const seenByOpenclaw = await board(openclaw, { board: 'mixed' });
    expect(seenByOpenclaw.board.taskResults).toEqual({ shared: 'ours' });
    expect(seenByOpenclaw.board.createdUrls).toEqual([]);
    expect(seenByOpenclaw.board.updatedBy).toBe('openclaw');
    const seenByClaude = await board(claude, { board: 'mixed' });
    expect(seenByClaude.board.taskResults).toEqual({ draft: 'mine', shared: 'ours' });
    expect(seenByClaude.board.createdUrls).toEqual(['https://example.com/secret']);
  });
});

interface ResourceResult {
  action: string;
  resource?: {
    name: string;
    type: string | null;
    title: string;
    value: unknown;
    tags: string[];
    visibility: string;
  };
  resources?: { name: string; type: string | null }[];
  removed?: boolean;
}

const resource = (as: ConnectedClient, args: Record<string, unknown>) =>
  ok<ResourceResult>(as, 'resource_manage', args);

describe('resource_manage', () => {
  it('put, get, list (by type, prefix, query), update, delete', async () => {
    const put = await resource(claude, {
      action: 'put',
      name: 'runbooks/deploy',
      value: '1. tag vX.Y.Z 2. CI publishes to the harbour registry',
      type: 'note',
      title: 'How we deploy',
      tags: ['deploy'],
    });
    expect(put.resource).toMatchObject({ name: 'runbooks/deploy', type: 'note', tags: ['deploy'] });
    await resource(claude, {
      action: 'put',
      name: 'apis/github',
      value: { baseUrl: 'https://api.github.com' },
      type: 'api-record',
    });
    const got = await resource(openclaw, { action: 'get', name: 'runbooks/deploy' });
    expect(got.resource).toMatchObject({ title: 'How we deploy', visibility: 'team' });
    const byType = await resource(openclaw, { action: 'list', type: 'api-record' });
    expect(byType.resources?.map((r) => r.name)).toEqual(['apis/github']);
    const byPrefix = await resource(openclaw, { action: 'list', prefix: 'runbooks' });
    expect(byPrefix.resources?.map((r) => r.name)).toEqual(['runbooks/deploy']);
    const found = await resource(openclaw, { action: 'list', query: 'harbour registry' });
    expect(found.resources?.map((r) => r.name)).toEqual(['runbooks/deploy']);
    const updated = await resource(openclaw, {
      action: 'update',
      name: 'runbooks/deploy',
      value: '1. tag 2. build 3. publish',
    });
    expect(updated.resource).toMatchObject({
      type: 'note',
      title: 'How we deploy',
      tags: ['deploy'],
      value: '1. tag 2. build 3. publish',
    });
    const retitled = await resource(openclaw, {
      action: 'update',
      name: 'runbooks/deploy',
      title: 'Deploying',
    });
    expect(retitled.resource).toMatchObject({
      title: 'Deploying',
      value: '1. tag 2. build 3. publish',
    });
    expect(await resource(claude, { action: 'delete', name: 'runbooks/deploy' })).toEqual({
      action: 'delete',
      removed: true,
    });
    expect(
      await refused(openclaw, 'resource_manage', { action: 'get', name: 'runbooks/deploy' }),
    ).toMatch(/not found: no resource runbooks\/deploy to get/);
    expect(
      (await resource(openclaw, { action: 'list', query: 'harbour registry' })).resources,
    ).toEqual([]);
    expect(
      await refused(claude, 'resource_manage', { action: 'delete', name: 'runbooks/deploy' }),
    ).toMatch(/not found/);
  });

  it('stores a string value as the string itself; an older JSON-quoted one reads the same', async () => {
    const added = await resource(claude, {
      action: 'add',
      name: 'decisions/db-choice',
      type: 'note',
      value: 'PostgreSQL + pgvector',
    });
    expect(added.resource).toMatchObject({ value: 'PostgreSQL + pgvector', tags: [] });
    const [item] = (await raw().list({ key: 'resource/decisions/db-choice' })).items;
    expect([item?.content, item?.summary]).toEqual([
      'PostgreSQL + pgvector',
      'PostgreSQL + pgvector',
    ]);
    for (const value of ['42', 'true', '{"a": 1}']) {
      await resource(claude, { action: 'put', name: 'decisions/looks-like-json', value });
      const got = await resource(openclaw, { action: 'get', name: 'decisions/looks-like-json' });
      expect(got.resource?.value).toBe(value);
    }
    // As an older ctxbus wrote a string: JSON-quoted, untagged.
    await raw().write({
      type: 'discovery',
      title: 'decisions/old',
      content: '"PostgreSQL + pgvector"',
      key: 'resource/decisions/old',
      scope: 'global',
      relevanceTags: ['resource', 'resource-type:note'],
    });
    const old = await resource(openclaw, { action: 'get', name: 'decisions/old' });
    expect(old.resource?.value).toBe('PostgreSQL + pgvector');
  });

  it("takes the seed's add and update: add refuses an existing name, update a missing one", async () => {
    const added = await resource(claude, {
      action: 'add',
      name: 'routines/release',
      value: { steps: ['tag', 'publish'] },
      type: 'routine',
    });
    expect(added.resource).toMatchObject({ type: 'routine', value: { steps: ['tag', 'publish'] } });
    expect(
      await refused(claude, 'resource_manage', {
        action: 'add',
        name: 'routines/release',
        value: {},
      }),
    ).toMatch(/conflict: resource routines\/release exists already/);
    await resource(claude, {
      action: 'update',
      name: 'routines/release',
      value: { steps: ['tag', 'build', 'publish'] },
    });
    expect(
      await refused(claude, 'resource_manage', {
        action: 'update',
        name: 'routines/none',
        value: 1,
      }),
    ).toMatch(/not found: no resource routines\/none to update/);
  });

  it('refuses bad input, naming the form each action takes', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [
        { action: 'get', name: 'x', value: 1 },
        /value do not go with get: resource_manage get takes name, e\.g\. \{"action": "get"/,
      ],
      [
        { action: 'put', name: 'x' },
        /put needs value: resource_manage put takes name, value, type, title, tags, visibility/,
      ],
      [{ action: 'delete' }, /delete needs name/],
      [{ action: 'update', name: 'x' }, /nothing to update/],
      [{ action: 'list', query: 'x', prefix: 'y' }, /query or prefix, not both/],
      [{ action: 'fetch', name: 'x' }, /action: /],
      [
        { action: 'get', name: 'x', id: 'y' },
        /resource_manage takes no "id"; it takes action, name/,
      ],
      [{ action: 'put', name: '/bad', value: 1 }, /name: a key is a path/],
      [{ action: 'put', name: 'x', value: 1, type: 'spreadsheet' }, /type: /],
      // Too big: the value named, with the limit (not the REST body's internal field).
      [
        { action: 'put', name: 'big', value: 'v'.repeat(100_001) },
        /invalid input: value is 100,001 characters; a resource holds at most 100,000$/,
      ],
      [
        { action: 'update', name: 'big', value: { text: 'v'.repeat(100_000) } },
        /invalid input: value is 100,011 characters as JSON; a resource holds at most 100,000$/,
      ],
    ];
    for (const [args, message] of cases) {
      expect(await refused(claude, 'resource_manage', args)).toMatch(message);
    }
  });

  it('another team never sees, changes or deletes a resource', async () => {
    await resource(claude, {
      action: 'put',
      name: 'team/secret-plan',
      value: 'acme only',
      type: 'knowledge',
    });
    expect(
      await refused(globex, 'resource_manage', { action: 'get', name: 'team/secret-plan' }),
    ).toMatch(/not found/);
    expect((await resource(globex, { action: 'list' })).resources).toEqual([]);
    expect((await resource(globex, { action: 'list', query: 'acme only' })).resources).toEqual([]);
    expect(
      await refused(globex, 'resource_manage', { action: 'delete', name: 'team/secret-plan' }),
    ).toMatch(/not found/);
    expect(
      await refused(globex, 'resource_manage', {
        action: 'update',
        name: 'team/secret-plan',
        value: 'x',
      }),
    ).toMatch(/not found/);
    expect(
      (await resource(claude, { action: 'get', name: 'team/secret-plan' })).resource?.value,
    ).toBe('acme only');
  });

  it('a private resource stays with its runtime, and an update keeps it private', async () => {
    await resource(claude, {
      action: 'put',
      name: 'notes/private-idea',
      value: 'a lighthouse rewrite',
      visibility: 'private',
    });
    const updated = await resource(claude, {
      action: 'update',
      name: 'notes/private-idea',
      value: 'a lighthouse rewrite, v2',
    });
    expect(updated.resource?.visibility).toBe('private');
    expect(
      await refused(openclaw, 'resource_manage', { action: 'get', name: 'notes/private-idea' }),
    ).toMatch(/not found/);
    const listed = await resource(openclaw, { action: 'list', prefix: 'notes' });
    expect(listed.resources).toEqual([]);
    expect(
      (await resource(openclaw, { action: 'list', query: 'lighthouse rewrite' })).resources,
    ).toEqual([]);
    expect(
      await refused(openclaw, 'resource_manage', { action: 'delete', name: 'notes/private-idea' }),
    ).toMatch(/not found/);
    expect(
      (await resource(claude, { action: 'get', name: 'notes/private-idea' })).resource?.value,
    ).toBe('a lighthouse rewrite, v2');
  });
});
