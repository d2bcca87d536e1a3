import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CtxbusError } from '@ctxbus/core';
import type { SqliteStore } from '@ctxbus/store';
import { openSqliteStore } from '@ctxbus/store';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PresenceOptions } from './presence-registry.js';
import { PresenceRegistry } from './presence-registry.js';

const START = Date.parse('2026-01-01T00:00:00.000Z');
let now = START;
const clock = () => new Date(now);
let dir: string;
const opened: { registry: PresenceRegistry; store: SqliteStore }[] = [];

/** A registry over the test's SQLite file: several of them are hubs on one database. */
function registry(options: PresenceOptions = {}): PresenceRegistry {
  const store = openSqliteStore({ path: join(dir, 'ctxbus.db'), clock });
  const created = new PresenceRegistry(store, clock, { sweepIntervalMs: 0, ...options });
  opened.push({ registry: created, store });
  return created;
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'ctxbus-presence-'));
});

afterEach(async () => {
  for (const { registry: created, store } of opened.splice(0)) {
    created.close();
    await store.close();
  }
  rmSync(dir, { recursive: true, force: true });
  now = START;
});

async function codeOf(run: () => Promise<unknown>): Promise<string | undefined> {
  try {
    await run();
  } catch (error) {
    return CtxbusError.isInstance(error) ? error.code : 'not a CtxbusError';
  }
  return undefined;
}

const worker = { kind: 'worker', ttlSeconds: 30 } as const;

describe('PresenceRegistry', () => {
  it('keeps an announced instance until its time to live runs out, and a renewal extends it', async () => {
    const presence = registry();
    const first = await presence.announce('acme', 'claude-code', {
      instanceId: 'laptop-1',
      kind: 'worker',
      capabilities: ['code_execution', 'code_execution'],
      ttlSeconds: 30,
    });
    expect(first.expiresAt).toBe('2026-01-01T00:00:30.000Z');
    expect(await presence.instances('acme')).toEqual([
      {
        instanceId: 'laptop-1',
        runtime: 'claude-code',
        kind: 'worker',
        capabilities: ['code_execution'],
        capacity: 1,
        lastSeen: '2026-01-01T00:00:00.000Z',
        expiresAt: '2026-01-01T00:00:30.000Z',
      },
    ]);
    now += 20_000;
    await presence.announce('acme', 'claude-code', { instanceId: 'laptop-1', ...worker });
    now += 20_000;
    expect((await presence.instances('acme')).map((entry) => entry.expiresAt)).toEqual([
      '2026-01-01T00:00:50.000Z',
    ]);
    now += 10_000;
    expect(await presence.instances('acme')).toEqual([]);
  });

  it('summarises per runtime as the router reads it: online, workers, summed capacity', async () => {
    const presence = registry();
    await presence.announce('acme', 'claude-code', { instanceId: 'w1', ...worker });
    await presence.announce('acme', 'claude-code', { instanceId: 'w2', ...worker, capacity: 4 });
    await presence.announce('acme', 'openclaw', {
      instanceId: 'bot',
      kind: 'adapter',
      ttlSeconds: 30,
    });
    expect(await presence.summary('acme')).toEqual({
      'claude-code': { online: true, workers: 2, capacity: 5 },
      openclaw: { online: true, workers: 0, capacity: 0 },
    });
  });

  it('keeps teams apart: same instance ids, separate lists, separate limits', async () => {
    const presence = registry({ maxInstancesPerTeam: 1 });
    await presence.announce('acme', 'web', { instanceId: 'one', kind: 'adapter', ttlSeconds: 30 });
    await presence.announce('globex', 'web', { instanceId: 'one', ...worker });
    expect((await presence.instances('acme')).map((entry) => entry.kind)).toEqual(['adapter']);
    expect((await presence.instances('globex')).map((entry) => entry.kind)).toEqual(['worker']);
    expect(await presence.leave('globex', 'web', 'one')).toBe(true);
    expect(await presence.instances('acme')).toHaveLength(1);
  });

  it('refuses a new instance past the team limit (limit_reached) but renews existing ones', async () => {
    const presence = registry({ maxInstancesPerTeam: 2 });
    const adapter = (instanceId: string, ttlSeconds = 30) =>
      presence.announce('acme', 'web', { instanceId, kind: 'adapter', ttlSeconds });
    await adapter('a', 5);
    await adapter('b');
    expect(await codeOf(() => adapter('c'))).toBe('limit_reached');
    expect(await codeOf(() => adapter('b'))).toBeUndefined();
    // An expired one no longer counts.
    now += 5_000;
    expect(await codeOf(() => adapter('c'))).toBeUndefined();
  });

  it("never lets a runtime renew or remove another runtime's instance", async () => {
    const presence = registry();
    await presence.announce('acme', 'claude-code', { instanceId: 'x', ...worker });
    expect(
      await codeOf(() => presence.announce('acme', 'openclaw', { instanceId: 'x', ...worker })),
    ).toBe('conflict');
    expect(await presence.leave('acme', 'openclaw', 'x')).toBe(false);
    expect((await presence.instances('acme')).map((entry) => entry.runtime)).toEqual([
      'claude-code',
    ]);
    expect(await presence.leave('acme', 'claude-code', 'x')).toBe(true);
    expect(await presence.leave('acme', 'claude-code', 'x')).toBe(false);
  });

  it('sweeps expired entries of teams nobody reads', async () => {
    const presence = registry();
    for (let index = 0; index < 50; index++) {
      await presence.announce(`team-${index}`, 'web', {
        instanceId: 'i',
        kind: 'adapter',
        ttlSeconds: 1,
      });
    }
    expect(await presence.sweep()).toBe(0);
    now += 1_000;
    expect(await presence.sweep()).toBe(50);
  });

  it('shares instances between hubs on one database: an announce or leave on one is seen by the other', async () => {
    const hubA = registry({ summaryCacheMs: 0 });
    const hubB = registry({ summaryCacheMs: 0 });
    await hubA.announce('acme', 'claude-code', { instanceId: 'laptop', ...worker });
    expect(await hubB.summary('acme')).toEqual({
      'claude-code': { online: true, workers: 1, capacity: 1 },
    });
    expect(
      await codeOf(() => hubB.announce('acme', 'openclaw', { instanceId: 'laptop', ...worker })),
    ).toBe('conflict');
    expect(await hubA.leave('acme', 'claude-code', 'laptop')).toBe(true);
    expect(await hubB.summary('acme')).toEqual({});
  });

  it("reuses a team's summary within summaryCacheMs, dropped by its own changes and by the clock passing an expiry", async () => {
    // A cache far longer than the test: what it serves shows what is and is not cached.
    const hubA = registry({ summaryCacheMs: 3_600_000 });
    const hubB = registry({ summaryCacheMs: 3_600_000 });
    await hubA.announce('acme', 'claude-code', { instanceId: 'w1', ...worker, ttlSeconds: 60 });
    expect(await hubA.summary('acme')).toMatchObject({ 'claude-code': { workers: 1 } });
    // Another hub's announce is not seen while the summary is cached (the staleness bound)...
    await hubB.announce('acme', 'claude-code', { instanceId: 'w2', ...worker, ttlSeconds: 10 });
    expect(await hubA.summary('acme')).toMatchObject({ 'claude-code': { workers: 1 } });
    // ...but the instance list is read every time, and this hub's own announce drops the cache.
    expect(await hubA.instances('acme')).toHaveLength(2);
    await hubA.announce('acme', 'claude-code', { instanceId: 'w1', ...worker, ttlSeconds: 60 });
    expect(await hubA.summary('acme')).toMatchObject({ 'claude-code': { workers: 2 } });
    // The clock passing w2's expiry drops it without a read of the store being due.
    now += 10_000;
    expect(await hubA.summary('acme')).toMatchObject({ 'claude-code': { workers: 1 } });
    // This hub's own leave drops the cache at once.
    expect(await hubA.leave('acme', 'claude-code', 'w1')).toBe(true);
    expect(await hubA.summary('acme')).toEqual({});
  });

  it('shares one read of the store among summaries asked while it runs, but not one begun before its own change', async () => {
    const store = openSqliteStore({ path: join(dir, 'ctxbus.db'), clock });
    let reads = 0;
    const counted = {
      ...store,
      listPresence: (teamId: string, at: string) => {
        reads += 1;
        return store.listPresence(teamId, at);
      },
      announcePresence: store.announcePresence.bind(store),
      leavePresence: store.leavePresence.bind(store),
      sweepPresence: store.sweepPresence.bind(store),
    };
    const hub = new PresenceRegistry(counted, clock, { sweepIntervalMs: 0 });
    opened.push({ registry: hub, store });
    await hub.announce('acme', 'claude-code', { instanceId: 'w1', ...worker });
    // A burst of new tasks: one read for all of them.
    const burst = await Promise.all(Array.from({ length: 8 }, () => hub.summary('acme')));
    expect(reads).toBe(1);
    for (const summary of burst) expect(summary).toMatchObject({ 'claude-code': { workers: 1 } });
    // A summary asked after this hub's own change does not join a read begun before it.
    reads = 0;
    const announced = hub.announce('acme', 'claude-code', { instanceId: 'w2', ...worker });
    // Asked while the announce is being written: a read of its own, begun before the change.
    const during = hub.summary('acme');
    await announced;
    const after = await hub.summary('acme');
    await during;
    expect(reads).toBe(2);
    expect(after).toMatchObject({ 'claude-code': { workers: 2 } });
  });
});
