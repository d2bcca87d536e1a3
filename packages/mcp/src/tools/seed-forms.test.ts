import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCtxbusMcpServer } from '../create-ctxbus-mcp-server.js';
import type { ConnectedClient, TestHub } from '../test-kit.js';
import { connectInMemory, REPO_CAPABILITIES, startTestHub, textOf } from '../test-kit.js';

// The design's MCP calls exactly as seed 000 writes them (context_read(scope, query),
// context_search(query, filters), task_status(taskId, newStatus), task_update(taskId, status)),
// against a real hub: each does what the seed says, and an argument no form takes is refused.

let hub: TestHub;
let mcp: ConnectedClient;

beforeAll(async () => {
  hub = await startTestHub('claude-code', { capabilitiesFile: REPO_CAPABILITIES });
  mcp = await connectInMemory(createCtxbusMcpServer({ backend: hub.client }));
  await hub.client.write([
    {
      type: 'decision',
      title: 'Use PostgreSQL for the team database',
      content: 'The outage review chose PostgreSQL over MySQL for replication.',
      relevanceTags: ['database'],
    },
    {
      type: 'alert',
      title: 'Database outage on staging',
      content: 'Replication lag over 5 minutes; the outage is ongoing.',
      urgency: 'attention',
      relevanceTags: ['database'],
    },
    { type: 'discovery', title: 'The CI cache key includes the lockfile', relevanceTags: ['ci'] },
  ]);
});

afterAll(async () => {
  await mcp.close();
  await hub.close();
});

async function call(name: string, args: Record<string, unknown>) {
  return mcp.client.callTool({ name, arguments: args });
}

const titles = (result: Awaited<ReturnType<typeof call>>, list: 'items' | 'results') => {
  const structured = result.structuredContent as Record<string, { title?: string }[]>;
  return (structured[list] ?? []).map((entry) =>
    list === 'items' ? entry.title : (entry as { item: { title: string } }).item.title,
  );
};

describe("seed 000's MCP calls", () => {
  it('context_write(item) and memory_write(item): the item wrapped in "item" is written as given', async () => {
    const written = await call('context_write', {
      item: {
        type: 'decision',
        title: 'Ship on Fridays only with a rollback plan',
        relevanceTags: ['release'],
      },
    });
    expect(written.isError, textOf(written)).toBeFalsy();
    const stored = await hub.client.list({ tags: ['release'] });
    expect(stored.items.map((item) => [item.type, item.title])).toEqual([
      ['decision', 'Ship on Fridays only with a rollback plan'],
    ]);
    const remembered = await call('memory_write', {
      item: { key: 'team/conventions/release', title: 'Releases need a rollback plan' },
    });
    expect(remembered.isError, textOf(remembered)).toBeFalsy();
    const held = await hub.client.list({ key: 'team/conventions/release' });
    expect(held.items.map((item) => item.title)).toEqual(['Releases need a rollback plan']);
    // Only the wrapper alone: beside other arguments, "item" is an argument the tool refuses.
    const mixed = await call('context_write', { item: { type: 'status', title: 'x' }, title: 'y' });
    expect(mixed.isError).toBe(true);
    expect(textOf(mixed)).toMatch(/takes no "item"/);
    // Our name and the seed's for one field: the same value is fine, two values are refused.
    const agreed = { type: 'status', title: 'tags twice', tags: ['a'], relevanceTags: ['a'] };
    expect((await call('context_write', agreed)).isError).toBeFalsy();
    const twice: [Record<string, unknown>, RegExp][] = [
      [{ tags: ['a'], relevanceTags: ['b'] }, /tags and relevanceTags name the same field/],
      [{ ttlSeconds: 10, expiresAfterSeconds: 20 }, /ttlSeconds and expiresAfterSeconds/],
      [{ expiresAfterSeconds: 10, ttl: 20 }, /expiresAfterSeconds and ttl name the same field/],
    ];
    for (const [fields, named] of twice) {
      const both = await call('context_write', { type: 'status', title: 'twice', ...fields });
      expect(both.isError).toBe(true);
      expect(textOf(both)).toMatch(named);
    }
  });

  it("context_write takes the seed item's ttl, as the REST write does", async () => {
    const before = Date.now();
    const written = await call('context_write', {
      type: 'status',
      title: 'deploy running',
      ttl: 600,
    });
    expect(written.isError, textOf(written)).toBeFalsy();
    const { item } = written.structuredContent as { item: { expiresAt: string } };
    const lives = Date.parse(item.expiresAt) - before;
    expect(lives).toBeGreaterThan(590_000);
    expect(lives).toBeLessThanOrEqual(601_000);
  });

  it('context_read(scope, query) ranks by the query instead of ignoring it', async () => {
    const read = await call('context_read', { scope: 'global', query: 'database outage' });
    expect(read.isError).toBeFalsy();
    const found = titles(read, 'items');
    expect(found).toContain('Database outage on staging');
    expect(found).not.toContain('The CI cache key includes the lockfile');
    expect(textOf(read)).toContain('matching "database outage"');
  });

  it('context_read refuses a query with filters only a listing has, naming them', async () => {
    const read = await call('context_read', { query: 'database', unconsumed: true });
    expect(read.isError).toBe(true);
    expect(textOf(read)).toMatch(/cannot be combined with unconsumed/);
  });

  it('context_search(query, filters) applies the filters', async () => {
    const search = await call('context_search', {
      query: 'database outage',
      filters: { type: 'alert' },
    });
    expect(search.isError).toBeFalsy();
    expect(titles(search, 'results')).toEqual(['Database outage on staging']);
    // Seed 000 filters by scope, relevance tags and urgency, under the item's own names.
    const found = async (args: Record<string, unknown>) => {
      const result = await call('context_search', args);
      expect(result.isError, textOf(result)).toBeFalsy();
      return titles(result, 'results').sort();
    };
    expect(await found({ query: 'database', filters: { urgency: 'attention' } })).toEqual([
      'Database outage on staging',
    ]);
    expect(
      await found({ query: 'database', filters: { urgency: ['background', 'blocking'] } }),
    ).toEqual(['Use PostgreSQL for the team database']);
    expect(await found({ query: 'database', urgency: 'blocking' })).toEqual([]);
    expect(await found({ query: 'database cache', filters: { relevanceTags: ['ci'] } })).toEqual([
      'The CI cache key includes the lockfile',
    ]);
    expect(
      await found({
        query: 'database cache',
        tags: ['database'],
        filters: { relevanceTags: ['database'], urgency: 'attention', scope: 'global' },
      }),
    ).toEqual(['Database outage on staging']);
    const disagree = await call('context_search', {
      query: 'database',
      tags: ['database'],
      filters: { relevanceTags: ['ci'] },
    });
    expect(disagree.isError).toBe(true);
    expect(textOf(disagree)).toMatch(/tags and relevanceTags name the same filter/);
    // A filter no form takes is refused, naming the filters there are.
    for (const filters of [{ minUrgency: 'attention' }, { relevance_tags: ['ci'] }]) {
      const unknownFilter = await call('context_search', { query: 'database', filters });
      expect(unknownFilter.isError).toBe(true);
      expect(textOf(unknownFilter)).toMatch(
        /invalid input: filters: takes no "(minUrgency|relevance_tags)"; the filters are type, scope, scopeKey, tags, relevanceTags, urgency, includeSuperseded/,
      );
    }
    const badUrgency = await call('context_search', {
      query: 'database',
      filters: { urgency: 'urgent' },
    });
    expect(badUrgency.isError).toBe(true);
    expect(textOf(badUrgency)).toMatch(/filters\.urgency/);
    const twice = await call('context_search', {
      query: 'database',
      type: 'decision',
      filters: { type: 'alert' },
    });
    expect(twice.isError).toBe(true);
    expect(textOf(twice)).toMatch(/type given both at the top and in filters/);
  });

  it('task_status(taskId, newStatus) moves the task, and task_update(taskId, status) needs no note', async () => {
    const create = async (title: string) => {
      const task = await hub.client.createTask({ title, requiredCapabilities: ['search'] });
      return task.task.id;
    };
    const first = await create('seed form: status with newStatus');
    const moved = await call('task_status', { taskId: first, newStatus: 'CANCELED' });
    expect(moved.isError).toBeFalsy();
    expect((moved.structuredContent as { task: { state: string } }).task.state).toBe('CANCELED');
    expect((await hub.client.task(first)).task.state).toBe('CANCELED');

    const second = await create('seed form: update without a note');
    const updated = await call('task_update', { taskId: second, status: 'CANCELED' });
    expect(updated.isError).toBeFalsy();
    expect((await hub.client.task(second)).task.state).toBe('CANCELED');

    const readOnly = await call('task_status', { taskId: second, note: 'stray' });
    expect(readOnly.isError).toBe(true);
    expect(textOf(readOnly)).toMatch(/note and token go with newStatus/);
  });

  it('refuses an argument no form of the tool takes, naming the ones it does', async () => {
    const cases: [string, Record<string, unknown>][] = [
      ['context_read', { scope: 'global', filter: 'decisions' }],
      ['context_search', { query: 'database', max: 3 }],
      ['task_status', { taskId: 'task_x', status: 'CANCELED' }],
      ['context_write', { type: 'decision', title: 'x', priority: 'high' }],
    ];
    for (const [name, args] of cases) {
      const result = await call(name, args);
      expect(result.isError, name).toBe(true);
      expect(textOf(result)).toMatch(new RegExp(`${name} takes no "\\w+"; it takes `));
    }
  });
});
