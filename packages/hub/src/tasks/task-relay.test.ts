import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { ContextItem, Logger, Viewer } from '@ctxbus/core';
import { taskOutputOf } from '@ctxbus/core';
import type { Store } from '@ctxbus/store';
import { openSqliteStore } from '@ctxbus/store';
import { openPostgresStore } from '@ctxbus/store/postgres';
import { sql, withPostgres } from '@ctxbus/test-kit/postgres';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Hub } from '../create-hub.js';
import { createHub } from '../create-hub.js';
import { derivedIds } from './derived-ids.js';
import { TaskRelay } from './task-relay.js';
import { taskRelayReport } from './task-relay-report.js';

// The task relay's promise: every committed task change is announced (its status item) once
// and audited once, whatever fails or crashes in between. Failures are injected at each step
// of relaying an event, before and after the step's write commits (after: as if the hub died
// before it could go on); a restart resumes from the durable cursor.

interface Backend {
  /** Opens the store (the same database each time within a test). */
  open(): Promise<Store>;
  /** Runs SQL on the database behind the store's back. */
  execSql(text: string): Promise<void>;
  dispose(): void;
}

type Step = 'writeItems' | 'relayTaskBatch';

/** A store whose `step` throws once: before its write, or after it committed. */
function failingOnce(store: Store, step: Step, when: 'before' | 'after'): Store {
  let armed = true;
  return new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      if (property !== step) return value.bind(target);
      return async (...args: unknown[]) => {
        if (armed && when === 'before') {
          armed = false;
          throw new Error(`injected: ${step} failed`);
        }
        const result = await value.apply(target, args);
        if (armed) {
          armed = false;
          throw new Error(`injected: the hub died after ${step}`);
        }
        return result;
      };
    },
  });
}

/** A store whose status-item writes wait while held: the relay's pass cannot end. */
function heldWrites(store: Store) {
  let gate: Promise<void> = Promise.resolve();
  let release = () => {};
  const proxy = new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      if (property !== 'writeItems') return value.bind(target);
      return async (...args: unknown[]) => {
        await gate;
        return value.apply(target, args);
      };
    },
  });
  return {
    store: proxy,
    hold() {
      gate = new Promise((resolve) => {
        release = resolve;
      });
    },
    release: () => release(),
  };
}

const byId = (a: unknown, b: unknown) =>
  String((a as { id: string }).id).localeCompare(String((b as { id: string }).id));

const errors: string[] = [];
const logger: Logger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: (_object, message) => errors.push(message ?? ''),
};

const CAPABILITIES = join(import.meta.dirname, '../../../../capabilities.yaml');
const claw: Viewer = { teamId: 'acme', runtime: 'openclaw' };

/** A stream of changes through the lifecycle: created, claimed, completed, failed, canceled. */
async function someChanges(hub: Hub, label: string): Promise<void> {
  const { tasks } = hub.services;
  const created = [];
  for (const n of [1, 2, 3]) {
    created.push(
      (await tasks.create(claw, { title: `${label} ${n}`, requiredCapabilities: ['search'] })).task,
    );
  }
  const claim = () =>
    tasks.claim({ teamId: 'acme', runtime: 'openclaw', workerId: 'w1', leaseMs: 30_000 });
  const first = await claim();
  const second = await claim();
  if (!first?.lease || !second?.lease) throw new Error('nothing to claim');
  await tasks.complete('acme', first.id, first.lease.token ?? 0, { exitCode: 0 }, 'openclaw');
  await tasks.fail(
    'acme',
    second.id,
    second.lease.token ?? 0,
    { code: 'exit', message: 'exit 1' },
    {
      retry: true,
      actor: 'openclaw',
    },
  );
  await tasks.cancel('acme', created[2]?.id ?? '', 'openclaw', 'not needed');
}

function expectClean(report: Awaited<ReturnType<typeof taskRelayReport>>, events: number) {
  expect(report).toMatchObject({ events, unannounced: [], misaudited: [] });
  expect(report.auditRecords).toBe(report.expectedAuditRecords);
}

function relayCases(name: string, backend: () => Backend) {
  describe(`the task relay on ${name}`, () => {
    let current: Backend;
    const open: (Store | Hub)[] = [];

    afterEach(async () => {
      for (const thing of open.reverse()) await thing.close();
      open.length = 0;
      current?.dispose();
      errors.length = 0;
    });

    async function start(store: Store): Promise<Hub> {
      const hub = await createHub({
        store,
        logger,
        capabilities: { file: CAPABILITIES, pollMs: 0 },
        sweep: false,
        taskRelay: { idleMs: 0 },
      });
      open.push(hub);
      return hub;
    }

    async function openStore(): Promise<Store> {
      const store = await current.open();
      open.push(store);
      return store;
    }

    // relayTaskBatch after its write: the audit records and the cursor committed, then the hub
    // died; writeItems after its write: the status items committed, the audit not.
    for (const step of ['writeItems', 'relayTaskBatch'] as const) {
      for (const when of ['before', 'after'] as const) {
        it(`${step} failing once (${when} its write): retried, nothing twice, nothing missed`, async () => {
          current = backend();
          const store = await openStore();
          const hub = await start(failingOnce(store, step, when));
          await someChanges(hub, step);
          expect(hub.services.taskRelay.failures).toBe(1);
          expect(errors[0]).toContain('task relay failed');
          await hub.services.taskRelay.wake();
          const report = await taskRelayReport(store, 'acme');
          expectClean(report, 8);
          expect(await store.verifyAudit('acme')).toMatchObject({ ok: true, records: 13 });
        });
      }
    }

    it('resumes from its cursor after a restart: nothing twice, nothing missed', async () => {
      current = backend();
      const first = await openStore();
      // Changes committed with nobody relaying them (the hub died before its relay ran).
      const task = (
        await first.createTask('acme', {
          title: 'left behind',
          requiredCapabilities: ['search'],
          origin: 'openclaw',
          targetRuntime: 'openclaw',
        })
      ).task;
      await first.cancelTask('acme', task.id, 'openclaw', 'changed my mind');
      expect((await taskRelayReport(first, 'acme')).unannounced).toHaveLength(2);

      const hub = await start(first);
      await hub.services.taskRelay.wake();
      await someChanges(hub, 'after');
      expectClean(await taskRelayReport(first, 'acme'), 10);
      // Every event relayed once, in batches (counted for GET /api/admin/tasks).
      const { batches, events } = hub.services.taskRelay;
      expect(events).toBe(10);
      expect(batches).toBeGreaterThan(0);
      expect(batches).toBeLessThanOrEqual(events);
      await hub.close();
      open.splice(open.indexOf(hub), 1);

      // Open the database again and start a new relay: it has nothing to do.
      const again = await openStore();
      const before = await taskRelayReport(again, 'acme');
      const next = await start(again);
      expect(await next.services.taskRelay.drain()).toBe(0);
      expect(await taskRelayReport(again, 'acme')).toEqual(before);
      expect(await again.verifyAudit('acme')).toMatchObject({ ok: true });
    });

    it("answers a worker's claim, completion and failure once committed, not after the relay's pass; a creation waits for it", async () => {
      current = backend();
      const store = await openStore();
      const held = heldWrites(store);
      const hub = await start(held.store);
      // Closed first (the list closes in reverse): a hub cannot close with its relay stuck.
      open.push({ close: async () => held.release() } as Hub);
      const { tasks } = hub.services;
      for (const n of [1, 2]) {
        await tasks.create(claw, { title: `held ${n}`, requiredCapabilities: ['search'] });
      }
      held.hold();
      // With the relay's pass stuck, these answer anyway (waiting for it, they would hang).
      const claim = () =>
        tasks.claim({ teamId: 'acme', runtime: 'openclaw', workerId: 'w1', leaseMs: 30_000 });
      const first = await claim();
      const second = await claim();
      if (!first?.lease || !second?.lease) throw new Error('nothing to claim');
      const done = await tasks.complete('acme', first.id, first.lease.token ?? 0, {}, 'openclaw');
      expect(done.state).toBe('COMPLETED');
      const failed = await tasks.fail(
        'acme',
        second.id,
        second.lease.token ?? 0,
        { code: 'exit', message: 'exit 1' },
        { actor: 'openclaw' },
      );
      expect(failed.state).toBe('FAILED');
      // Nothing of them is announced yet; a creation waits for the pass that announces it.
      expect((await taskRelayReport(store, 'acme')).unannounced.length).toBeGreaterThanOrEqual(4);
      let created = false;
      const creating = tasks
        .create(claw, { title: 'held 3', requiredCapabilities: ['search'] })
        .then(() => {
          created = true;
        });
      await store.getTask('acme', first.id);
      expect(created).toBe(false);
      held.release();
      await creating;
      // Every change announced and audited once, in order.
      expectClean(await taskRelayReport(store, 'acme'), 7);
      expect(await store.verifyAudit('acme')).toMatchObject({ ok: true });
    });

    it("supersedes each task's previous status item: one live line per task", async () => {
      current = backend();
      const store = await openStore();
      const hub = await start(store);
      await someChanges(hub, 'lines');
      const lines = (options: { includeSuperseded?: boolean }) =>
        store.listItems(claw, { tags: ['task'], limit: 100, ...options });
      const live = await lines({});
      expect(live.map((item) => item.runtimeOptions.task).sort(byId)).toEqual(
        (await store.listTasks('acme', { limit: 10 }))
          .map((task) => ({
            id: task.id,
            state: task.state,
            targetRuntime: task.targetRuntime,
            origin: task.origin,
            requiredCapabilities: task.requiredCapabilities,
          }))
          .sort(byId),
      );
      expect(await lines({ includeSuperseded: true })).toHaveLength(8);
    });

    it('keeps one output line per running task: each progress post replaces the last', async () => {
      current = backend();
      const store = await openStore();
      const hub = await start(store);
      const { tasks } = hub.services;
      await tasks.create(claw, { title: 'noisy', requiredCapabilities: ['search'] });
      const claimed = await tasks.claim({
        teamId: 'acme',
        runtime: 'openclaw',
        workerId: 'w1',
        leaseMs: 30_000,
      });
      if (!claimed) throw new Error('nothing to claim');
      let written = 0;
      for (const tail of ['step 1', 'step 2', 'step 3']) {
        written += tail.length;
        await tasks.announce(claimed, 'openclaw', null, { tail, end: written });
      }
      const live = await store.listItems(claw, { tags: ['task'], limit: 100 });
      const outputs = live.filter((item) => item.content.includes('Output so far'));
      expect(outputs).toHaveLength(1);
      expect(outputs[0]?.content).toContain('step 3');
      // What a follower reads of it: the tail, and where it ends in all the command wrote.
      expect(taskOutputOf(outputs[0] as ContextItem)).toEqual({ tail: 'step 3', end: 18 });
      expect(outputs[0]?.expiresAt).not.toBeNull();
      // The state line is still there beside it.
      expect(live.filter((item) => item.key === null)).toHaveLength(1);
    });

    it('counts claim calls and the claims that took a task, for GET /api/admin/tasks', async () => {
      current = backend();
      const store = await openStore();
      const hub = await start(store);
      await someChanges(hub, 'counted');
      const empty = await hub.services.tasks.claim({
        teamId: 'acme',
        runtime: 'web',
        workerId: 'w2',
        leaseMs: 30_000,
      });
      expect(empty).toBeNull();
      expect(hub.services.tasks.claims).toEqual({ attempts: 3, taken: 2, takenWithCompletion: 0 });
    });

    it('audit verification finds a task event without its audit records', async () => {
      current = backend();
      const store = await openStore();
      const hub = await start(store);
      await someChanges(hub, 'verified');
      expect(await store.verifyAudit('acme')).toMatchObject({ ok: true, records: 13 });
      const [event] = await store.listTaskOutbox(0, 1);
      await current.execSql(
        `DELETE FROM audit_task_events WHERE event_seq = ${event?.event.seq ?? 0}`,
      );
      expect(await store.verifyAudit('acme')).toMatchObject({
        ok: false,
        reason: expect.stringContaining(`task event ${event?.event.seq} `),
      });
    });
  });
}

relayCases('SQLite', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ctxbus-task-relay-'));
  const path = join(dir, 'ctxbus.db');
  return {
    open: async () => openSqliteStore({ path }),
    execSql: async (text) => {
      const db = new DatabaseSync(path);
      try {
        db.exec(text);
      } finally {
        db.close();
      }
    },
    dispose: () => rmSync(dir, { recursive: true, force: true }),
  };
});

describe('the task relay backing off', () => {
  it('runs no pass for the wakes that come while it waits to retry a failed one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ctxbus-relay-backoff-'));
    const store = openSqliteStore({ path: join(dir, 'ctxbus.db') });
    let batches = 0;
    const failing = new Proxy(store, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (property !== 'relayTaskBatch')
          return typeof value === 'function' ? value.bind(target) : value;
        return async () => {
          batches += 1;
          throw new Error('injected: database or disk is full');
        };
      },
    });
    const relay = new TaskRelay(
      {
        store: failing,
        clock: () => new Date(),
        logger,
        ids: derivedIds(await store.derivedIdSecret()),
        committed: () => {},
      },
      { retryMs: 60_000, maxRetryMs: 60_000, idleMs: 0 },
    );
    try {
      await relay.wake();
      expect(batches).toBe(1);
      // Every mutation wakes it; none runs a pass until the retry is due (they wait for it).
      const waiting = Array.from({ length: 50 }, () => relay.wake());
      // A pass starts within the wake's own turn: a turn of the event loop would have shown it.
      await new Promise((resolve) => setImmediate(resolve));
      expect(batches).toBe(1);
      expect(relay.failures).toBe(1);
      void Promise.all(waiting);
    } finally {
      await relay.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

await withPostgres('the task relay on PostgreSQL', (url, schemas) => {
  relayCases('PostgreSQL', () => {
    const schema = schemas.next('relay');
    return {
      open: async () => openPostgresStore({ connectionString: url, schema }),
      execSql: async (text) => {
        await sql(url, `SET search_path TO "${schema}"; ${text}`);
      },
      dispose: () => {},
    };
  });
});

await withPostgres("a hub on PostgreSQL keeps the database's time", (url, schemas) => {
  it("takes the store's clock: a machine clock 40 s ahead sweeps no live lease", async () => {
    const trueNow = () => performance.timeOrigin + performance.now();
    vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true });
    vi.setSystemTime(Date.now() + 40_000);
    const store = await openPostgresStore({ connectionString: url, schema: schemas.next('clock') });
    const hub = await createHub({ store });
    try {
      expect(Math.abs(hub.services.clock().getTime() - trueNow())).toBeLessThan(1_000);
      await store.createTask('acme', {
        title: 'held by a worker of another hub',
        requiredCapabilities: [],
        origin: 'openclaw',
        targetRuntime: 'claude-code',
      });
      const claimed = await store.claimTask({
        teamId: 'acme',
        runtime: 'claude-code',
        workerId: 'w1',
        leaseMs: 30_000,
      });
      // The lease runs 30 s of the database's time; this hub's sweep now finds it live.
      expect(await store.expireLeases(hub.services.clock().toISOString())).toEqual([]);
      expect((await store.getTask('acme', claimed?.id ?? ''))?.task.state).toBe('WORKING');
    } finally {
      vi.useRealTimers();
      await hub.close();
      await store.close();
    }
  });
});
