import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { call, openStream, tempDir, waitUntil } from '@ctxbus/test-kit';
import { describe, expect, it } from 'vitest';
import { useInProcessHub } from './in-process-serve.ts';

// Tasks in a real `ctxbus serve`: a runtime creates a task, the hub routes it with the
// capability matrix and live presence, a worker claims it under a lease whose fencing token
// every later call carries, and every change reaches the team's streams as a status item.

const dataDir = tempDir('ctxbus-tasks-');
writeFileSync(
  join(dataDir, 'capabilities.yaml'),
  readFileSync(join(import.meta.dirname, '../../../capabilities.yaml'), 'utf8'),
);

const hub = useInProcessHub({
  dataDir,
  tokens: {
    code: ['acme', 'claude-code'],
    claw: ['acme', 'openclaw'],
    globex: ['globex', 'claude-code'],
  },
});

const codeTask = (title: string, extra: Record<string, unknown> = {}) => ({
  title,
  requiredCapabilities: ['code_execution'],
  input: { argv: ['npm', 'test'] },
  ...extra,
});

async function create(token: string, body: unknown) {
  const response = await call(hub.url, 'POST', '/api/tasks', { token, body });
  if (response.status >= 300) throw new Error(JSON.stringify(response.body));
  return response;
}

async function announceWorker(instanceId: string) {
  const response = await call(hub.url, 'POST', '/api/presence', {
    token: hub.tokens.code,
    body: { instanceId, kind: 'worker', capabilities: ['code_execution'], capacity: 1 },
  });
  expect(response.status).toBe(200);
}

async function leave(instanceId: string) {
  await call(hub.url, 'DELETE', `/api/presence/${instanceId}`, { token: hub.tokens.code });
}

async function claim(token: string, workerId: string, leaseMs = 30_000) {
  const response = await call(hub.url, 'POST', '/api/tasks/claim', {
    token,
    body: { workerId, leaseMs },
  });
  expect(response.status).toBe(200);
  return response.body.task;
}

async function getTask(id: string, token = hub.tokens.claw) {
  return call(hub.url, 'GET', `/api/tasks/${id}`, { token });
}

/** Claims until the task with this id is the one claimed (earlier tests may leave others). */
async function claimThis(id: string, workerId: string, leaseMs = 30_000) {
  for (;;) {
    const task = await claim(hub.tokens.code, workerId, leaseMs);
    if (!task) throw new Error(`task ${id} was not claimable`);
    if (task.id === id) return task;
    await call(hub.url, 'POST', `/api/tasks/${task.id}/cancel`, {
      token: hub.tokens.code,
      body: {},
    });
  }
}

describe('tasks routed and run through the hub', () => {
  it('queues a code task from OpenClaw for Claude Code while no worker is online, then proxies once one is', async () => {
    const queued = await create(hub.tokens.claw, codeTask('run the tests (no worker yet)'));
    expect(queued.status).toBe(201);
    expect(queued.body.routing).toMatchObject({ kind: 'queue', runtime: 'claude-code' });
    expect(queued.body.task).toMatchObject({
      state: 'SUBMITTED',
      origin: 'openclaw',
      targetRuntime: 'claude-code',
      attempts: 0,
    });
    expect(queued.body.task.routing.kind).toBe('queue');

    await announceWorker('w-proxy');
    const proxied = await create(hub.tokens.claw, codeTask('run the tests (worker up)'));
    expect(proxied.body.routing).toMatchObject({ kind: 'proxy', runtime: 'claude-code' });
    expect(proxied.body.routing.reason).toEqual(expect.any(String));
    await leave('w-proxy');
  });

  it('runs a claimed task to completion; the origin sees the result and the stream sees each state', async () => {
    const stream = openStream(hub.url, hub.tokens.claw, { query: 'tags=task' });
    await stream.ready;
    const created = await create(hub.tokens.claw, codeTask('complete me'));
    const id = created.body.task.id as string;
    const task = await claimThis(id, 'worker-a');
    expect(task).toMatchObject({
      state: 'WORKING',
      attempts: 1,
      lease: { workerId: 'worker-a', token: expect.any(Number) },
    });
    const token = task.lease.token as number;

    const renewed = await call(hub.url, 'POST', `/api/tasks/${id}/renew`, {
      token: hub.tokens.code,
      body: { token, leaseMs: 60_000 },
    });
    expect(renewed.status).toBe(200);
    expect(Date.parse(renewed.body.task.lease.expiresAt)).toBeGreaterThan(
      Date.parse(task.lease.expiresAt),
    );

    const done = await call(hub.url, 'POST', `/api/tasks/${id}/complete`, {
      token: hub.tokens.code,
      body: { token, result: { exitCode: 0, stdout: 'ok' } },
    });
    expect(done.status).toBe(200);
    expect(done.body.task).toMatchObject({
      state: 'COMPLETED',
      lease: null,
      result: { exitCode: 0 },
    });

    const seen = await getTask(id);
    expect(seen.status).toBe(200);
    expect(seen.body.history.map((event: { to: string }) => event.to)).toEqual([
      'SUBMITTED',
      'WORKING',
      'COMPLETED',
    ]);

    // Each state is added once; each new line supersedes the task's line before it.
    const states = (kind: string) =>
      stream
        .items()
        .filter((event) => event.event === kind && event.item.scopeKey === `task:${id}`)
        .map((event) => event.item.runtimeOptions.task.state);
    await stream.waitFor(() => states('context-superseded').includes('WORKING'));
    expect(states('context-added')).toEqual(['SUBMITTED', 'WORKING', 'COMPLETED']);
    expect(states('context-superseded')).toEqual(['SUBMITTED', 'WORKING']);
    const last = stream
      .items()
      .filter((event) => event.event === 'context-added')
      .at(-1)?.item;
    expect(last.relevanceTags).toEqual(expect.arrayContaining(['task', 'completed']));
    stream.close();

    // A second complete, even with the right token, cannot restart a terminal task.
    const again = await call(hub.url, 'POST', `/api/tasks/${id}/complete`, {
      token: hub.tokens.code,
      body: { token, result: { exitCode: 1 } },
    });
    expect(again.status).toBe(409);
  });

  it('keeps secrets out of what a task stores: its text and result redacted, its input refused (it runs as given)', async () => {
    const key = 'ghp_abcdefghijklmnopqrstuvwxyz0123456789AB';
    const refused = await call(hub.url, 'POST', '/api/tasks', {
      token: hub.tokens.claw,
      body: codeTask('push', {
        input: { argv: ['git', 'push', `https://x:${key}@github.com/a/b`] },
      }),
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error.details).toMatchObject({
      field: 'input.argv[2]',
      reason: 'secret_in_identifier',
    });
    expect(JSON.stringify(refused.body)).not.toContain(key);
    const created = await create(
      hub.tokens.claw,
      codeTask(`deploy with ${key}`, { description: `password=hunter2 and ${key}` }),
    );
    const id = created.body.task.id as string;
    expect(created.body.task.title).toBe('deploy with [REDACTED:github-token]');
    const task = await claimThis(id, 'worker-secrets');
    const done = await call(hub.url, 'POST', `/api/tasks/${id}/complete`, {
      token: hub.tokens.code,
      body: { token: task.lease.token, result: { exitCode: 0, stdout: `token ${key} ok` } },
    });
    expect(done.status).toBe(200);
    const read = await getTask(id);
    expect(read.body.task.result.stdout).toBe('token [REDACTED:github-token] ok');
    expect(JSON.stringify(read.body)).not.toMatch(/ghp_|hunter2/);
  });

  it('gives a lost lease to the next worker and refuses the old worker its late result (fencing)', async () => {
    const created = await create(hub.tokens.claw, codeTask('lose my lease'));
    const id = created.body.task.id as string;
    const first = await claimThis(id, 'worker-slow', 1_000);
    // The hub's task sweep returns it to the queue once the 1 s lease has run out.
    await waitUntil(
      async () => (await getTask(id)).body.task.state === 'SUBMITTED',
      'the expired lease to put the task back in the queue',
    );
    const second = await claimThis(id, 'worker-fast');
    expect(second.lease.token).not.toBe(first.lease.token);
    expect(second.attempts).toBe(2);

    const late = await call(hub.url, 'POST', `/api/tasks/${id}/complete`, {
      token: hub.tokens.code,
      body: { token: first.lease.token, result: { from: 'the slow worker' } },
    });
    expect(late.status).toBe(409);
    expect(late.body.error.details.reason).toBe('stale_lease');

    const ok = await call(hub.url, 'POST', `/api/tasks/${id}/complete`, {
      token: hub.tokens.code,
      body: { token: second.lease.token, result: { from: 'the fast worker' } },
    });
    expect(ok.body.task.result).toEqual({ from: 'the fast worker' });
  });

  it('rejects what no runtime can do, and dedupes by idempotency key', async () => {
    const rejected = await create(hub.tokens.claw, {
      title: 'teleport the server',
      requiredCapabilities: ['teleportation'],
    });
    expect(rejected.body.routing).toMatchObject({ kind: 'escalate', runtime: null });
    expect(rejected.body.task.state).toBe('REJECTED');

    const first = await create(hub.tokens.claw, codeTask('once', { idempotencyKey: 'k-1' }));
    const second = await create(hub.tokens.claw, codeTask('once', { idempotencyKey: 'k-1' }));
    expect(first.status).toBe(201);
    expect(second.status).toBe(200);
    expect(second.body).toMatchObject({
      status: 'existing',
      task: { id: first.body.task.id, title: 'once' },
    });
    // Another request with the key is not answered with the first one's task.
    const other = await call(hub.url, 'POST', '/api/tasks', {
      token: hub.tokens.claw,
      body: codeTask('once again', { idempotencyKey: 'k-1' }),
    });
    expect(other.status).toBe(409);
    expect(other.body.error).toMatchObject({
      code: 'conflict',
      details: { reason: 'idempotency_key_reused', taskId: first.body.task.id, fields: ['title'] },
    });
  });

  it('keeps teams apart, cancels, lists, and answers bad input with 4xx and a code', async () => {
    const created = await create(hub.tokens.claw, codeTask('acme only'));
    const id = created.body.task.id as string;
    expect((await getTask(id, hub.tokens.globex)).status).toBe(404);
    expect(await claim(hub.tokens.globex, 'outsider')).toBeNull();

    const listed = await call(hub.url, 'GET', '/api/tasks?state=SUBMITTED&limit=200', {
      token: hub.tokens.code,
    });
    expect(listed.status).toBe(200);
    expect(listed.body.tasks.map((task: { id: string }) => task.id)).toContain(id);

    const canceled = await call(hub.url, 'POST', `/api/tasks/${id}/cancel`, {
      token: hub.tokens.claw,
      body: { note: 'not needed' },
    });
    expect(canceled.body.task.state).toBe('CANCELED');

    const bad = await call(hub.url, 'POST', '/api/tasks', {
      token: hub.tokens.claw,
      body: { title: '', requiredCapabilities: [] },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('validation_failed');
    const badId = await call(hub.url, 'GET', '/api/tasks/nope', { token: hub.tokens.claw });
    expect(badId.status).toBe(400);
    const badToken = await call(hub.url, 'POST', `/api/tasks/${id}/complete`, {
      token: hub.tokens.code,
      body: { token: 0, result: {} },
    });
    expect(badToken.status).toBe(400);
  });

  it("takes the worker's next task with its completion (`next`): the oldest waiting, or null; a refused completion claims nothing", async () => {
    // Earlier tests may leave tasks waiting: cancel them, so the queue holds only these.
    for (let left = await claim(hub.tokens.code, 'drain'); left; ) {
      await call(hub.url, 'POST', `/api/tasks/${left.id}/cancel`, {
        token: hub.tokens.code,
        body: {},
      });
      left = await claim(hub.tokens.code, 'drain');
    }
    const stats = async () =>
      (await call(hub.url, 'GET', '/api/admin/tasks', { token: hub.adminToken ?? '' })).body
        .claims as { taken: number; takenWithCompletion: number };
    const before = await stats();
    const ids: string[] = [];
    for (const title of ['first', 'second', 'third']) {
      ids.push((await create(hub.tokens.claw, codeTask(title))).body.task.id as string);
    }
    const next = { workerId: 'chained', leaseMs: 30_000 };
    const complete = (id: string, token: number, body: Record<string, unknown> = {}) =>
      call(hub.url, 'POST', `/api/tasks/${id}/complete`, {
        token: hub.tokens.code,
        body: { token, result: { exitCode: 0 }, next, ...body },
      });

    const first = await claimThis(ids[0] as string, 'chained');
    const one = await complete(first.id, first.lease.token);
    expect(one.status, JSON.stringify(one.body)).toBe(200);
    expect(one.body.task).toMatchObject({ id: ids[0], state: 'COMPLETED', lease: null });
    expect(one.body.next).toMatchObject({
      id: ids[1],
      state: 'WORKING',
      attempts: 1,
      lease: { workerId: 'chained', token: expect.any(Number) },
    });
    const second = one.body.next;

    // A completion the hub refuses (not this claim's token) completes and claims nothing.
    const refused = await complete(second.id, second.lease.token + 1);
    expect(refused.status).toBe(409);
    expect((await getTask(ids[1] as string)).body.task.state).toBe('WORKING');
    expect((await getTask(ids[2] as string)).body.task.state).toBe('SUBMITTED');

    const two = await complete(second.id, second.lease.token);
    expect(two.body.next).toMatchObject({ id: ids[2], state: 'WORKING' });
    // Without `next`, the answer is the completed task alone.
    const three = await call(hub.url, 'POST', `/api/tasks/${ids[2]}/complete`, {
      token: hub.tokens.code,
      body: { token: two.body.next.lease.token, result: { exitCode: 0 } },
    });
    expect(three.status).toBe(200);
    expect(three.body).not.toHaveProperty('next');
    // None waiting: the completion stands and `next` is null.
    const fourth = await create(hub.tokens.claw, codeTask('fourth'));
    const last = await claimThis(fourth.body.task.id, 'chained');
    const none = await complete(last.id, last.lease.token);
    expect(none.status).toBe(200);
    expect(none.body).toMatchObject({ task: { state: 'COMPLETED' }, next: null });

    for (const id of [...ids, fourth.body.task.id]) {
      const { body } = await getTask(id);
      expect(body.task.state).toBe('COMPLETED');
      expect(body.history.map((event: { to: string }) => event.to)).toEqual([
        'SUBMITTED',
        'WORKING',
        'COMPLETED',
      ]);
    }
    const after = await stats();
    expect(after.takenWithCompletion - before.takenWithCompletion).toBe(2);
  });
});
