import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { CliRun } from '@ctxbus/test-kit';
import {
  call,
  openStream,
  runCli,
  runCliInTerminal,
  runtimeToken,
  spawnCli,
  startHubProcess,
  tempDir,
  waitUntil,
  workerPolicy,
} from '@ctxbus/test-kit';
import { afterAll, describe, expect, it } from 'vitest';
import { startInProcessServe, useInProcessHub } from './in-process-serve.ts';

// Remote execution end to end with a real `ctxbus worker` process (and the hub in the test's
// process, but for the restart and kill cases): an OpenClaw-origin task that needs
// code_execution is routed to a running `ctxbus worker` (Claude Code's runtime), runs an
// allowed command in a temp project, and the result reaches the origin's SSE stream. Refusals
// (not allowed, escaping path, inline eval, untrusted origin) fail the task with the reason; a
// task waits while no worker is up; a worker killed after it started the command loses its
// lease and the task ends FAILED (worker_lost), never run twice, while a task whose worker died
// before starting it runs on the next one; a hub killed while the worker reports gets the
// report once it is back.

const hubDir = tempDir('ctxbus-worker-hub-');
writeFileSync(
  join(hubDir, 'capabilities.yaml'),
  readFileSync(join(import.meta.dirname, '../../../capabilities.yaml'), 'utf8'),
);
const hub = useInProcessHub({
  dataDir: hubDir,
  tokens: {
    code: ['acme', 'claude-code'],
    claw: ['acme', 'openclaw'],
    stranger: ['acme', 'stranger'],
    cli: ['acme', 'cli'],
  },
});

// The worker's own machine: a project under its one root, and its own policy file, which
// trusts OpenClaw, and does not know the runtime named stranger.
const machine = tempDir('ctxbus-worker-machine-');
const root = join(machine, 'projects');
const project = join(root, 'demo');
mkdirSync(project, { recursive: true });
writeFileSync(join(project, 'check.js'), "console.log('checked', process.cwd());\n");
// Counts its runs; hangs on its first (until killed), succeeds on the next: for the kill -9
// test, where a second run would be the bug.
writeFileSync(
  join(project, 'once.js'),
  [
    "const fs = require('node:fs');",
    "fs.appendFileSync('once-runs', 'x');",
    "if (!fs.existsSync('started')) { fs.writeFileSync('started', String(process.pid)); setInterval(() => {}, 1000); }",
    "else console.log('second run');",
  ].join('\n'),
);
// Prints, then waits for its file before it prints again and ends (ctxbus delegate --live).
writeFileSync(
  join(project, 'steps.js'),
  [
    "const fs = require('node:fs');",
    "console.log('first step');",
    "const timer = setInterval(() => { if (fs.existsSync('next-step')) { console.error('second step'); clearInterval(timer); } }, 20);",
  ].join('\n'),
);
// Prints, then waits for a file before it ends: its output shows while it runs.
writeFileSync(
  join(project, 'progress.js'),
  [
    "const fs = require('node:fs');",
    "console.log('step 1 of 2');",
    "const timer = setInterval(() => { if (fs.existsSync('go')) { console.log('step 2 of 2'); clearInterval(timer); } }, 20);",
  ].join('\n'),
);
// Succeeds with more output than the hub's body limit once escaped as JSON (control bytes
// take 6 bytes each): 2 x 256 KiB kept, about 3 MB of JSON. Counts its runs.
writeFileSync(
  join(project, 'big.js'),
  [
    "const fs = require('node:fs');",
    "fs.appendFileSync('big-runs', 'x');",
    // Lines of 1,000: the cuts fall at line breaks (no piece of a secret beside a cut).
    "process.stdout.write('BEGIN\\n' + ('\\u0001'.repeat(999) + '\\n').repeat(400) + 'END');",
    "process.stderr.write('\\u0002'.repeat(400000));",
  ].join('\n'),
);
// Writes a NUL character, which the hub stores no text with.
writeFileSync(join(project, 'nul.js'), "process.stdout.write('before\\u0000after\\n');\n");
// Fails, whatever its (long) arguments.
writeFileSync(
  join(project, 'fails.js'),
  "console.log('1 test failed: expected 2, got 3'); console.error('no'); process.exit(3);\n",
);
symlinkSync(machine, join(root, 'escape'));
const policyFile = join(machine, 'capabilities.yaml');
writeFileSync(
  policyFile,
  workerPolicy(
    root,
    // `node ...` lets node take free arguments: permission to run code (held for a human).
    [
      'node check.js',
      'node once.js',
      'node progress.js',
      'node steps.js',
      'node big.js',
      'node nul.js',
      'node fails.js ...',
      'node ...',
    ],
    ['  web:', '    description: the dashboard', '    trust: restricted'],
  ),
);

const workers: CliRun[] = [];
function startWorker(id: string, leaseSeconds = 30): CliRun {
  const worker = spawnCli(
    ['worker', '--capabilities', policyFile, '--id', id, '--lease', String(leaseSeconds)],
    { env: { CTXBUS_URL: hub.url, CTXBUS_TOKEN: hub.tokens.code } },
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

async function taskHistory(
  id: string,
): Promise<{ from: string; to: string; by: string; note: string | null }[]> {
  return (await call(hub.url, 'GET', `/api/tasks/${id}`, { token: hub.tokens.claw })).body.history;
}

async function settled(id: string) {
  let task: any;
  await waitUntil(async () => {
    task = await taskState(id);
    return ['COMPLETED', 'FAILED', 'CANCELED', 'REJECTED'].includes(task.state);
  }, `task ${id} to end`);
  return task;
}

describe('ctxbus worker', () => {
  it("runs an OpenClaw task on Claude Code's worker; the result reaches the origin's stream", async () => {
    const first = startWorker('w1');
    await waitUntil(async () => (await workersOnline()) === 1, 'the worker to announce itself', {});
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

  it('ctxbus delegate hands a command to the worker, follows it to its end and prints its output', async () => {
    const env = { CTXBUS_URL: hub.url, CTXBUS_TOKEN: hub.tokens.claw };
    const ran = await runCli(['delegate', '--cwd', project, '--', 'node', 'check.js'], { env });
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout).toBe(`checked ${project}\n`);
    expect(ran.stderr).toMatch(/^ctxbus: task \S+ -> claude-code \(proxy\): /);
    expect(ran.stderr).toContain(': COMPLETED');
    // A refused command ends the task FAILED: exit 1 with the worker's reason on one line.
    const refused = await runCli(['delegate', '--cwd', project, '--', 'node', '-e', '1'], {
      env,
    });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/ctxbus: error: task \S+ ended FAILED: inline_eval: node/);
    // --no-wait prints the task and its routing; a retry with the same key finds the same task.
    const args = ['delegate', '--no-wait', '--json', '--key', 'k1', '--cwd', project, '--'];
    args.push('node', 'check.js');
    const first = await runCli(args, { env });
    expect(first.code, first.stderr).toBe(0);
    const created = JSON.parse(first.stdout);
    expect(created.routing).toMatchObject({ kind: 'proxy', runtime: 'claude-code' });
    expect(created.task.input).toEqual({ argv: ['node', 'check.js'], cwd: project });
    const again = JSON.parse((await runCli(args, { env })).stdout);
    expect(again.task.id).toBe(created.task.id);
    expect((await settled(created.task.id)).state).toBe('COMPLETED');
    // Stopping delegate (Ctrl-C, or a kill: SIGTERM here) cancels the task: the command
    // (waiting for a file that never comes) is stopped.
    const following = spawnCli(['delegate', '--cwd', project, '--', 'node', 'progress.js'], {
      env,
    });
    let stderr = '';
    following.child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    await waitUntil(() => stderr.includes(': WORKING'), 'the delegated command to start');
    expect(stderr.match(/: WORKING/g)).toHaveLength(1);
    following.child.kill('SIGTERM');
    const canceled = await following.done;
    expect(canceled.code).toBe(1);
    expect(canceled.stderr).toMatch(/ctxbus: error: task (\S+) ended CANCELED: canceled\n/);
    const canceledId = /task (\S+) ended CANCELED/.exec(canceled.stderr)?.[1] ?? '';
    expect((await taskState(canceledId)).state).toBe('CANCELED');
    // A command that waits for a person: the line says why, and who may answer (not the token
    // that asked).
    const held = spawnCli(
      ['delegate', '--cwd', project, '--', 'node', '--stack-size=999', 'check.js'],
      { env },
    );
    let heldErr = '';
    held.child.stderr?.on('data', (chunk: Buffer) => {
      heldErr += chunk.toString();
    });
    await waitUntil(() => heldErr.includes(': AUTH_REQUIRED'), 'the command to wait for a person');
    const heldId = /task (\S+): AUTH_REQUIRED/.exec(heldErr)?.[1] ?? '';
    expect(heldErr).toContain(
      `task ${heldId}: AUTH_REQUIRED: waiting for a person to approve it (runs code). The token that asked cannot answer: approve it with the admin token (ctxbus approve --team acme ${heldId})`,
    );
    held.child.kill('SIGTERM');
    expect((await held.done).code).toBe(1);
    expect((await taskState(heldId)).state).toBe('CANCELED');
    // --live: the output shows while the command runs, then the rest, each part once (both
    // streams together, as they came).
    const live = spawnCli(['delegate', '--live', '--cwd', project, '--', 'node', 'steps.js'], {
      env,
    });
    let shown = '';
    live.child.stdout?.on('data', (chunk: Buffer) => {
      shown += chunk.toString();
    });
    await waitUntil(() => shown.includes('first step'), 'the first step shown while it runs');
    expect(existsSync(join(project, 'next-step'))).toBe(false);
    writeFileSync(join(project, 'next-step'), '');
    const lived = await live.done;
    expect(lived.code, lived.stderr).toBe(0);
    expect(lived.stdout).toBe('first step\nsecond step\n');
    expect(lived.stderr).toContain(': COMPLETED');
    // No command is exit 2, nothing sent; --cwd is the worker's path, which the worker checks.
    expect((await runCli(['delegate'], { env })).code).toBe(2);
    const nowhere = await runCli(['delegate', '--cwd', join(root, 'nope'), '--', 'true'], {
      env,
    });
    expect(nowhere.code).toBe(1);
    expect(nowhere.stderr).toMatch(/ended FAILED: workdir_escape: the working directory .*nope/);
    // A worker whose --root is no directory does not start (it would refuse every task).
    const rootless = await runCli(
      ['worker', '--capabilities', policyFile, '--root', join(root, 'nope')],
      { env: { CTXBUS_URL: hub.url, CTXBUS_TOKEN: hub.tokens.code } },
    );
    expect([rootless.code, rootless.stdout]).toEqual([2, '']);
    expect(rootless.stderr).toMatch(/^ctxbus: error: --root .*nope: no such directory\n$/);
    // "ready" only once the hub answered: a hub that is down, or a token it refuses, ends the
    // worker with the reason (exit 6, 3) and no "ready" before it.
    const unreached = await runCli(['worker', '--capabilities', policyFile, '--root', root], {
      env: { CTXBUS_URL: 'http://127.0.0.1:9', CTXBUS_TOKEN: hub.tokens.code },
    });
    expect([unreached.code, unreached.stdout]).toEqual([6, '']);
    expect(unreached.stderr).toMatch(/^ctxbus: error: cannot reach the ctxbus hub at /m);
    const badToken = await runCli(['worker', '--capabilities', policyFile, '--root', root], {
      env: { CTXBUS_URL: hub.url, CTXBUS_TOKEN: 'cbx_not_a_token' },
    });
    expect([badToken.code, badToken.stdout]).toEqual([3, '']);
  });

  it("streams a running command's output to the origin, then its result", async () => {
    const stream = openStream(hub.url, hub.tokens.claw, { query: 'tags=task' });
    await stream.ready;
    const created = await createTask(hub.tokens.claw, 'show progress', {
      argv: ['node', 'progress.js'],
      cwd: project,
    });
    const id = created.task.id;
    const about = () => stream.items().filter((event) => event.item.scopeKey === `task:${id}`);
    await stream.waitFor(() =>
      about().some((event) => String(event.item.content).includes('step 1 of 2')),
    );
    const running = about().find((event) => String(event.item.content).includes('step 1 of 2'));
    expect(running?.item.runtimeOptions.task.state).toBe('WORKING');
    writeFileSync(join(project, 'go'), '');
    const task = await settled(id);
    expect(task.state).toBe('COMPLETED');
    expect(task.result.stdout).toBe('step 1 of 2\nstep 2 of 2\n');
    stream.close();
  });

  it('refuses an escaping path and inline eval, each with its reason', async () => {
    const cases = [
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
        input: { argv: ['node', '-e', 'process.exit(0)'], cwd: project },
        code: 'inline_eval',
      },
    ];
    for (const { token, input, code } of cases) {
      const created = await createTask(token, `refuse ${code}`, input);
      const task = await settled(created.task.id);
      expect(task.state, JSON.stringify(input)).toBe('FAILED');
      expect(task.error.code, JSON.stringify(input)).toBe(code);
      expect(task.error.message.length).toBeGreaterThan(10);
      // The origin learns nothing of the worker's file system it did not name itself.
      expect(task.error.message.replace(input.cwd, '')).not.toContain(machine);
    }
  });

  it('reports a successful command whose output is larger than the body limit, cut to fit, and runs it once', async () => {
    const created = await createTask(hub.tokens.claw, 'big output', {
      argv: ['node', 'big.js'],
      cwd: project,
    });
    const task = await settled(created.task.id);
    expect(task.state).toBe('COMPLETED');
    expect(task.result.truncated).toBe(true);
    expect(task.result.stdout).toMatch(/characters cut to fit the hub's result limit/);
    expect(task.result.stdout.startsWith('BEGIN')).toBe(true);
    expect(task.result.stdout.endsWith('END')).toBe(true);
    expect(readFileSync(join(project, 'big-runs'), 'utf8')).toBe('x');
  });

  it('reports output holding a NUL, and a failure of a command line of thousands of characters, instead of losing them', async () => {
    const nul = await settled(
      (await createTask(hub.tokens.claw, 'nul', { argv: ['node', 'nul.js'], cwd: project })).task
        .id,
    );
    expect(nul.state).toBe('COMPLETED');
    expect(nul.result.stdout).toBe('before\u2400after\n');
    const long = ['node', 'fails.js', 'x'.repeat(5_000)];
    const failed = await settled(
      (await createTask(hub.tokens.claw, 'long', { argv: long, cwd: project })).task.id,
    );
    expect(failed.state).toBe('FAILED');
    expect(failed.error.code).toBe('exit_status');
    expect(failed.error.message).toMatch(/^node fails\.js x{400,}… exited with 3: no/);
    // What it wrote on stdout too (a failing test run says why there).
    expect(failed.error.message).toMatch(
      /\n--- stdout \(its end\) ---\n1 test failed: expected 2, got 3\n$/,
    );
  });

  it('holds a command that only a code-running entry (node ...) allows for a human, outside the sandbox', async () => {
    const asked = await createTask(hub.tokens.claw, 'node with free arguments', {
      argv: ['node', '--stack-size=999', 'check.js'],
      cwd: project,
    });
    await waitUntil(
      async () => (await taskState(asked.task.id)).state === 'AUTH_REQUIRED',
      'the worker to ask for approval',
    );
    const task = await taskState(asked.task.id);
    expect(task.approval.request).toMatchObject({
      argv: ['node', '--stack-size=999', 'check.js'],
      because: 'runs_code',
    });
    expect(task.approval.request.because).toBe('runs_code');
    await call(hub.url, 'POST', `/api/tasks/${asked.task.id}/deny`, {
      token: hub.adminToken ?? '',
      body: { team: 'acme' },
    });
    expect((await taskState(asked.task.id)).state).toBe('REJECTED');
  });

  it('holds a command outside the allow-list, or from an origin it does not trust, for a human: approve runs exactly it, deny rejects it', async () => {
    const asked = await createTask(hub.tokens.claw, 'list the project', {
      argv: ['ls', '-a'],
      cwd: project,
    });
    let task: any;
    await waitUntil(async () => {
      task = await taskState(asked.task.id);
      return task.state === 'AUTH_REQUIRED';
    }, 'the worker to ask for approval');
    expect(task.approval).toMatchObject({
      status: 'pending',
      requestedBy: 'claude-code',
      request: { argv: ['ls', '-a'], cwd: project, because: 'not_allowed' },
    });
    // The reported bug: OpenClaw's token (the origin, an agent) approving its own request.
    const selfApproved = await call(hub.url, 'POST', `/api/tasks/${asked.task.id}/approve`, {
      token: hub.tokens.claw,
      body: {},
    });
    expect(selfApproved.status).toBe(403);
    expect(selfApproved.body.error.details).toMatchObject({
      reason: 'approver_required',
      runtime: 'openclaw',
    });
    // An agent's shell with the worker's token: the CLI needs a terminal, and the hub refuses
    // Claude Code's token anyway.
    const agentEnv = { CTXBUS_URL: hub.url, CTXBUS_TOKEN: hub.tokens.code };
    const shown = await runCli(['task', asked.task.id], { env: agentEnv });
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain('command: ["ls","-a"]');
    expect((await runCli(['approve', asked.task.id], { env: agentEnv })).code).toBe(2);
    expect((await taskState(asked.task.id)).state).toBe('AUTH_REQUIRED');
    // A person approves through the CLI at a terminal, with the approver token (runtime cli).
    const env = { CTXBUS_URL: hub.url, CTXBUS_APPROVER_TOKEN: hub.tokens.cli };
    const approved = await runCliInTerminal(['approve', asked.task.id, '--note', 'fine'], {
      env,
      prompt: 'characters of the digest',
      answer: (output) => /digest: +([0-9a-f]{64})/.exec(output)?.[1]?.slice(0, 6) ?? '',
    });
    expect(approved.code, approved.stdout).toBe(0);
    const done = await settled(asked.task.id);
    expect(done.state).toBe('COMPLETED');
    expect(done.result.stdout).toContain('check.js');
    expect(done.approval).toMatchObject({ status: 'approved', decidedBy: 'cli' });

    // An origin neither file declares (the router asks for approval, and this worker does not
    // trust it): held too, and a deny rejects it.
    const untrusted = await createTask(hub.tokens.stranger, 'from a stranger', {
      argv: ['node', 'check.js'],
      cwd: project,
    });
    await waitUntil(
      async () => (await taskState(untrusted.task.id)).state === 'AUTH_REQUIRED',
      'the untrusted origin to need approval',
    );
    expect((await taskState(untrusted.task.id)).approval.request.because).toBe('untrusted_origin');
    const denied = await runCli(['deny', untrusted.task.id], { env });
    expect(denied.code, denied.stderr).toBe(0);
    const rejected = await taskState(untrusted.task.id);
    expect(rejected).toMatchObject({
      state: 'REJECTED',
      error: { code: 'approval_denied' },
      approval: { status: 'denied' },
    });
    // Answered once: a second answer is refused.
    const twice = await runCli(['deny', untrusted.task.id], { env });
    expect(twice.code).toBe(5);
  });

  it('keeps a task while no worker is up and runs it when one comes; a worker killed after it started the command ends the task worker_lost, never running it twice', async () => {
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
    await waitUntil(() => existsSync(join(project, 'started')), 'the first run to start', {});
    const running = await taskState(queued.task.id);
    expect(running.state).toBe('WORKING');
    expect(running.lease.startedAt).toEqual(expect.any(String));
    doomed.child.kill('SIGKILL');
    await doomed.done;

    // Another worker is up when the lease runs out: it is not given the task.
    startWorker('w-next', 3);
    const task = await settled(queued.task.id);
    expect(task).toMatchObject({ state: 'FAILED', attempts: 1, error: { code: 'worker_lost' } });
    expect(task.error.message).toContain('may or may not have run');
    expect((await taskHistory(task.id)).at(-1)).toMatchObject({
      from: 'WORKING',
      to: 'FAILED',
      by: 'hub',
    });
    // The next task of the queue runs on w-next, after the failed one: once.js ran once.
    const later = await createTask(hub.tokens.claw, 'after the lost one', {
      argv: ['node', 'check.js'],
      cwd: project,
    });
    expect((await settled(later.task.id)).state).toBe('COMPLETED');
    expect(readFileSync(join(project, 'once-runs'), 'utf8')).toBe('x');
  });

  it('requeues a task whose worker died before it started the command, and runs it once', async () => {
    for (const worker of workers) worker.child.kill('SIGTERM');
    await Promise.all(workers.map((worker) => worker.done));
    await waitUntil(async () => (await workersOnline()) === 0, 'the workers to leave');
    const queued = await createTask(hub.tokens.claw, 'claimed by a worker that died', {
      argv: ['node', 'check.js'],
      cwd: project,
    });
    // A worker of the same runtime claims it and dies before it starts anything (no start).
    const claimed = await call(hub.url, 'POST', '/api/tasks/claim', {
      token: hub.tokens.code,
      body: { workerId: 'w-died-early', leaseMs: 1_000 },
    });
    expect(claimed.body.task).toMatchObject({ id: queued.task.id, lease: { startedAt: null } });
    startWorker('w-after', 3);
    const task = await settled(queued.task.id);
    expect(task).toMatchObject({ state: 'COMPLETED', attempts: 2 });
    expect(task.result.stdout).toContain('checked');
    const history = await taskHistory(task.id);
    expect(history.map((event) => event.to)).toEqual([
      'SUBMITTED',
      'WORKING',
      'SUBMITTED',
      'WORKING',
      'COMPLETED',
    ]);
    expect(history[2]?.note).toContain('before the command started; requeued');
  });
});

describe('approval requests nobody answers', () => {
  it('are a deny once --approval-ttl has passed', async () => {
    const quickDir = tempDir('ctxbus-approval-ttl-');
    writeFileSync(
      join(quickDir, 'capabilities.yaml'),
      readFileSync(join(hubDir, 'capabilities.yaml')),
    );
    const quick = await startInProcessServe({ dataDir: quickDir, args: ['--approval-ttl', '2s'] });
    try {
      const token = (runtime: string) => runtimeToken(quick, 'acme', runtime);
      const code = await token('claude-code');
      const created = await call(quick.url, 'POST', '/api/tasks', {
        token: await token('openclaw'),
        body: {
          title: 'nobody looks',
          requiredCapabilities: ['code_execution'],
          input: { argv: ['ls'], cwd: '/tmp' },
        },
      });
      const claimed = await call(quick.url, 'POST', '/api/tasks/claim', {
        token: code,
        body: { workerId: 'w' },
      });
      expect(claimed.body.task?.id).toBe(created.body.task.id);
      const asked = await call(
        quick.url,
        'POST',
        `/api/tasks/${created.body.task.id}/approval-request`,
        {
          token: code,
          body: {
            token: claimed.body.task.lease.token,
            request: { argv: ['ls'], cwd: '/tmp', scriptHash: null, because: 'not_allowed' },
          },
        },
      );
      expect(asked.status, JSON.stringify(asked.body)).toBe(200);
      expect(asked.body.task.state).toBe('AUTH_REQUIRED');
      let task: any;
      await waitUntil(async () => {
        task = (await call(quick.url, 'GET', `/api/tasks/${created.body.task.id}`, { token: code }))
          .body.task;
        return task.state !== 'AUTH_REQUIRED';
      }, 'the unanswered request to lapse');
      expect(task).toMatchObject({
        state: 'REJECTED',
        error: { code: 'approval_expired' },
        approval: { status: 'expired' },
      });
    } finally {
      await quick.stop();
    }
  });
});

describe('a task waiting for an offline worker', () => {
  it('survives a hub restart and runs when a worker comes up', async () => {
    const dataDir = tempDir('ctxbus-worker-restart-');
    writeFileSync(
      join(dataDir, 'capabilities.yaml'),
      readFileSync(join(hubDir, 'capabilities.yaml')),
    );
    const first = await startHubProcess({ dataDir });
    const token = (runtime: string) => runtimeToken(first, 'acme', runtime);
    const claw = await token('openclaw');
    const code = await token('claude-code');
    const created = await call(first.url, 'POST', '/api/tasks', {
      token: claw,
      body: {
        title: 'after the restart',
        requiredCapabilities: ['code_execution'],
        input: { argv: ['node', 'check.js'], cwd: project },
      },
    });
    expect(created.body.routing.kind).toBe('queue');
    expect(await first.stop()).toBe(0);

    const second = await startHubProcess({ dataDir });
    try {
      const worker = spawnCli(['worker', '--capabilities', policyFile, '--id', 'w-after'], {
        env: { CTXBUS_URL: second.url, CTXBUS_TOKEN: code },
      });
      workers.push(worker);
      let task: any;
      await waitUntil(async () => {
        task = (
          await call(second.url, 'GET', `/api/tasks/${created.body.task.id}`, { token: claw })
        ).body.task;
        return task.state === 'COMPLETED';
      }, 'the task queued before the restart to run');
      expect(task.result.stdout).toContain('checked');
      worker.child.kill('SIGTERM');
      await worker.done;
    } finally {
      await second.stop();
    }
  });
});

/**
 * A loopback proxy in front of a hub that can be taken "down": while down, requests whose path
 * matches are answered by a reset connection (the hub unreachable), and counted.
 */
async function outageProxy(target: string, matches: (path: string) => boolean) {
  const state = { down: false, refused: 0 };
  const server = createServer((incoming, outgoing) => {
    if (state.down && matches(incoming.url ?? '')) {
      state.refused += 1;
      incoming.socket.destroy();
      return;
    }
    const upstream = httpRequest(
      new URL(incoming.url ?? '/', target),
      { method: incoming.method, headers: incoming.headers },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    upstream.on('error', () => outgoing.destroy());
    incoming.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    state,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A directory whose check.js counts its runs in `runs`, then waits for a file `go`. */
function gatedCheck(name: string): string {
  const work = join(root, name);
  mkdirSync(work, { recursive: true });
  writeFileSync(
    join(work, 'check.js'),
    "const fs = require('node:fs'); fs.appendFileSync('runs', 'x'); const t = setInterval(() => { if (fs.existsSync('go')) { clearInterval(t); console.log('done'); } }, 20);\n",
  );
  return work;
}

/** Creates a task running `node check.js` in `work`. */
function createCheck(url: string, token: string, title: string, work: string) {
  return call(url, 'POST', '/api/tasks', {
    token,
    body: {
      title,
      requiredCapabilities: ['code_execution'],
      input: { argv: ['node', 'check.js'], cwd: work },
    },
  });
}

describe('a result the hub cannot take for a moment', () => {
  it('is sent again with the same fencing token until the hub takes it: the command runs once', async () => {
    const dir = tempDir('ctxbus-worker-outage-');
    writeFileSync(join(dir, 'capabilities.yaml'), readFileSync(join(hubDir, 'capabilities.yaml')));
    const outage = await startInProcessServe({ dataDir: dir });
    const proxy = await outageProxy(outage.url, (path) => path.endsWith('/complete'));
    // The test takes the hub "down" while the command waits.
    const work = gatedCheck('outage');
    let worker: CliRun | undefined;
    try {
      const code = await runtimeToken(outage, 'acme', 'claude-code');
      const claw = await runtimeToken(outage, 'acme', 'openclaw');
      worker = spawnCli(
        ['worker', '--capabilities', policyFile, '--id', 'behind-proxy', '--lease', '60'],
        { env: { CTXBUS_URL: proxy.url, CTXBUS_TOKEN: code } },
      );
      const created = await createCheck(outage.url, claw, 'finish while the hub is away', work);
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const id = created.body.task.id as string;
      await waitUntil(() => existsSync(join(work, 'runs')), 'the command to start');
      proxy.state.down = true;
      writeFileSync(join(work, 'go'), '');
      await waitUntil(() => proxy.state.refused >= 2, 'the worker to try to report, twice');
      proxy.state.down = false;
      await waitUntil(
        async () =>
          (await call(outage.url, 'GET', `/api/tasks/${id}`, { token: claw })).body.task.state ===
          'COMPLETED',
        'the result to arrive once the hub is back',
      );
      const task = (await call(outage.url, 'GET', `/api/tasks/${id}`, { token: claw })).body.task;
      expect(task.result.stdout).toBe('done\n');
      expect(task.attempts).toBe(1);
      expect(readFileSync(join(work, 'runs'), 'utf8')).toBe('x');
    } finally {
      worker?.child.kill('SIGKILL');
      await proxy.close();
      await outage.stop();
    }
  });
});

describe('a hub killed while the worker has a result to report', () => {
  it('gets the result once it is back on the same store and port: the command ran once', async () => {
    const dir = tempDir('ctxbus-worker-hub-kill-');
    writeFileSync(join(dir, 'capabilities.yaml'), readFileSync(join(hubDir, 'capabilities.yaml')));
    let hub = await startHubProcess({ dataDir: dir });
    const port = new URL(hub.url).port;
    // The test kills the hub while the command waits.
    const work = gatedCheck('hub-kill');
    let worker: CliRun | undefined;
    try {
      const code = await runtimeToken(hub, 'acme', 'claude-code');
      const claw = await runtimeToken(hub, 'acme', 'openclaw');
      worker = spawnCli(
        ['worker', '--capabilities', policyFile, '--id', 'across-a-crash', '--lease', '60'],
        { env: { CTXBUS_URL: hub.url, CTXBUS_TOKEN: code } },
      );
      let log = '';
      worker.child.stderr?.on('data', (chunk: Buffer) => {
        log += chunk.toString();
      });
      const created = await createCheck(hub.url, claw, 'finish while the hub is dead', work);
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const id = created.body.task.id as string;
      await waitUntil(() => existsSync(join(work, 'runs')), 'the command to start');
      await hub.kill();
      writeFileSync(join(work, 'go'), '');
      await waitUntil(
        () => log.includes('could not report the result yet'),
        'the worker to try to report to the dead hub',
      );
      // Each try is one short log line: the hub's absence by its code and words, no stack.
      const tries = log.split('\n').filter((line) => line.includes('could not report the result'));
      for (const line of tries) {
        expect(JSON.parse(line).err, line).toEqual({
          type: 'CtxbusError',
          code: 'unavailable',
          message: expect.stringMatching(/^cannot reach the ctxbus hub at /),
        });
      }
      hub = await startHubProcess({ dataDir: dir, args: ['--port', port] });
      await waitUntil(
        async () =>
          (await call(hub.url, 'GET', `/api/tasks/${id}`, { token: claw })).body.task.state ===
          'COMPLETED',
        'the result to arrive once the hub is back',
      );
      const task = (await call(hub.url, 'GET', `/api/tasks/${id}`, { token: claw })).body.task;
      expect(task.result.stdout).toBe('done\n');
      expect(task.attempts).toBe(1);
      expect(readFileSync(join(work, 'runs'), 'utf8')).toBe('x');
    } finally {
      worker?.child.kill('SIGKILL');
      await hub.stop();
    }
  });
});
