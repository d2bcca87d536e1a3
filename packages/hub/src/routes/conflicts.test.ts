import { stableId } from '@ctxbus/core';
import type { Store } from '@ctxbus/store';
import { openSqliteStore } from '@ctxbus/store';
import { TEST_WAIT_MS } from '@ctxbus/test-kit';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { mintToken } from '../auth.js';
import type { Hub } from '../create-hub.js';
import { createHub } from '../create-hub.js';

// Conflicts through the hub's HTTP handler, on the hub's own clock (which the test turns, so
// "within the window" and "outside it" are exact): two runtimes writing different values on one
// key within the window raise one conflict item naming both; one runtime rewriting its own key,
// the same value twice, or a write outside the window raise none; only a person resolves.

let store: Store;
let hub: Hub;
let nowMs: number;
const tokens: Record<string, string> = {};

beforeEach(async () => {
  nowMs = Date.parse('2026-11-28T09:00:00.000Z');
  store = openSqliteStore({ path: ':memory:' });
  hub = await createHub({
    store,
    clock: () => new Date(nowMs),
    validateResponses: true,
    conflictWindowMs: 10 * 60_000,
  });
  for (const runtime of ['claude-code', 'openclaw', 'cli', 'telegram']) {
    tokens[runtime] = (await mintToken(store, { role: 'runtime', teamId: 'acme', runtime })).token;
  }
  tokens.admin = (await mintToken(store, { role: 'admin', teamId: null, runtime: null })).token;
});

afterEach(async () => {
  await hub.close();
  await store.close();
});

async function call(method: string, path: string, runtime: string, body?: unknown) {
  const response = await hub.app.request(path, {
    method,
    headers: {
      authorization: `Bearer ${tokens[runtime]}`,
      ...(body !== undefined && { 'content-type': 'application/json' }),
    },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as any };
}

async function write(runtime: string, title: string, key = 'project/db') {
  const { status, body } = await call('POST', '/api/context', runtime, {
    type: 'decision',
    title,
    key,
  });
  expect(status).toBe(201);
  return body.items[0] as { id: string; title: string };
}

const openConflicts = async () =>
  (await call('GET', '/api/conflicts', 'claude-code')).body.conflicts as any[];

describe('conflict detection', () => {
  it("raises the conflict whose id a runtime took first: the hub's ids are keyed with the database's secret", async () => {
    const first = await write('claude-code', 'Use PostgreSQL');
    // The winner's id is the writer's choice, so its conflict's unkeyed id was computable.
    const winner = '01a230eb-aaaa-7bbb-8ccc-0123456789ab';
    const squat = await call('POST', '/api/context', 'openclaw', {
      id: stableId('ctxbus-conflict', first.id, winner),
      type: 'status',
      title: 'harmless',
    });
    expect(squat.status).toBe(201);
    const second = await call('POST', '/api/context', 'openclaw', {
      id: winner,
      type: 'decision',
      title: 'Use MySQL',
      key: 'project/db',
    });
    expect(second.status).toBe(201);
    const conflicts = await openConflicts();
    expect(conflicts.map((conflict) => conflict.values.map((v: any) => v.id))).toEqual([
      [first.id, winner],
    ]);
  });

  it('raises one conflict naming both runtimes and values; the newer value holds the key', async () => {
    const first = await write('claude-code', 'Use PostgreSQL');
    nowMs += 60_000;
    const second = await write('openclaw', 'Use MySQL');
    const conflicts = await openConflicts();
    expect(conflicts).toHaveLength(1);
    const [conflict] = conflicts;
    expect(conflict.key).toBe('project/db');
    expect(conflict.values.map((v: any) => [v.id, v.runtime, v.title])).toEqual([
      [first.id, 'claude-code', 'Use PostgreSQL'],
      [second.id, 'openclaw', 'Use MySQL'],
    ]);
    expect(conflict.item).toMatchObject({
      type: 'alert',
      urgency: 'blocking',
      key: 'conflict/project/db',
      source: { runtime: 'hub' },
    });
    expect(conflict.item.relevanceTags).toContain('conflict');
    expect(conflict.item.content).toContain('claude-code');
    expect(conflict.item.content).toContain('openclaw');
    // Last-write-wins: the key's live value is openclaw's.
    const held = await call('GET', '/api/context?key=project/db', 'cli');
    expect(held.body.items.map((item: any) => item.id)).toEqual([second.id]);
  });

  it('raises none for one runtime rewriting its key, for the same value, or outside the window', async () => {
    await write('claude-code', 'v1');
    nowMs += 1_000;
    await write('claude-code', 'v2');
    expect(await openConflicts()).toEqual([]);
    nowMs += 1_000;
    await write('openclaw', 'v2');
    expect(await openConflicts()).toEqual([]);
    nowMs += 10 * 60_000 + 1;
    await write('claude-code', 'v3');
    expect(await openConflicts()).toEqual([]);
    // Exactly the window still counts.
    nowMs += 10 * 60_000;
    await write('openclaw', 'v4');
    expect(await openConflicts()).toHaveLength(1);
  });

  it('raises none when the writer named the value it replaces (it saw it)', async () => {
    const first = await write('claude-code', 'v1');
    const { status } = await call('POST', '/api/context', 'openclaw', {
      type: 'decision',
      title: 'v2',
      key: 'project/db',
      supersedes: first.id,
    });
    expect(status).toBe(201);
    expect(await openConflicts()).toEqual([]);
  });

  it('a newer conflict on the key replaces the older one', async () => {
    await write('claude-code', 'a');
    await write('openclaw', 'b');
    const [older] = await openConflicts();
    await write('claude-code', 'c');
    const conflicts = await openConflicts();
    expect(conflicts).toHaveLength(1);
    expect(conflicts[0].values.map((v: any) => v.title)).toEqual(['b', 'c']);
    const stale = await call('POST', `/api/conflicts/${older.id}/resolve`, 'cli', {
      keep: older.values[0].id,
    });
    expect(stale.status).toBe(409);
    expect(stale.body.error.details.reason).toBe('superseded');
  });
});

describe('resolving a conflict', () => {
  it('only people pick: an agent is refused (403, audited), the CLI restores the kept value', async () => {
    const first = await write('claude-code', 'Use PostgreSQL');
    const second = await write('openclaw', 'Use MySQL');
    const [conflict] = await openConflicts();

    for (const agent of ['claude-code', 'openclaw']) {
      const refused = await call('POST', `/api/conflicts/${conflict.id}/resolve`, agent, {
        keep: first.id,
      });
      expect(refused.status).toBe(403);
      expect(refused.body.error.details).toMatchObject({ reason: 'approver_required' });
    }
    const bad = await call('POST', `/api/conflicts/${conflict.id}/resolve`, 'cli', {
      keep: conflict.id,
    });
    expect(bad.status).toBe(400);

    nowMs += 30_000;
    const resolved = await call('POST', `/api/conflicts/${conflict.id}/resolve`, 'cli', {
      keep: first.id,
      note: 'we run PostgreSQL already',
    });
    expect(resolved.status).toBe(200);
    // The resolution shows the conflict it closed: the id resolve was given, when it was raised.
    expect(resolved.body.conflict).toMatchObject({
      id: conflict.id,
      raisedAt: conflict.raisedAt,
      status: 'resolved',
      resolution: { keep: first.id, by: 'cli', note: 'we run PostgreSQL already' },
    });
    expect(resolved.body.conflict.item.id).not.toBe(conflict.id);
    const kept = resolved.body.kept;
    expect(kept).toMatchObject({
      title: 'Use PostgreSQL',
      key: 'project/db',
      supersedes: second.id,
      source: { runtime: 'cli' },
      runtimeOptions: { ctxbus: { chosenBy: 'cli', restoredFrom: first.id } },
    });
    const held = await call('GET', '/api/context?key=project/db', 'claude-code');
    expect(held.body.items.map((item: any) => item.id)).toEqual([kept.id]);
    // The restore raised no conflict of its own, and the conflict is closed.
    expect(await openConflicts()).toEqual([]);
    const all = await call('GET', '/api/conflicts?status=all', 'claude-code');
    expect(all.body.conflicts.map((c: any) => [c.id, c.status])).toEqual([
      [conflict.id, 'resolved'],
    ]);

    const again = await call('POST', `/api/conflicts/${conflict.id}/resolve`, 'telegram', {
      keep: second.id,
    });
    expect(again.status).toBe(409);
    expect(again.body.error.details.reason).toBe('already_resolved');

    const audit = await call('GET', '/api/audit?limit=50', 'cli');
    const kinds = audit.body.records.map((record: any) => [record.kind, record.actor]);
    expect(kinds).toEqual([
      ['conflict.refused', 'claude-code'],
      ['conflict.refused', 'openclaw'],
      ['conflict.resolved', 'cli'],
    ]);
  });

  it("an agent cannot close or hide a conflict by writing the hub's items: conflict keys and supersedes are refused (403, audited)", async () => {
    await write('claude-code', 'Use Redis', 'project/cache');
    await write('openclaw', 'Use Memcached', 'project/cache');
    const [conflict] = await openConflicts();
    const attempts: [string, unknown][] = [
      [
        'POST /api/context',
        { type: 'decision', title: 'ok', key: 'conflict/project/cache', supersedes: conflict.id },
      ],
      ['POST /api/context', { type: 'decision', title: 'settled', supersedes: conflict.id }],
      ['POST /api/context', { type: 'status', title: 'fine', key: 'conflict/project/other' }],
    ];
    for (const [route, body] of attempts) {
      const [method, path] = route.split(' ') as [string, string];
      const refused = await call(method, path, 'openclaw', body);
      expect(refused.status, JSON.stringify(body)).toBe(403);
      expect(refused.body.error.details).toMatchObject({ reason: 'reserved_key' });
    }
    const forgot = await call('DELETE', '/api/context?key=conflict/project/cache', 'openclaw');
    expect(forgot.status).toBe(403);
    // The conflict is still open, for a person to resolve; each attempt is in the audit log.
    expect((await openConflicts()).map((open) => open.id)).toEqual([conflict.id]);
    const audit = await call('GET', '/api/audit?limit=50', 'cli');
    expect(
      audit.body.records.filter((record: any) => record.kind === 'conflict.refused'),
    ).toHaveLength(4);
    const resolved = await call('POST', `/api/conflicts/${conflict.id}/resolve`, 'cli', {
      keep: conflict.values[0].id,
    });
    expect(resolved.status).toBe(200);
  });

  it('keeping the value that holds the key writes no new value; an admin names the team', async () => {
    await write('claude-code', 'a');
    const second = await write('openclaw', 'b');
    const [conflict] = await openConflicts();
    const noTeam = await call('POST', `/api/conflicts/${conflict.id}/resolve`, 'admin', {
      keep: second.id,
    });
    expect(noTeam.status).toBe(400);
    const resolved = await call('POST', `/api/conflicts/${conflict.id}/resolve`, 'admin', {
      keep: second.id,
      team: 'acme',
    });
    expect(resolved.status).toBe(200);
    expect(resolved.body.kept.id).toBe(second.id);
    expect(resolved.body.conflict.resolution).toMatchObject({ restoredId: null });
    expect(resolved.body.conflict.resolution.by).toMatch(/^admin:/);
  });
});

describe('a conflict item the store refused', () => {
  it('is written again until it is stored, once', async () => {
    await hub.close();
    let refusals = 0;
    const flaky = new Proxy(store, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (typeof value !== 'function') return value;
        if (property !== 'writeItems') return value.bind(target);
        return async (items: { source: { runtime: string } }[]) => {
          if (refusals < 2 && items.some((item) => item.source.runtime === 'hub')) {
            refusals += 1;
            throw new Error('injected: the conflict write failed');
          }
          return value.call(target, items);
        };
      },
    });
    hub = await createHub({
      store: flaky,
      clock: () => new Date(nowMs),
      conflictWindowMs: 10 * 60_000,
    });
    await write('claude-code', 'Use PostgreSQL');
    nowMs += 1_000;
    await write('openclaw', 'Use MySQL');
    await vi.waitFor(async () => expect(await openConflicts()).toHaveLength(1), {
      timeout: TEST_WAIT_MS,
      interval: 50,
    });
    expect(refusals).toBe(2);
    const all = await store.listItems({ teamId: 'acme', runtime: 'cli' }, { limit: 50 });
    expect(all.filter((item) => item.source.runtime === 'hub')).toHaveLength(1);
  });
});
