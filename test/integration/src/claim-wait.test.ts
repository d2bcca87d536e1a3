import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ApiResponse } from '@ctxbus/test-kit';
import { call, tempDir, waitUntil } from '@ctxbus/test-kit';
import { useHubPair, withPostgres } from '@ctxbus/test-kit/postgres';
import { describe, expect, it } from 'vitest';
import { useInProcessHub } from './in-process-serve.ts';

// Long-polling claims (`waitMs`): idle workers park their claims on the hub, and each task that
// becomes claimable wakes the one parked claim, of those that can take it, that waited longest.
// One claim attempt per task instead of one per idle worker, on one hub and across hubs.

const dataDir = tempDir('ctxbus-claim-wait-');
writeFileSync(
  join(dataDir, 'capabilities.yaml'),
  readFileSync(join(import.meta.dirname, '../../../capabilities.yaml'), 'utf8'),
);

const hub = useInProcessHub({
  dataDir,
  tokens: { code: ['acme', 'claude-code'], claw: ['acme', 'openclaw'], web: ['acme', 'web'] },
});

const codeTask = (title: string) => ({
  title,
  requiredCapabilities: ['code_execution'],
  input: { argv: ['npm', 'test'] },
});

async function stats(url: string, adminToken: string | null) {
  const response = await call(url, 'GET', '/api/admin/tasks', { token: adminToken });
  expect(response.status).toBe(200);
  return response.body.claims as {
    attempts: number;
    taken: number;
    takenWithCompletion: number;
    wakes: number;
    parked: number;
  };
}

function park(url: string, token: string, workerId: string, signal?: AbortSignal) {
  return call(url, 'POST', '/api/tasks/claim', {
    token,
    body: { workerId, leaseMs: 30_000, waitMs: 25_000 },
    ...(signal && { signal }),
  });
}

async function create(url: string, token: string, title: string) {
  const response = await call(url, 'POST', '/api/tasks', { token, body: codeTask(title) });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body.task as { id: string; targetRuntime: string | null };
}

/** Which of `claims` have answered so far. */
function answered(claims: Promise<ApiResponse>[]) {
  const done = new Set<number>();
  claims.forEach((claim, index) => {
    claim.then(
      () => done.add(index),
      () => {},
    );
  });
  return done;
}

describe('a waiting claim', () => {
  it('wakes one of four idle workers per task, the longest waiting first, with one attempt each', async () => {
    const base = await stats(hub.url, hub.adminToken);
    const controller = new AbortController();
    const claims: Promise<ApiResponse>[] = [];
    for (const worker of ['w1', 'w2', 'w3', 'w4']) {
      claims.push(park(hub.url, hub.tokens.code, worker, controller.signal));
      // Parked in this order: each has looked once and found nothing.
      await waitUntil(
        async () => (await stats(hub.url, hub.adminToken)).parked === claims.length,
        `${worker}'s claim to park`,
      );
    }
    const done = answered(claims);
    const first = await create(hub.url, hub.tokens.claw, 'first');
    expect(first.targetRuntime).toBe('claude-code');
    const one = await claims[0];
    expect(one?.body.task).toMatchObject({ id: first.id, state: 'WORKING' });
    expect(one?.body.task.lease.workerId).toBe('w1');
    const second = await create(hub.url, hub.tokens.claw, 'second');
    expect((await claims[1])?.body.task.id).toBe(second.id);
    await waitUntil(async () => (await stats(hub.url, hub.adminToken)).parked === 2, 'two parked');
    expect([...done].sort()).toEqual([0, 1]);
    const now = await stats(hub.url, hub.adminToken);
    // Four first looks, then one look per task: no herd.
    expect(now.attempts - base.attempts).toBe(6);
    expect(now.taken - base.taken).toBe(2);
    expect(now.wakes - base.wakes).toBe(2);
    // Workers that went away stop waiting at once.
    controller.abort();
    await Promise.allSettled(claims);
    await waitUntil(async () => (await stats(hub.url, hub.adminToken)).parked === 0, 'none parked');
  });

  it('is woken only by a task its runtime or capabilities can take', async () => {
    const controller = new AbortController();
    // The web runtime declares no code execution: a code task is never routed to it.
    const web = park(hub.url, hub.tokens.web, 'web-1', controller.signal);
    await waitUntil(async () => (await stats(hub.url, hub.adminToken)).parked === 1, 'web parked');
    const before = await stats(hub.url, hub.adminToken);
    const code = park(hub.url, hub.tokens.code, 'code-1', controller.signal);
    const task = await create(hub.url, hub.tokens.claw, 'for claude-code');
    expect((await code).body.task.id).toBe(task.id);
    const after = await stats(hub.url, hub.adminToken);
    expect(after.wakes - before.wakes).toBeLessThanOrEqual(1);
    expect(after.parked).toBe(1);
    controller.abort();
    await expect(web).rejects.toThrow();
  });

  it('answers null once its wait runs out, and refuses a wait past the limit', async () => {
    const response = await call(hub.url, 'POST', '/api/tasks/claim', {
      token: hub.tokens.web,
      body: { workerId: 'patient', waitMs: 1_000 },
    });
    expect(response.status).toBe(200);
    expect(response.body.task).toBeNull();
    const tooLong = await call(hub.url, 'POST', '/api/tasks/claim', {
      token: hub.tokens.web,
      body: { workerId: 'patient', waitMs: 60_000 },
    });
    expect(tooLong.status).toBe(400);
    expect(JSON.stringify(tooLong.body)).toMatch(/waitMs/);
  });
});

await withPostgres('waiting claims across hubs on PostgreSQL', (url, schemas) => {
  describe('a waiting claim on another hub', () => {
    const { a, b } = useHubPair(url, schemas, 'claimwait', useInProcessHub);

    it('is woken by a task created through another hub of the same database', async () => {
      const controller = new AbortController();
      const parked = park(a.url, a.tokens.code, 'laptop-a', controller.signal);
      await waitUntil(async () => (await stats(a.url, a.adminToken)).parked === 1, 'parked on A');
      // Announced so that B routes the task to claude-code (presence is shared by the hubs).
      const announced = await call(b.url, 'POST', '/api/presence', {
        token: a.tokens.code,
        body: { instanceId: 'laptop-a', kind: 'worker', capabilities: ['code_execution'] },
      });
      expect(announced.status).toBe(200);
      const task = await create(b.url, a.tokens.claw, 'through hub B');
      expect((await parked).body.task).toMatchObject({ id: task.id, state: 'WORKING' });
      expect((await stats(a.url, a.adminToken)).wakes).toBeGreaterThanOrEqual(1);
      controller.abort();
    });

    it("takes the worker's next task with its completion, and none when the completion is refused", async () => {
      const before = await stats(a.url, a.adminToken);
      const first = await create(a.url, a.tokens.claw, 'first of a chain');
      const second = await create(a.url, a.tokens.claw, 'second of a chain');
      const claimed = await call(a.url, 'POST', '/api/tasks/claim', {
        token: a.tokens.code,
        body: { workerId: 'chained', leaseMs: 30_000 },
      });
      expect(claimed.body.task).toMatchObject({ id: first.id });
      const token = claimed.body.task.lease.token as number;
      const complete = (id: string, withToken: number) =>
        call(a.url, 'POST', `/api/tasks/${id}/complete`, {
          token: a.tokens.code,
          body: { token: withToken, result: { exitCode: 0 }, next: { workerId: 'chained' } },
        });
      // Refused (not the claim's token): nothing completed, nothing claimed.
      expect((await complete(first.id, token + 1)).status).toBe(409);
      const stillWaiting = await call(a.url, 'GET', `/api/tasks/${second.id}`, {
        token: a.tokens.claw,
      });
      expect(stillWaiting.body.task.state).toBe('SUBMITTED');
      const done = await complete(first.id, token);
      expect(done.status, JSON.stringify(done.body)).toBe(200);
      expect(done.body.task).toMatchObject({ id: first.id, state: 'COMPLETED' });
      expect(done.body.next).toMatchObject({ id: second.id, state: 'WORKING', attempts: 1 });
      // Announced and audited as any completion and claim: the other hub shows both.
      for (const [id, states] of [
        [first.id, ['SUBMITTED', 'WORKING', 'COMPLETED']],
        [second.id, ['SUBMITTED', 'WORKING']],
      ] as const) {
        const read = await call(b.url, 'GET', `/api/tasks/${id}`, { token: a.tokens.claw });
        expect(read.body.history.map((event: { to: string }) => event.to)).toEqual(states);
      }
      const after = await stats(a.url, a.adminToken);
      expect(after.takenWithCompletion - before.takenWithCompletion).toBe(1);
      const last = await complete(second.id, done.body.next.lease.token);
      expect(last.body).toMatchObject({ task: { state: 'COMPLETED' }, next: null });
    });
  });
});
