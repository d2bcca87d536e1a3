import type { NewTask, Task, TaskApproval } from '@ctxbus/core';
import { expect } from 'vitest';
import type { Store } from '../store.js';
import type { ConformanceHarness } from './conformance-harness.js';
import { expectCode, rejectsWith } from './conformance-harness.js';

// The task half of the store contract (see runStoreConformance, which runs these).

export const TASK_CASES = [
  'task-create',
  'task-cap',
  'task-teams',
  'task-claim',
  'task-fencing',
  'task-lease-holder',
  'task-idempotency-origin',
  'task-lease-expiry',
  'task-started',
  'task-wait-expiry',
  'task-approval',
  'task-transitions',
  'task-reopen',
  'task-derived-id-secret',
] as const;

export type TaskCase = (typeof TASK_CASES)[number];

export interface TaskHarness extends ConformanceHarness {
  /** Closes the store and opens the same database again. */
  reopen(): Promise<Store>;
  /** A second, empty store (closed by the caller) with at most `cap` waiting tasks per runtime. */
  cappedStore(cap: number): Promise<Store>;
}

const SECOND = 1_000;
const LEASE = 30 * SECOND;

const basic = (overrides: Partial<NewTask> = {}): NewTask => ({
  title: 'run the tests',
  requiredCapabilities: ['code_execution'],
  origin: 'openclaw',
  targetRuntime: 'claude-code',
  ...overrides,
});

async function reason(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return (error as { details?: { reason?: unknown } }).details?.reason;
  }
  throw new Error('expected the call to fail');
}

export function taskCases(h: TaskHarness): Record<TaskCase, () => Promise<void>> {
  const iso = (offsetMs = 0) => new Date(h.now().getTime() + offsetMs).toISOString();
  const create = async (overrides: Partial<NewTask> = {}, team = 'acme'): Promise<Task> =>
    (await h.store().createTask(team, basic(overrides))).task;
  const claim = (workerId = 'w1', extra: { teamId?: string; capabilities?: string[] } = {}) =>
    h.store().claimTask({
      teamId: 'acme',
      runtime: 'claude-code',
      workerId,
      leaseMs: LEASE,
      ...extra,
    });
  const path = async (id: string, team = 'acme') =>
    ((await h.store().getTask(team, id))?.history ?? []).map((e) => `${e.from ?? '-'}>${e.to}`);

  return {
    async 'task-create'() {
      const store = h.store();
      const { task, status } = await store.createTask('acme', {
        ...basic(),
        description: 'npm test in the api package',
        scope: 'task',
        input: { argv: ['npm', 'test'], cwd: 'api', nested: { z: 1, a: [true, null] } },
        idempotencyKey: 'req-1',
        ttlSeconds: 600,
        routing: { decision: 'proxy', candidates: [] },
      });
      expect(status).toBe('created');
      expect(task.id).toMatch(/^task_[0-9a-f-]{36}$/);
      expect(task).toMatchObject({
        teamId: 'acme',
        title: 'run the tests',
        description: 'npm test in the api package',
        requiredCapabilities: ['code_execution'],
        origin: 'openclaw',
        scope: 'task',
        idempotencyKey: 'req-1',
        state: 'SUBMITTED',
        targetRuntime: 'claude-code',
        attempts: 0,
        maxAttempts: 3,
        ttlSeconds: 600,
        lease: null,
        result: null,
        error: null,
        createdAt: iso(),
        updatedAt: iso(),
        expiresAt: iso(600 * SECOND),
      });
      const stored = await store.getTask('acme', task.id);
      expect(stored?.task).toEqual(task);
      expect(Object.keys(stored?.task.input?.nested as object)).toEqual(['z', 'a']);
      expect(stored?.history).toEqual([
        {
          seq: expect.any(Number),
          taskId: task.id,
          at: iso(),
          from: null,
          to: 'SUBMITTED',
          by: 'openclaw',
          note: null,
        },
      ]);
      // The same request again with its idempotency key returns the stored task, wherever it
      // is routed this time; another request with that key is refused, naming what differs.
      h.advance(SECOND);
      const request = {
        ...basic(),
        description: 'npm test in the api package',
        scope: 'task',
        input: { cwd: 'api', argv: ['npm', 'test'], nested: { a: [true, null], z: 1 } },
        idempotencyKey: 'req-1',
        ttlSeconds: 600,
      } satisfies NewTask;
      const again = await store.createTask('acme', {
        ...request,
        targetRuntime: null,
        initialState: 'AUTH_REQUIRED',
      });
      expect(again).toEqual({ task, status: 'existing' });
      for (const [change, fields] of [
        [{ title: 'other' }, ['title']],
        [{ input: { argv: ['rm', '-rf', '/'], cwd: 'api' } }, ['input']],
        [
          { requiredCapabilities: ['code_execution', 'git'], ttlSeconds: 60 },
          ['requiredCapabilities', 'ttlSeconds'],
        ],
        [{ description: undefined, maxAttempts: 1 }, ['description', 'maxAttempts']],
      ] as [Partial<NewTask>, string[]][]) {
        await expect(store.createTask('acme', { ...request, ...change })).rejects.toMatchObject({
          code: 'conflict',
          details: { reason: 'idempotency_key_reused', taskId: task.id, fields },
        });
      }
      expect((await store.getTask('acme', task.id))?.task).toEqual(task);
      // The key is per team.
      const elsewhere = await store.createTask('globex', { ...basic(), idempotencyKey: 'req-1' });
      expect(elsewhere.status).toBe('created');
      expect(elsewhere.task.id).not.toBe(task.id);
      // Created held for approval, or rejected outright; minimal fields.
      const held = await create({ initialState: 'AUTH_REQUIRED', targetRuntime: null });
      expect([held.state, held.expiresAt, held.targetRuntime]).toEqual([
        'AUTH_REQUIRED',
        null,
        null,
      ]);
      const rejected = await create({ initialState: 'REJECTED', origin: 'web' });
      expect(rejected.state).toBe('REJECTED');
      expect(rejected.description).toBeNull();
      // Bad input is a validation error and stores nothing.
      await rejectsWith(store.createTask('acme', basic({ title: '' })), 'validation_failed');
      await rejectsWith(
        store.createTask('acme', basic({ input: { text: 'a\u0000b' } })),
        'validation_failed',
      );
      await rejectsWith(
        store.createTask('acme', { ...basic(), initialState: 'COMPLETED' } as unknown as NewTask),
        'validation_failed',
      );
      // Lists: oldest first, filtered, paged after an id; other teams never appear.
      const all = await store.listTasks('acme', { limit: 10 });
      expect(all.map((t) => t.id)).toEqual([task.id, held.id, rejected.id]);
      expect(
        (await store.listTasks('acme', { limit: 10, states: ['AUTH_REQUIRED', 'REJECTED'] })).map(
          (t) => t.id,
        ),
      ).toEqual([held.id, rejected.id]);
      expect(
        (await store.listTasks('acme', { limit: 10, origin: 'web' })).map((t) => t.id),
      ).toEqual([rejected.id]);
      expect(
        (await store.listTasks('acme', { limit: 10, targetRuntime: 'claude-code' })).map(
          (t) => t.id,
        ),
      ).toEqual([task.id, rejected.id]);
      const page = await store.listTasks('acme', { limit: 1, after: task.id });
      expect(page.map((t) => t.id)).toEqual([held.id]);
      // Counts take the same filters, whatever a page holds; another team's are its own.
      expect(await store.countTasks('acme', {})).toBe(3);
      expect(await store.countTasks('acme', { states: ['AUTH_REQUIRED', 'REJECTED'] })).toBe(2);
      expect(await store.countTasks('acme', { origin: 'web', targetRuntime: 'claude-code' })).toBe(
        1,
      );
      expect(await store.countTasks('acme', { states: ['COMPLETED'] })).toBe(0);
      expect(await store.countTasks('globex', {})).toBe(1);
      expect(await store.countTasks('initech', {})).toBe(0);
      // Newest first, filtered and paged the same way (after: continues in that order).
      expect(
        (await store.listTasks('acme', { limit: 10, order: 'newest' })).map((t) => t.id),
      ).toEqual([rejected.id, held.id, task.id]);
      expect(
        (
          await store.listTasks('acme', {
            limit: 10,
            order: 'newest',
            states: ['SUBMITTED', 'AUTH_REQUIRED'],
          })
        ).map((t) => t.id),
      ).toEqual([held.id, task.id]);
      const newerPage = await store.listTasks('acme', {
        limit: 1,
        order: 'newest',
        after: rejected.id,
      });
      expect(newerPage.map((t) => t.id)).toEqual([held.id]);
      expect(await store.getTask('acme', 'task_missing')).toBeNull();
    },

    async 'task-cap'() {
      const store = await h.cappedStore(2);
      try {
        const one = await store.createTask('acme', basic({ idempotencyKey: 'k1' }));
        await store.createTask('acme', basic({ initialState: 'AUTH_REQUIRED' }));
        let refusal: unknown;
        try {
          await store.createTask('acme', basic());
        } catch (error) {
          refusal = error;
        }
        expectCode(refusal, 'limit_reached');
        expect((refusal as { status: number }).status).toBe(429);
        expect((refusal as Error).message).toContain('claude-code');
        // A retry with a stored key still answers; other runtimes, teams and unrouted tasks
        // have their own count; a rejected task does not wait, so it is not counted.
        expect((await store.createTask('acme', basic({ idempotencyKey: 'k1' }))).task.id).toBe(
          one.task.id,
        );
        await store.createTask('acme', basic({ targetRuntime: 'web' }));
        await store.createTask('acme', basic({ targetRuntime: null }));
        await store.createTask('globex', basic());
        await store.createTask('acme', basic({ initialState: 'REJECTED' }));
        // Claiming one makes room.
        const claimed = await store.claimTask({
          teamId: 'acme',
          runtime: 'claude-code',
          workerId: 'w',
          leaseMs: LEASE,
        });
        expect(claimed?.id).toBe(one.task.id);
        expect((await store.createTask('acme', basic())).status).toBe('created');
        await rejectsWith(store.createTask('acme', basic()), 'limit_reached');
      } finally {
        await store.close();
      }
    },

    async 'task-teams'() {
      const store = h.store();
      const mine = await create();
      // Another team never sees, lists, claims, changes or cancels it.
      expect(await store.getTask('globex', mine.id)).toBeNull();
      expect(await store.listTasks('globex', { limit: 10 })).toEqual([]);
      expect(await claim('intruder', { teamId: 'globex' })).toBeNull();
      await rejectsWith(store.cancelTask('globex', mine.id, 'web'), 'not_found');
      await rejectsWith(
        store.updateTask('globex', mine.id, { state: 'AUTH_REQUIRED', by: 'web' }),
        'not_found',
      );
      const claimed = await claim();
      const token = claimed?.lease?.token ?? 0;
      await rejectsWith(store.completeTask('globex', mine.id, token, { ok: true }), 'not_found');
      await rejectsWith(store.renewLease('globex', mine.id, token, LEASE), 'not_found');
      await rejectsWith(
        store.failTask('globex', mine.id, token, { code: 'x', message: 'y' }),
        'not_found',
      );
      const theirs = await create({}, 'globex');
      expect(await claim('w2')).toBeNull();
      expect((await claim('w3', { teamId: 'globex' }))?.id).toBe(theirs.id);
      expect((await store.getTask('acme', mine.id))?.task.state).toBe('WORKING');
    },

    async 'task-claim'() {
      const store = h.store();
      expect(await claim()).toBeNull();
      const first = await create({ title: 'first' });
      h.advance(1);
      const forWeb = await create({ title: 'for web', targetRuntime: 'web' });
      const unrouted = await create({
        title: 'anyone with search',
        targetRuntime: null,
        requiredCapabilities: ['search', 'code_execution'],
      });
      const second = await create({ title: 'second' });
      const byRuntime = await claim();
      expect(byRuntime).toMatchObject({
        id: first.id,
        state: 'WORKING',
        attempts: 1,
        lease: {
          workerId: 'w1',
          runtime: 'claude-code',
          token: expect.any(Number),
          expiresAt: iso(LEASE),
          startedAt: null,
        },
        updatedAt: iso(),
        expiresAt: null,
      });
      // Unrouted tasks go to a worker whose capabilities cover them (in order), never
      // to one without, nor to one that does not say.
      expect((await claim('w2', { capabilities: ['search'] }))?.id).toBe(second.id);
      expect(await claim('w3', { capabilities: ['search'] })).toBeNull();
      expect(await claim('w3')).toBeNull();
      const covered = await claim('w4', { capabilities: ['code_execution', 'memory', 'search'] });
      expect(covered?.id).toBe(unrouted.id);
      // Fencing tokens are random (only the claimer knows its own): each claim gets another.
      expect(covered?.lease?.token).toBeGreaterThan(0);
      expect(covered?.lease?.token).not.toBe(byRuntime?.lease?.token);
      expect(await claim('w5', { capabilities: ['code_execution', 'search'] })).toBeNull();
      expect(
        (await store.claimTask({ teamId: 'acme', runtime: 'web', workerId: 'w6', leaseMs: LEASE }))
          ?.id,
      ).toBe(forWeb.id);
      // Concurrent claimers: each task goes to exactly one.
      const batch = [];
      for (let index = 0; index < 5; index++) batch.push(await create({ title: `t${index}` }));
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, index) => claim(`racer-${index}`)),
      );
      const won = results.filter((task): task is Task => task !== null);
      expect(won.map((task) => task.id).sort()).toEqual(batch.map((task) => task.id).sort());
      expect(new Set(won.map((task) => task.lease?.workerId)).size).toBe(5);
      // The claim is in the history, by the worker.
      const history = (await store.getTask('acme', first.id))?.history ?? [];
      expect(history.at(-1)).toMatchObject({
        from: 'SUBMITTED',
        to: 'WORKING',
        by: 'w1',
        at: iso(),
      });
      // Work routed to the runtime goes before older unrouted work the worker could take.
      const older = await create({ title: 'older, unrouted', targetRuntime: null });
      const routed = await create({ title: 'newer, routed' });
      const caps = { capabilities: ['code_execution', 'search'] };
      expect((await claim('w7', caps))?.id).toBe(routed.id);
      expect((await claim('w7', caps))?.id).toBe(older.id);
      // A lease length out of range is refused.
      await create();
      await rejectsWith(
        store.claimTask({ teamId: 'acme', runtime: 'claude-code', workerId: 'w', leaseMs: 0 }),
        'validation_failed',
      );
    },

    async 'task-fencing'() {
      const store = h.store();
      const task = await create();
      const old = await claim('old-worker');
      const oldToken = old?.lease?.token ?? 0;
      h.advance(10 * SECOND);
      const renewed = await store.renewLease('acme', task.id, oldToken, LEASE);
      expect(renewed.lease).toEqual({
        workerId: 'old-worker',
        runtime: 'claude-code',
        token: oldToken,
        expiresAt: iso(LEASE),
        startedAt: null,
      });
      h.advance(LEASE);
      // The lease ran out: the old holder can neither renew nor finish.
      expect(await reason(store.renewLease('acme', task.id, oldToken, LEASE))).toBe('stale_lease');
      expect(await reason(store.completeTask('acme', task.id, oldToken, { by: 'old' }))).toBe(
        'stale_lease',
      );
      const expired = await store.expireLeases(iso());
      expect(expired.map((t) => [t.task.id, t.task.state])).toEqual([[task.id, 'SUBMITTED']]);
      const fresh = await claim('new-worker');
      const newToken = fresh?.lease?.token ?? 0;
      expect(newToken).not.toBe(oldToken);
      expect(fresh?.attempts).toBe(2);
      // The old token stays refused while the new lease runs (409, not retried).
      let refusal: unknown;
      try {
        await store.completeTask('acme', task.id, oldToken, { by: 'old' });
      } catch (error) {
        refusal = error;
      }
      expectCode(refusal, 'conflict');
      expect((refusal as { status: number; retryable: boolean }).status).toBe(409);
      expect((refusal as { retryable: boolean }).retryable).toBe(false);
      expect(
        await reason(store.failTask('acme', task.id, oldToken, { code: 'x', message: 'late' })),
      ).toBe('stale_lease');
      expect(await reason(store.renewLease('acme', task.id, oldToken, LEASE))).toBe('stale_lease');
      expect(
        await reason(
          store.updateTask('acme', task.id, {
            state: 'INPUT_REQUIRED',
            by: 'old',
            token: oldToken,
          }),
        ),
      ).toBe('stale_lease');
      const done = await store.completeTask('acme', task.id, newToken, { by: 'new', exitCode: 0 });
      expect(done).toMatchObject({
        state: 'COMPLETED',
        lease: null,
        result: { by: 'new', exitCode: 0 },
      });
      // After completion no token works and the newer result stays; the same report sent
      // again by its worker (the first answer lost) changes nothing and gets the task back.
      expect(await reason(store.completeTask('acme', task.id, newToken, { by: 'again' }))).toBe(
        'stale_lease',
      );
      const resent = await store.completeTask('acme', task.id, newToken, {
        by: 'new',
        exitCode: 0,
      });
      expect(resent).toMatchObject({ state: 'COMPLETED', result: { by: 'new', exitCode: 0 } });
      expect(await reason(store.completeTask('acme', task.id, oldToken, { by: 'old' }))).toBe(
        'stale_lease',
      );
      const final = await store.getTask('acme', task.id);
      expect(final?.task.result).toEqual({ by: 'new', exitCode: 0 });
      expect(final?.history.map((e) => [e.from, e.to, e.by])).toEqual([
        [null, 'SUBMITTED', 'openclaw'],
        ['SUBMITTED', 'WORKING', 'old-worker'],
        ['WORKING', 'SUBMITTED', 'hub'],
        ['SUBMITTED', 'WORKING', 'new-worker'],
        ['WORKING', 'COMPLETED', 'new-worker'],
      ]);
    },

    async 'task-lease-holder'() {
      const store = h.store();
      const task = await create();
      const held = await claim('worker-1');
      const token = held?.lease?.token ?? 0;
      expect(held?.lease?.runtime).toBe('claude-code');
      // Another runtime with the right token: refused (403), before the token is looked at.
      const forbidden = async (promise: Promise<unknown>) => {
        let refusal: unknown;
        try {
          await promise;
        } catch (error) {
          refusal = error;
        }
        expectCode(refusal, 'forbidden');
        expect((refusal as { details?: { reason?: string } }).details?.reason).toBe(
          'not_lease_holder',
        );
      };
      await forbidden(
        store.completeTask('acme', task.id, token, { forged: true }, { holder: 'openclaw' }),
      );
      await forbidden(
        store.failTask(
          'acme',
          task.id,
          token,
          { code: 'x', message: 'forged' },
          {
            holder: 'openclaw',
            retry: true,
          },
        ),
      );
      await forbidden(store.renewLease('acme', task.id, token, LEASE, { holder: 'web' }));
      await forbidden(
        store.completeTask('acme', task.id, token + 1, { forged: true }, { holder: 'web' }),
      );
      await forbidden(
        store.updateTask('acme', task.id, {
          state: 'INPUT_REQUIRED',
          by: 'openclaw',
          token,
          holder: 'openclaw',
        }),
      );
      // Nothing changed: the holder still holds it and finishes it.
      const still = await store.getTask('acme', task.id);
      expect([still?.task.state, still?.task.attempts, still?.history.length]).toEqual([
        'WORKING',
        1,
        2,
      ]);
      const renewed = await store.renewLease('acme', task.id, token, LEASE, {
        holder: 'claude-code',
      });
      expect(renewed.lease?.runtime).toBe('claude-code');
      const done = await store.completeTask(
        'acme',
        task.id,
        token,
        { ok: true },
        {
          holder: 'claude-code',
        },
      );
      expect([done.state, done.result, done.lease]).toEqual(['COMPLETED', { ok: true }, null]);
      // A worker of another runtime that claims an unrouted task holds that one.
      const unrouted = await create({ targetRuntime: null, requiredCapabilities: ['search'] });
      const webClaim = await store.claimTask({
        teamId: 'acme',
        runtime: 'web',
        workerId: 'tab-1',
        capabilities: ['search'],
        leaseMs: LEASE,
      });
      expect([webClaim?.id, webClaim?.lease?.runtime]).toEqual([unrouted.id, 'web']);
      await forbidden(
        store.completeTask(
          'acme',
          unrouted.id,
          webClaim?.lease?.token ?? 0,
          {},
          {
            holder: 'claude-code',
          },
        ),
      );
      expect(
        (
          await store.failTask(
            'acme',
            unrouted.id,
            webClaim?.lease?.token ?? 0,
            { code: 'x', message: 'no' },
            { holder: 'web' },
          )
        ).state,
      ).toBe('FAILED');
    },

    async 'task-idempotency-origin'() {
      const store = h.store();
      const first = await store.createTask('acme', basic({ idempotencyKey: 'turn-7' }));
      expect(first.status).toBe('created');
      // Another runtime's same key is another task, never this one (keys are the origin's).
      const other = await store.createTask(
        'acme',
        basic({ origin: 'web', idempotencyKey: 'turn-7' }),
      );
      expect(other.status).toBe('created');
      expect(other.task.id).not.toBe(first.task.id);
      expect(other.task.origin).toBe('web');
      // The same runtime's retry finds its own.
      expect(
        await store.createTask('acme', basic({ origin: 'web', idempotencyKey: 'turn-7' })),
      ).toEqual({ task: other.task, status: 'existing' });
      expect(await store.createTask('acme', basic({ idempotencyKey: 'turn-7' }))).toEqual({
        task: first.task,
        status: 'existing',
      });
      // Concurrent creates by two runtimes with one key: one task each.
      const racing = await Promise.all(
        ['claude-code', 'openclaw', 'claude-code', 'openclaw'].map((origin) =>
          store.createTask('acme', basic({ origin, idempotencyKey: 'race' })),
        ),
      );
      const byOrigin = new Map<string, Set<string>>();
      for (const outcome of racing) {
        const ids = byOrigin.get(outcome.task.origin) ?? new Set<string>();
        ids.add(outcome.task.id);
        byOrigin.set(outcome.task.origin, ids);
      }
      expect([...byOrigin.values()].map((ids) => ids.size)).toEqual([1, 1]);
    },

    async 'task-lease-expiry'() {
      const store = h.store();
      const task = await create({ maxAttempts: 2, ttlSeconds: 3600 });
      const kept = await create({ title: 'renewed in time' });
      await claim('a');
      const keeper = await claim('b');
      h.advance(LEASE - SECOND);
      await store.renewLease('acme', kept.id, keeper?.lease?.token ?? 0, LEASE);
      expect(await store.expireLeases(iso())).toEqual([]);
      h.advance(SECOND);
      // Due at exactly the expiry time; the attempt stays counted; a new wait begins.
      const first = await store.expireLeases(iso());
      expect(first).toHaveLength(1);
      expect(first[0]?.task).toMatchObject({
        id: task.id,
        state: 'SUBMITTED',
        attempts: 1,
        lease: null,
        expiresAt: iso(3600 * SECOND),
      });
      expect(first[0]?.event).toMatchObject({
        taskId: task.id,
        from: 'WORKING',
        to: 'SUBMITTED',
        by: 'hub',
        at: iso(),
      });
      expect(first[0]?.task).toEqual((await store.getTask('acme', task.id))?.task);
      expect((await claim('c'))?.attempts).toBe(2);
      h.advance(LEASE);
      const second = await store.expireLeases(iso());
      // The renewed lease ran out too: it goes back to the queue on its first attempt.
      const byId = new Map(second.map((t) => [t.task.id, t.task]));
      expect(byId.get(kept.id)?.state).toBe('SUBMITTED');
      const dead = byId.get(task.id);
      expect(dead).toMatchObject({ state: 'FAILED', attempts: 2, lease: null });
      expect(dead?.error?.code).toBe('dead_letter');
      expect(await store.expireLeases(iso())).toEqual([]);
      // failTask with retry requeues while attempts remain, then dead-letters.
      const flaky = await create({ maxAttempts: 2, targetRuntime: 'web' });
      const claimWeb = () =>
        store.claimTask({ teamId: 'acme', runtime: 'web', workerId: 'wk', leaseMs: LEASE });
      const one = await claimWeb();
      const retried = await store.failTask(
        'acme',
        flaky.id,
        one?.lease?.token ?? 0,
        { code: 'exit_1', message: 'tests failed' },
        { retry: true },
      );
      expect([retried.state, retried.error, retried.lease]).toEqual(['SUBMITTED', null, null]);
      const two = await claimWeb();
      const given = await store.failTask(
        'acme',
        flaky.id,
        two?.lease?.token ?? 0,
        { code: 'exit_1', message: 'tests failed again' },
        { retry: true },
      );
      expect(given.state).toBe('FAILED');
      expect(given.error?.code).toBe('dead_letter');
      expect(given.error?.message).toContain('tests failed again');
      // Without retry a failure is final at once, with the worker's error.
      const once = await create({ targetRuntime: 'web' });
      const held = await claimWeb();
      const failed = await store.failTask('acme', once.id, held?.lease?.token ?? 0, {
        code: 'exit_2',
        message: 'boom',
      });
      expect([failed.state, failed.error, failed.attempts]).toEqual([
        'FAILED',
        { code: 'exit_2', message: 'boom' },
        1,
      ]);
      // Sent again by its worker: the same answer, no second event; another error is refused.
      const token = held?.lease?.token ?? 0;
      const again = await store.failTask('acme', once.id, token, {
        code: 'exit_2',
        message: 'boom',
      });
      expect(again).toEqual(failed);
      expect(
        await reason(store.failTask('acme', once.id, token, { code: 'exit_3', message: 'other' })),
      ).toBe('stale_lease');
      expect((await store.getTask('acme', once.id))?.history.at(-1)?.to).toBe('FAILED');
      expect((await store.getTask('acme', once.id))?.history).toHaveLength(3);
    },

    async 'task-started'() {
      const store = h.store();
      const started = await create({ maxAttempts: 3 });
      const unstarted = await create({ title: 'never started', maxAttempts: 3 });
      const held = await claim('w-started');
      const other = await claim('w-unstarted');
      expect([held?.id, other?.id]).toEqual([started.id, unstarted.id]);
      const token = held?.lease?.token ?? 0;
      // Only the holder's runtime, with the claim's token, while the lease runs.
      expect(await reason(store.startTask('acme', started.id, token + 1))).toBe('stale_lease');
      expect(await reason(store.startTask('acme', started.id, token, { holder: 'openclaw' }))).toBe(
        'not_lease_holder',
      );
      await rejectsWith(store.startTask('globex', started.id, token), 'not_found');
      await rejectsWith(store.startTask('acme', 'task_unknown', token), 'not_found');
      h.advance(SECOND);
      const marked = await store.startTask('acme', started.id, token, { holder: 'claude-code' });
      expect(marked).toMatchObject({
        state: 'WORKING',
        attempts: 1,
        lease: { workerId: 'w-started', token, expiresAt: iso(LEASE - SECOND), startedAt: iso() },
      });
      // A repeat (a worker that lost the answer) keeps the first time; a renew keeps it too.
      h.advance(SECOND);
      const again = await store.startTask('acme', started.id, token, { holder: 'claude-code' });
      expect(again.lease?.startedAt).toBe(iso(-SECOND));
      const renewed = await store.renewLease('acme', started.id, token, LEASE);
      expect(renewed.lease?.startedAt).toBe(iso(-SECOND));
      expect((await store.getTask('acme', started.id))?.task.lease?.startedAt).toBe(iso(-SECOND));
      // No event: the history is the creation and the claim.
      expect(await path(started.id)).toEqual(['->SUBMITTED', 'SUBMITTED>WORKING']);
      // Both leases run out: the started task fails (its command may have run), attempts left
      // or not; the other goes back to the queue.
      h.advance(LEASE);
      expect(await reason(store.startTask('acme', unstarted.id, other?.lease?.token ?? 0))).toBe(
        'stale_lease',
      );
      const expired = await store.expireLeases(iso());
      const byId = new Map(expired.map((t) => [t.task.id, t]));
      const lost = byId.get(started.id);
      expect(lost?.task).toMatchObject({
        state: 'FAILED',
        attempts: 1,
        lease: null,
        error: { code: 'worker_lost' },
      });
      expect(lost?.task.error?.message).toContain('may or may not have run');
      expect(lost?.task.error?.message).toContain('w-started');
      expect(lost?.event).toMatchObject({ from: 'WORKING', to: 'FAILED', by: 'hub' });
      expect(lost?.event.note).toContain('worker_lost');
      expect(byId.get(unstarted.id)?.task).toMatchObject({ state: 'SUBMITTED', lease: null });
      expect(byId.get(unstarted.id)?.event.note).toContain('before the command started');
      // A new claim of the requeued task starts unstarted, whatever the last lease did.
      const retaken = await claim('w-next');
      expect(retaken).toMatchObject({ id: unstarted.id, attempts: 2 });
      expect(retaken?.lease?.startedAt).toBeNull();
      const next = retaken?.lease?.token ?? 0;
      await store.startTask('acme', unstarted.id, next);
      const handedBack = await store.failTask(
        'acme',
        unstarted.id,
        next,
        { code: 'busy', message: 'try elsewhere' },
        { retry: true },
      );
      expect([handedBack.state, handedBack.lease]).toEqual(['SUBMITTED', null]);
      const third = await claim('w-third');
      expect([third?.id, third?.lease?.startedAt]).toEqual([unstarted.id, null]);
      // A started task that finishes is simply completed; a finished one cannot be started.
      await store.startTask('acme', unstarted.id, third?.lease?.token ?? 0);
      const done = await store.completeTask('acme', unstarted.id, third?.lease?.token ?? 0, {
        ok: true,
      });
      expect([done.state, done.lease]).toEqual(['COMPLETED', null]);
      expect(await reason(store.startTask('acme', unstarted.id, third?.lease?.token ?? 0))).toBe(
        'stale_lease',
      );
      expect(await store.expireLeases(iso(LEASE * 2))).toEqual([]);
    },

    async 'task-wait-expiry'() {
      const store = h.store();
      const brief = await create({ ttlSeconds: 60 });
      const patient = await create({ title: 'no ttl' });
      const later = await create({ ttlSeconds: 120, targetRuntime: 'web' });
      h.advance(60 * SECOND);
      // Past its wait it is never claimed, even before the sweep.
      expect((await claim())?.id).toBe(patient.id);
      const expired = await store.expireWaiting(iso());
      expect(expired.map((t) => [t.task.id, t.task.state, t.task.error?.code])).toEqual([
        [brief.id, 'FAILED', 'expired'],
      ]);
      expect(expired[0]?.event).toMatchObject({ from: 'SUBMITTED', to: 'FAILED', by: 'hub' });
      expect(await store.expireWaiting(iso())).toEqual([]);
      // A requeued task waits anew from the time it re-entered the queue.
      h.advance(30 * SECOND);
      const held = await store.claimTask({
        teamId: 'acme',
        runtime: 'web',
        workerId: 'w',
        leaseMs: LEASE,
      });
      expect(held?.id).toBe(later.id);
      h.advance(LEASE);
      const requeued = await store.expireLeases(iso());
      const again = requeued.find((t) => t.task.id === later.id);
      expect(again?.task.expiresAt).toBe(iso(120 * SECOND));
      h.advance(119 * SECOND);
      expect(await store.expireWaiting(iso())).toEqual([]);
      h.advance(SECOND);
      expect((await store.expireWaiting(iso())).map((t) => t.task.id)).toEqual([later.id]);
    },

    async 'task-approval'() {
      const store = h.store();
      const pending = (): TaskApproval => ({
        status: 'pending',
        request: { argv: ['rm', '-rf', 'build'], cwd: '/srv/app', scriptHash: null, digest: 'd1' },
        requestedBy: 'w1',
        requestedAt: iso(),
        expiresAt: iso(30 * 60 * SECOND),
        decidedBy: null,
        decidedAt: null,
        note: null,
        token: null,
      });
      // A worker holding the task asks for approval of the exact command: the lease ends and
      // the task waits for a human until the request lapses.
      const asked = await create({ title: 'needs a human' });
      const held = await claim();
      expect(held?.id).toBe(asked.id);
      const token = held?.lease?.token as number;
      expect(
        await reason(
          store.updateTask('acme', asked.id, {
            state: 'AUTH_REQUIRED',
            by: 'w1',
            token: token + 1,
            approval: pending(),
          }),
        ),
      ).toBe('stale_lease');
      const waiting = await store.updateTask('acme', asked.id, {
        state: 'AUTH_REQUIRED',
        by: 'w1',
        token,
        note: 'rm -rf build is not in the allow-list',
        approval: pending(),
      });
      expect(waiting).toMatchObject({
        state: 'AUTH_REQUIRED',
        lease: null,
        expiresAt: iso(30 * 60 * SECOND),
      });
      expect(waiting.approval).toEqual(pending());
      expect(await claim()).toBeNull();

      // Approved: back in the queue with the signed approval, which the next claim carries.
      const approved = await store.updateTask('acme', asked.id, {
        state: 'SUBMITTED',
        by: 'alice',
        approval: {
          ...pending(),
          status: 'approved',
          decidedBy: 'alice',
          decidedAt: iso(),
          token: 'signed',
        },
      });
      expect(approved.approval?.status).toBe('approved');
      const again = await claim('w2');
      expect(again).toMatchObject({
        id: asked.id,
        approval: { status: 'approved', token: 'signed' },
      });
      expect(again?.lease?.token).not.toBe(token);

      // Denied: rejected with the reason; and one left unanswered is a deny once it lapses.
      const denied = await create({ title: 'denied' });
      const deniedHeld = await claim();
      await store.updateTask('acme', denied.id, {
        state: 'AUTH_REQUIRED',
        by: 'w1',
        token: deniedHeld?.lease?.token as number,
        approval: pending(),
      });
      const no = await store.updateTask('acme', denied.id, {
        state: 'REJECTED',
        by: 'alice',
        error: { code: 'approval_denied', message: 'not on prod' },
        approval: { ...pending(), status: 'denied', decidedBy: 'alice', decidedAt: iso() },
      });
      expect(no).toMatchObject({
        state: 'REJECTED',
        error: { code: 'approval_denied' },
        expiresAt: null,
      });

      const lapsed = await create({ title: 'nobody answers' });
      const lapsedHeld = await claim();
      await store.updateTask('acme', lapsed.id, {
        state: 'AUTH_REQUIRED',
        by: 'w1',
        token: lapsedHeld?.lease?.token as number,
        approval: pending(),
      });
      h.advance(30 * 60 * SECOND - 1);
      expect(await store.expireApprovals(iso())).toEqual([]);
      h.advance(1);
      const expired = await store.expireApprovals(iso());
      expect(
        expired.map((t) => [t.task.id, t.task.state, t.task.error?.code, t.task.approval?.status]),
      ).toEqual([[lapsed.id, 'REJECTED', 'approval_expired', 'expired']]);
      expect(expired[0]?.event).toMatchObject({ from: 'AUTH_REQUIRED', to: 'REJECTED', by: 'hub' });
      const stored = await store.getTask('acme', lapsed.id);
      expect(stored?.task.approval?.status).toBe('expired');
    },

    async 'task-transitions'() {
      const store = h.store();
      // Held for approval, approved, then claimed and worked on.
      const gated = await create({ initialState: 'AUTH_REQUIRED' });
      expect(await claim()).toBeNull();
      expect(await reason(store.updateTask('acme', gated.id, { state: 'WORKING', by: 'x' }))).toBe(
        'illegal_transition',
      );
      const approved = await store.updateTask('acme', gated.id, {
        state: 'SUBMITTED',
        by: 'alice',
        note: 'approved',
      });
      expect(approved.state).toBe('SUBMITTED');
      const working = await claim();
      const token = working?.lease?.token ?? 0;
      // A WORKING task changes only with its holder's token.
      expect(
        await reason(store.updateTask('acme', gated.id, { state: 'INPUT_REQUIRED', by: 'x' })),
      ).toBe('stale_lease');
      expect(
        await reason(store.updateTask('acme', gated.id, { state: 'COMPLETED', by: 'w1', token })),
      ).toBe('illegal_transition');
      const asking = await store.updateTask('acme', gated.id, {
        state: 'INPUT_REQUIRED',
        by: 'w1',
        token,
        note: 'which branch?',
      });
      expect([asking.state, asking.lease]).toEqual(['INPUT_REQUIRED', null]);
      expect(await reason(store.completeTask('acme', gated.id, token, {}))).toBe('stale_lease');
      expect(
        await reason(store.updateTask('acme', gated.id, { state: 'AUTH_REQUIRED', by: 'x' })),
      ).toBe('illegal_transition');
      await store.updateTask('acme', gated.id, {
        state: 'SUBMITTED',
        by: 'openclaw',
        note: 'main',
      });
      const again = await claim('w2');
      const againToken = again?.lease?.token ?? 0;
      expect(againToken).not.toBe(token);
      await store.completeTask('acme', gated.id, againToken, { ok: true });
      expect(await path(gated.id)).toEqual([
        '->AUTH_REQUIRED',
        'AUTH_REQUIRED>SUBMITTED',
        'SUBMITTED>WORKING',
        'WORKING>INPUT_REQUIRED',
        'INPUT_REQUIRED>SUBMITTED',
        'SUBMITTED>WORKING',
        'WORKING>COMPLETED',
      ]);
      const history = (await store.getTask('acme', gated.id))?.history ?? [];
      expect(history[1]).toMatchObject({ by: 'alice', note: 'approved' });
      expect(history.map((e) => e.seq)).toEqual(
        [...history.map((e) => e.seq)].sort((a, b) => a - b),
      );
      // Terminal states never change: not by update, cancel, completion or failure.
      for (const state of ['SUBMITTED', 'CANCELED', 'FAILED', 'INPUT_REQUIRED'] as const) {
        expect(
          await reason(store.updateTask('acme', gated.id, { state, by: 'x', token: againToken })),
        ).toBe('illegal_transition');
      }
      await rejectsWith(store.cancelTask('acme', gated.id, 'x'), 'conflict');
      // A denied approval: REJECTED, final.
      const denied = await create({ initialState: 'AUTH_REQUIRED' });
      const rejected = await store.updateTask('acme', denied.id, {
        state: 'REJECTED',
        by: 'bob',
        note: 'not on prod',
      });
      expect(rejected.state).toBe('REJECTED');
      expect(
        await reason(store.updateTask('acme', denied.id, { state: 'SUBMITTED', by: 'bob' })),
      ).toBe('illegal_transition');
      // Cancel: from waiting or working (the lease ends); twice is the same task, once stored.
      const queued = await create();
      const canceled = await store.cancelTask('acme', queued.id, 'openclaw', 'not needed');
      expect([canceled.state, canceled.expiresAt]).toEqual(['CANCELED', null]);
      expect(await store.cancelTask('acme', queued.id, 'openclaw')).toEqual(canceled);
      expect(await path(queued.id)).toEqual(['->SUBMITTED', 'SUBMITTED>CANCELED']);
      await create({ title: 'busy' });
      const busy = await claim('w3');
      const stopped = await store.cancelTask('acme', busy?.id ?? '', 'openclaw');
      expect([stopped.state, stopped.lease]).toEqual(['CANCELED', null]);
      expect(
        await reason(store.completeTask('acme', stopped.id, busy?.lease?.token ?? 0, {})),
      ).toBe('stale_lease');
      // An update to FAILED keeps the error given (or the note).
      const doomed = await create();
      const failed = await store.updateTask('acme', doomed.id, {
        state: 'FAILED',
        by: 'hub',
        note: 'router gave up',
      });
      expect(failed.error).toEqual({ code: 'failed', message: 'router gave up' });
      await rejectsWith(
        store.updateTask('acme', 'task_nope', { state: 'FAILED', by: 'x' }),
        'not_found',
      );
    },

    async 'task-reopen'() {
      let store = h.store();
      const waiting = await create({ idempotencyKey: 'durable', ttlSeconds: 3600 });
      await create({ title: 'second' });
      const held = await claim('w1');
      await store.startTask('acme', held?.id ?? '', held?.lease?.token ?? 0);
      const before = await store.getTask('acme', held?.id ?? '');
      expect(before?.task.lease?.startedAt).toBe(iso());
      store = await h.reopen();
      // Everything survives: tasks, leases (started or not), history, keys; a new claim gets a
      // new token.
      expect(await store.getTask('acme', held?.id ?? '')).toEqual(before);
      expect(
        (await store.createTask('acme', basic({ idempotencyKey: 'durable', ttlSeconds: 3600 })))
          .status,
      ).toBe('existing');
      expect((await store.listTasks('acme', { limit: 10 })).map((t) => t.state)).toEqual([
        'WORKING',
        'SUBMITTED',
      ]);
      h.advance(LEASE);
      expect(
        (await store.expireLeases(iso())).map((t) => [t.task.id, t.task.state, t.task.error?.code]),
      ).toEqual([[waiting.id, 'FAILED', 'worker_lost']]);
      const next = await claim('w2');
      expect(next?.title).toBe('second');
      expect(next?.lease?.token).not.toBe(before?.task.lease?.token);
    },

    async 'task-derived-id-secret'() {
      // 256 random bits (a test database may be copied from a migrated template, secret and
      // all, so two of them are not compared), made with the schema, kept across a reopen.
      const secret = await h.store().derivedIdSecret();
      expect(secret).toMatch(/^[0-9a-f]{64}$/);
      expect(await (await h.reopen()).derivedIdSecret()).toBe(secret);
    },
  };
}
