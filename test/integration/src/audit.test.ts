import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { call, runCli, tempDir, waitUntil } from '@ctxbus/test-kit';
import { describe, expect, it } from 'vitest';
import { useInProcessHub } from './in-process-serve.ts';

// The audit log in a real `ctxbus serve` (issue 12): tasks created, claimed, completed, failed,
// canceled and swept each leave hash-chained records; `ctxbus audit verify` says the chain is
// intact, then names the record someone changed in the SQLite file behind the hub's back.

const dataDir = tempDir('ctxbus-audit-');
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

interface AuditRecordBody {
  seq: number;
  kind: string;
  actor: string;
  subject: string;
  data: Record<string, unknown>;
  prevHash: string;
  hash: string;
}

async function post(token: string, path: string, body: unknown) {
  const response = await call(hub.url, 'POST', path, { token, body });
  if (response.status >= 300) throw new Error(`${path}: ${JSON.stringify(response.body)}`);
  return response.body;
}

async function records(token = hub.tokens.claw): Promise<AuditRecordBody[]> {
  const all: AuditRecordBody[] = [];
  for (let after = 0; ; ) {
    const response = await call(hub.url, 'GET', `/api/audit?after=${after}&limit=5`, { token });
    expect(response.status).toBe(200);
    all.push(...response.body.records);
    if (response.body.nextAfter === null) return all;
    after = response.body.nextAfter;
  }
}

const of = (all: AuditRecordBody[], subject: string) =>
  all.filter((record) => record.subject === subject);

/** Claims as claude-code until it gets `id` (tasks earlier in the queue are canceled). */
async function claimThis(id: string, workerId: string, leaseMs = 30_000) {
  for (;;) {
    const { task } = await post(hub.tokens.code, '/api/tasks/claim', { workerId, leaseMs });
    if (!task) throw new Error(`task ${id} was not claimable`);
    if (task.id === id) return task;
    await post(hub.tokens.code, `/api/tasks/${task.id}/cancel`, {});
  }
}

const codeTask = (title: string) => ({
  title,
  requiredCapabilities: ['code_execution'],
  input: { argv: ['npm', 'test'] },
});

const cli = (args: string[], env: NodeJS.ProcessEnv = {}) =>
  runCli(['audit', ...args, '--url', hub.url], { env });

describe('the audit log of a running hub', () => {
  it('records routing, every state change and the execution result of each task', async () => {
    await post(hub.tokens.code, '/api/presence', {
      instanceId: 'audit-worker',
      kind: 'worker',
      capabilities: ['code_execution'],
      capacity: 1,
    });
    const { task: done, routing } = await post(hub.tokens.claw, '/api/tasks', codeTask('audited'));
    const claimed = await claimThis(done.id, 'worker-a');
    await post(hub.tokens.code, `/api/tasks/${done.id}/complete`, {
      token: claimed.lease.token,
      result: { argv: ['npm', 'test'], exitCode: 0, durationMs: 42, stdout: 'ok', stderr: '' },
    });
    const { task: failed } = await post(hub.tokens.claw, '/api/tasks', codeTask('fails'));
    const claimedToFail = await claimThis(failed.id, 'worker-b');
    await post(hub.tokens.code, `/api/tasks/${failed.id}/fail`, {
      token: claimedToFail.lease.token,
      error: { code: 'not_allowed', message: 'rm is not on the allow-list' },
    });
    const { task: canceled } = await post(hub.tokens.claw, '/api/tasks', codeTask('canceled'));
    await post(hub.tokens.claw, `/api/tasks/${canceled.id}/cancel`, { note: 'not needed' });

    const all = await records();
    expect(all.map((record) => record.seq)).toEqual(all.map((_, index) => index + 1));
    expect(of(all, done.id).map((record) => record.kind)).toEqual([
      'task.routed',
      'task.state',
      'task.state',
      'task.state',
      'execution.finished',
    ]);
    const [routed, created, working, completed, execution] = of(all, done.id);
    expect(routed).toMatchObject({
      actor: 'openclaw',
      data: {
        kind: routing.kind,
        runtime: 'claude-code',
        reason: routing.reason,
        requiresApproval: routing.requiresApproval,
      },
    });
    expect(created?.data).toMatchObject({ from: null, to: 'SUBMITTED', by: 'openclaw' });
    expect(working?.data).toMatchObject({
      from: 'SUBMITTED',
      to: 'WORKING',
      by: 'claude-code',
      workerId: 'worker-a',
    });
    expect(completed?.data).toMatchObject({ from: 'WORKING', to: 'COMPLETED' });
    expect(execution).toMatchObject({
      actor: 'claude-code',
      data: { outcome: 'completed', exitCode: 0, durationMs: 42, argv: ['npm', 'test'] },
    });
    expect(execution?.data.resultHash).toMatch(/^[0-9a-f]{64}$/);
    expect(execution?.data).not.toHaveProperty('stdout');
    expect(of(all, failed.id).at(-1)).toMatchObject({
      kind: 'execution.finished',
      data: { outcome: 'failed', code: 'not_allowed', state: 'FAILED' },
    });
    expect(of(all, canceled.id).at(-1)).toMatchObject({
      kind: 'task.state',
      data: { from: 'SUBMITTED', to: 'CANCELED', note: 'not needed' },
    });
  });

  it("records the sweeper's lease expiries and dead letters", async () => {
    const { task: again } = await post(hub.tokens.claw, '/api/tasks', codeTask('lease runs out'));
    await claimThis(again.id, 'worker-gone', 1_000);
    const { task: last } = await post(hub.tokens.claw, '/api/tasks', {
      ...codeTask('last attempt'),
      maxAttempts: 1,
    });
    await claimThis(last.id, 'worker-gone', 1_000);
    const swept = async (id: string) =>
      of(await records(), id).find(
        (record) => record.kind === 'task.state' && record.data.from === 'WORKING',
      );
    await waitUntil(
      async () => (await swept(again.id)) !== undefined && (await swept(last.id)) !== undefined,
      'both lease expiries in the audit log',
    );
    expect(await swept(again.id)).toMatchObject({
      actor: 'hub',
      data: { to: 'SUBMITTED', by: 'hub' },
    });
    expect(await swept(last.id)).toMatchObject({
      actor: 'hub',
      data: { to: 'FAILED', error: { code: 'dead_letter' } },
    });
  });

  it('serves a team its own log only; an admin names the team', async () => {
    const globex = await call(hub.url, 'GET', '/api/audit', { token: hub.tokens.globex });
    expect(globex.body).toMatchObject({ team: 'globex', records: [], nextAfter: null });
    const other = await call(hub.url, 'GET', '/api/audit?team=acme', {
      token: hub.tokens.globex,
    });
    expect(other.status).toBe(403);
    const admin = await call(hub.url, 'GET', '/api/audit/verify', {
      token: hub.adminToken as string,
    });
    expect(admin.status).toBe(400);
    const adminAcme = await call(hub.url, 'GET', '/api/audit/verify?team=acme', {
      token: hub.adminToken as string,
    });
    expect(adminAcme.body).toMatchObject({ team: 'acme', ok: true });
  });

  it('`ctxbus audit verify` says intact, then names the record changed in the database file', async () => {
    const all = await records();
    const intact = await cli(['verify', '--token', hub.tokens.claw]);
    expect(intact.stderr).toBe('');
    expect(intact.code).toBe(0);
    expect(intact.stdout).toContain(
      `audit log of team acme: intact, ${all.length} records, head ${all.at(-1)?.hash}`,
    );
    const asAdmin = await cli(['verify', '--team', 'acme', '--json'], {
      CTXBUS_ADMIN_TOKEN: hub.adminToken as string,
    });
    expect(asAdmin.code).toBe(0);
    expect(JSON.parse(asAdmin.stdout)).toMatchObject({ ok: true, records: all.length });
    const listed = await cli(['list', '--token', hub.tokens.claw, '--all', '--limit', '4']);
    expect(listed.code).toBe(0);
    expect(listed.stdout.trim().split('\n')).toHaveLength(all.length);
    expect(listed.stdout).toMatch(/^#1 \S+ task\.routed task_/);
    expect(listed.stderr).toBe('');
    // One page of several: stdout is the records, stderr how to get the rest; past the end,
    // stdout is empty and stderr says there is nothing.
    const page = await cli(['list', '--token', hub.tokens.claw, '--limit', '2']);
    expect(page.stdout.trim().split('\n')).toHaveLength(2);
    expect(page.stderr).toBe('ctxbus: more records: --after 2 for the next page, or --all\n');
    const past = await cli(['list', '--token', hub.tokens.claw, '--after', String(all.length)]);
    expect([past.code, past.stdout, past.stderr]).toEqual([
      0,
      '',
      `ctxbus: no audit records after #${all.length}\n`,
    ]);
    // --all --json: one JSON document with every page's records.
    const asJson = await cli([
      'list',
      '--token',
      hub.tokens.claw,
      '--all',
      '--limit',
      '4',
      '--json',
    ]);
    expect(asJson.code).toBe(0);
    const document = JSON.parse(asJson.stdout) as { records: { seq: number }[] };
    expect(document.records.map((record) => record.seq)).toEqual(all.map((record) => record.seq));

    // Someone with the file rewrites what a worker reported.
    const target = all.find((record) => record.kind === 'execution.finished');
    expect(target).toBeDefined();
    const db = new DatabaseSync(join(hub.dataDir, 'ctxbus.db'));
    try {
      db.prepare(
        `UPDATE audit_log SET data = replace(data, '"exitCode":0', '"exitCode":1')
          WHERE team_id = 'acme' AND seq = ?`,
      ).run(target?.seq ?? 0);
    } finally {
      db.close();
    }
    const broken = await cli(['verify', '--token', hub.tokens.claw]);
    expect(broken.code).toBe(1);
    expect(broken.stderr).toContain(
      `audit log of team acme is broken at record ${target?.seq}: its content does not match its hash`,
    );
    const api = await call(hub.url, 'GET', '/api/audit/verify', { token: hub.tokens.code });
    expect(api.body).toMatchObject({ ok: false, seq: target?.seq });
  });
});
