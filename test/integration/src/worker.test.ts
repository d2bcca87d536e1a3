import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CliRun } from '@ctxbus/test-kit';
import { call, openStream, spawnCli, tempDir, useHubProcess, waitUntil } from '@ctxbus/test-kit';
import { afterAll, describe, expect, it } from 'vitest';

// Remote execution end to end over real processes: an OpenClaw-origin task that needs
// code_execution is routed to a running `ctxbus worker` (Claude Code's runtime), runs an
// allowed command in a temp project, and the result reaches the origin's SSE stream. Refusals
// (not allowed, escaping path, inline eval, untrusted origin) fail the task with the reason; a
// task waits while no worker is up; a worker killed mid-task loses its lease and the task runs
// again on the next one.

const hubDir = tempDir('ctxbus-worker-hub-');
writeFileSync(
  join(hubDir, 'capabilities.yaml'),
  readFileSync(join(import.meta.dirname, '../../../capabilities.yaml'), 'utf8'),
);
const hub = useHubProcess({
  dataDir: hubDir,
  tokens: { code: ['acme', 'claude-code'], claw: ['acme', 'openclaw'], web: ['acme', 'web'] },
});

// The worker's own machine: a project under its one root, and its own policy file, which
// trusts OpenClaw but not the web runtime.
const machine = tempDir('ctxbus-worker-machine-');
const root = join(machine, 'projects');
const project = join(root, 'demo');
mkdirSync(project, { recursive: true });
writeFileSync(join(project, 'check.js'), "console.log('checked', process.cwd());\n");
// Hangs on its first run (until killed), succeeds on the next: for the kill -9 test.
writeFileSync(
  join(project, 'once.js'),
  [
    "const fs = require('node:fs');",
    "if (!fs.existsSync('started')) { fs.writeFileSync('started', String(process.pid)); setInterval(() => {}, 1000); }",
    "else console.log('second run');",
  ].join('\n'),
);
symlinkSync(machine, join(root, 'escape'));
const policyFile = join(machine, 'capabilities.yaml');
writeFileSync(
  policyFile,
  [
    'version: 1',
    'runtimes:',
    '  claude-code:',
    '    description: this machine',
    '    capabilities:',
    '      code_execution: { mode: native }',
    '  openclaw:',
    '    description: the assistant',
    '    trust: standard',
    '  web:',
    '    description: the dashboard',
    '    trust: restricted',
    'remote_execution:',
    '  allow: ["node check.js", "node once.js", "node -e ok"]',
    `  workdir: ${root}`,
  ].join('\n'),
);

const workers: CliRun[] = [];
function startWorker(id: string, leaseSeconds = 30): CliRun {
  const worker = spawnCli(
    ['worker', '--capabilities', policyFile, '--id', id, '--lease', String(leaseSeconds)],
    { env: { CTXBUS_URL: hub.url, CTXBUS_TOKEN: hub.tokens.code }, timeoutMs: 120_000 },
  );
  workers.push(worker);
  return worker;
}
afterAll(() => {
  for (const worker of workers) worker.child.kill('SIGKILL');
  // The first run of once.js outlives the worker killed with -9 (its own process group).
  const started = join(project, 'started');
  if (existsSync(started)) {
    try {
      process.kill(-Number(readFileSync(started, 'utf8')), 'SIGKILL');
    } catch {
      // already gone
    }
  }
});

async function workersOnline(): Promise<number> {
  const response = await call(hub.url, 'GET', '/api/capabilities', { token: hub.tokens.claw });
  const runtime = (response.body.runtimes as { id: string; presence: { workers: number } }[]).find(
    (entry) => entry.id === 'claude-code',
  );
  return runtime?.presence.workers ?? 0;
}

async function createTask(token: string, title: string, input: Record<string, unknown>) {
  const response = await call(hub.url, 'POST', '/api/tasks', {
    token,
    body: { title, requiredCapabilities: ['code_execution'], input },
  });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body as { task: { id: string; state: string }; routing: { kind: string } };
}

async function taskState(id: string) {
  return (await call(hub.url, 'GET', `/api/tasks/${id}`, { token: hub.tokens.claw })).body.task;
}

async function settled(id: string) {
  let task: any;
  await waitUntil(
    async () => {
      task = await taskState(id);
      return ['COMPLETED', 'FAILED', 'CANCELED', 'REJECTED'].includes(task.state);
    },
    `task ${id} to end`,
    { timeoutMs: 30_000 },
  );
  return task;
}

describe('ctxbus worker', () => {
  it("runs an OpenClaw task on Claude Code's worker; the result reaches the origin's stream", async () => {
    const first = startWorker('w1');
    await waitUntil(async () => (await workersOnline()) === 1, 'the worker to announce itself', {
      timeoutMs: 30_000,
    });
    const stream = openStream(hub.url, hub.tokens.claw, { query: 'tags=task' });
    await stream.ready;
    const created = await createTask(hub.tokens.claw, 'check the demo', {
      argv: ['node', 'check.js'],
      cwd: project,
    });
    expect(created.routing.kind).toBe('proxy');
    const id = created.task.id;
    await stream.waitFor(
      () =>
        stream
          .items()
          .some(
            (event) =>
              event.item.scopeKey === `task:${id}` &&
              event.item.runtimeOptions.task.state === 'COMPLETED',
          ),
      30_000,
    );
    const task = await taskState(id);
    expect(task.result).toMatchObject({ argv: ['node', 'check.js'], exitCode: 0, timedOut: null });
    expect(task.result.stdout).toContain(`checked ${project}`);
    stream.close();
    expect(first.child.exitCode).toBeNull();
  });

  it('refuses a command outside the allow-list, an escaping path, inline eval and an untrusted origin, each with its reason', async () => {
    const cases = [
      {
        token: hub.tokens.claw,
        input: { argv: ['ls', '-la'], cwd: project },
        code: 'approval_required',
      },
      {
        token: hub.tokens.claw,
        input: { argv: ['node', 'check.js'], cwd: join(root, 'escape') },
        code: 'workdir_escape',
      },
      {
        token: hub.tokens.claw,
        input: { argv: ['node', 'check.js'], cwd: `${project}/../..` },
        code: 'workdir_escape',
      },
      {
        token: hub.tokens.claw,
        input: { argv: ['node', '-e', 'ok'], cwd: project },
        code: 'inline_eval',
      },
      {
        token: hub.tokens.web,
        input: { argv: ['node', 'check.js'], cwd: project },
        code: 'approval_required',
      },
    ];
    for (const { token, input, code } of cases) {
      const created = await createTask(token, `refuse ${code}`, input);
      const task = await settled(created.task.id);
      expect(task.state, JSON.stringify(input)).toBe('FAILED');
      expect(task.error.code, JSON.stringify(input)).toBe(code);
      expect(task.error.message.length).toBeGreaterThan(10);
    }
  });

  it('keeps a task while no worker is up and runs it when one comes; a worker killed mid-task loses its lease and the task runs again', async () => {
    for (const worker of workers) worker.child.kill('SIGTERM');
    await Promise.all(workers.map((worker) => worker.done));
    await waitUntil(async () => (await workersOnline()) === 0, 'the workers to leave');

    const queued = await createTask(hub.tokens.claw, 'wait for a worker', {
      argv: ['node', 'once.js'],
      cwd: project,
    });
    expect(queued.routing.kind).toBe('queue');
    expect((await taskState(queued.task.id)).state).toBe('SUBMITTED');

    // A worker with a 3 s lease takes it; the first run hangs, and the worker dies with it.
    const doomed = startWorker('w-doomed', 3);
    await waitUntil(() => existsSync(join(project, 'started')), 'the first run to start', {
      timeoutMs: 30_000,
    });
    expect((await taskState(queued.task.id)).state).toBe('WORKING');
    doomed.child.kill('SIGKILL');
    await doomed.done;

    startWorker('w-next', 3);
    const task = await settled(queued.task.id);
    expect(task.state).toBe('COMPLETED');
    expect(task.attempts).toBe(2);
    expect(task.result.stdout).toContain('second run');
  });
});
