import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ExecutionPolicy } from './prepare-execution.js';
import { executePlan, prepareExecution } from './prepare-execution.js';
import { detectPidNamespace, detectSandbox } from './sandbox.js';
import { NODE, processesTagged, tempDir, waitUntil } from './test-support.js';

// A command must not outlive its worker, nor its timeout (hardening 6): the command below
// starts a background process in a session of its own (`setsid`, out of the command's process
// group), which writes a file when it is up. Real processes, real bubblewrap.

const required = process.env.CTXBUS_REQUIRE_BWRAP === '1';
const pidNamespace = await detectPidNamespace();
const sandbox = await detectSandbox();
const nsIt = pidNamespace.available || required ? it : it.skip;
const sandboxIt = sandbox.available || required ? it : it.skip;
const because = (status: { available: boolean; reason?: string }) =>
  status.available ? '' : ` (skipped: ${status.reason})`;

const SPAWN_BACKGROUND = [
  "const { spawn } = require('node:child_process');",
  'const tag = process.argv[2];',
  "const up = \"require('fs').writeFileSync('background-up', ''); setInterval(() => {}, 1000)\";",
  "spawn('/usr/bin/setsid', [process.execPath, '-e', up, tag], { stdio: 'ignore' });",
  'setInterval(() => {}, 1000);',
].join('\n');

// What the worker does with a task, in a process of its own that the test can kill -9.
const WORKER = [
  "import { executePlan, prepareExecution } from '@ctxbus/exec-under-test';",
  'const [request, policy] = JSON.parse(process.argv[2]);',
  'const prepared = await prepareExecution({ request, policy });',
  "if (!prepared.ok) { process.stdout.write(JSON.stringify(prepared) + '\\n'); process.exit(3); }",
  "process.stdout.write('running\\n');",
  'await executePlan(prepared.plan, { timeoutMs: 3_600_000, inactivityMs: 3_600_000, maxOutputBytes: 65536 });',
].join('\n');

const strays: number[] = [];
afterEach(() => {
  // What a failed test leaves behind (a worker, or what the controls show outliving one).
  for (const pid of strays.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone.
    }
  }
});

function project(extra: Partial<ExecutionPolicy> = {}) {
  const workdir = tempDir();
  writeFileSync(join(workdir, 'spawn-background.js'), SPAWN_BACKGROUND);
  const tag = `ctxbus-lifetime-${randomUUID()}`;
  const policy: ExecutionPolicy = {
    allow: [`node spawn-background.js ${tag}`],
    roots: [workdir],
    trustedOrigin: true,
    childPath: `${dirname(NODE)}:/usr/bin:/bin`,
    sourceEnv: {},
    ...extra,
  };
  const request = { taskId: 'task-1', argv: ['node', 'spawn-background.js', tag], cwd: workdir };
  return { workdir, tag, policy, request };
}

/** Starts the worker process on a task and waits until the background process is up. */
async function workerWithBackground(sandboxed: boolean, extra: Partial<ExecutionPolicy> = {}) {
  const { workdir, tag, policy, request } = project(extra);
  const script = join(tempDir(), 'worker.mjs');
  const dist = new URL('../dist/index.js', import.meta.url).href;
  writeFileSync(script, WORKER.replace('@ctxbus/exec-under-test', dist));
  const worker = spawn(NODE, [script, JSON.stringify([{ ...request, sandboxed }, policy])], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (worker.pid !== undefined) strays.push(worker.pid);
  let output = '';
  worker.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise((resolve) => worker.once('exit', resolve));
  // Its line too: on a loaded machine the file can be seen before the pipe's data is read.
  await waitUntil(
    () =>
      (existsSync(join(workdir, 'background-up')) && output.includes('running')) ||
      worker.exitCode !== null,
    `the command's background process to start (worker said: ${output})`,
  );
  expect(output).toContain('running');
  // Both carry the tag (so do bwrap's own processes, when there are any).
  await waitUntil(() => processesTagged(tag).length >= 2, 'the command and its background');
  return { worker, tag, exited };
}

describe('a command ends with its worker and its timeout, its own sessions included', () => {
  nsIt(
    `unsandboxed: kill -9 of the worker ends the command and a setsid background process${because(pidNamespace)}`,
    async () => {
      const { worker, tag, exited } = await workerWithBackground(false);
      worker.kill('SIGKILL');
      await exited;
      await waitUntil(
        () => processesTagged(tag).length === 0,
        `every process tagged ${tag} to end`,
      );
    },
  );

  sandboxIt(
    `sandboxed: kill -9 of the worker ends the command and a setsid background process${because(sandbox)}`,
    async () => {
      const { worker, tag, exited } = await workerWithBackground(true);
      worker.kill('SIGKILL');
      await exited;
      await waitUntil(
        () => processesTagged(tag).length === 0,
        `every process tagged ${tag} to end`,
      );
    },
  );

  it('the control: in a process group only (pidNamespace: false), both outlive a killed worker', async () => {
    const { worker, tag, exited } = await workerWithBackground(false, { pidNamespace: false });
    worker.kill('SIGKILL');
    await exited;
    const left = processesTagged(tag);
    strays.push(...left);
    expect(left).toHaveLength(2);
  });

  nsIt(
    `unsandboxed: the hard timeout ends a setsid background process too${because(pidNamespace)}`,
    async () => {
      const { workdir, tag, policy, request } = project();
      const prepared = await prepareExecution({ request, policy });
      if (!prepared.ok) throw new Error(`refused: ${prepared.reason}`);
      expect(prepared.plan.pidNamespace).not.toBeNull();
      // Long enough for the background process to start on a loaded machine; checked below.
      const run = await executePlan(prepared.plan, {
        timeoutMs: 15_000,
        inactivityMs: 3_600_000,
        maxOutputBytes: 65536,
        killGraceMs: 200,
      });
      expect(existsSync(join(workdir, 'background-up'))).toBe(true);
      expect(run).toMatchObject({ ok: true, result: { timedOut: 'hard', signal: 'SIGTERM' } });
      await waitUntil(
        () => processesTagged(tag).length === 0,
        `every process tagged ${tag} to end`,
      );
    },
  );

  nsIt(
    `unsandboxed: a cancel gives everything inside SIGTERM, then SIGKILL ends what ignores it${because(pidNamespace)}`,
    async () => {
      const { workdir, tag, policy, request } = project();
      // The command ignores SIGTERM; its setsid background process does not.
      writeFileSync(
        join(workdir, 'spawn-background.js'),
        `${SPAWN_BACKGROUND}\nprocess.on('SIGTERM', () => {});`,
      );
      const prepared = await prepareExecution({ request, policy });
      if (!prepared.ok) throw new Error(`refused: ${prepared.reason}`);
      const controller = new AbortController();
      const running = executePlan(prepared.plan, {
        timeoutMs: 3_600_000,
        inactivityMs: 3_600_000,
        maxOutputBytes: 65536,
        killGraceMs: 200,
        signal: controller.signal,
      });
      await waitUntil(() => existsSync(join(workdir, 'background-up')), 'the background process');
      controller.abort();
      const run = await running;
      expect(run).toMatchObject({ ok: true, result: { canceled: true, signal: 'SIGKILL' } });
      await waitUntil(
        () => processesTagged(tag).length === 0,
        `every process tagged ${tag} to end`,
      );
    },
  );

  nsIt(
    `unsandboxed: the command sees only its own processes, and cannot unmount its /proc to see the host's${because(pidNamespace)}`,
    async () => {
      const { workdir, policy } = project();
      const script = join(workdir, 'look.sh');
      writeFileSync(
        script,
        'umount -l /proc 2>/dev/null && echo unmounted; ls /proc | grep -c "^[0-9]" > count\n',
      );
      const prepared = await prepareExecution({
        request: { taskId: 'task-1', argv: ['sh', 'look.sh'], cwd: workdir },
        policy: { ...policy, allow: ['sh look.sh'] },
      });
      if (!prepared.ok) throw new Error(`refused: ${prepared.reason}`);
      const run = await executePlan(prepared.plan, {
        timeoutMs: 60_000,
        inactivityMs: 60_000,
        maxOutputBytes: 65536,
      });
      expect(run.ok && run.result.stdout).not.toContain('unmounted');
      // sh and ls (and, under bwrap, its init): nothing of the host's.
      expect(Number(readFileSync(join(workdir, 'count'), 'utf8'))).toBeLessThan(6);
    },
  );

  it('the control: in a process group only, the setsid background process outlives the timeout', async () => {
    const { workdir, tag, policy, request } = project({ pidNamespace: false });
    const prepared = await prepareExecution({ request, policy });
    if (!prepared.ok) throw new Error(`refused: ${prepared.reason}`);
    expect(prepared.plan.pidNamespace).toBeNull();
    const run = await executePlan(prepared.plan, {
      timeoutMs: 15_000,
      inactivityMs: 3_600_000,
      maxOutputBytes: 65536,
      killGraceMs: 200,
    });
    expect(existsSync(join(workdir, 'background-up'))).toBe(true);
    expect(run).toMatchObject({ ok: true, result: { timedOut: 'hard' } });
    const left = processesTagged(tag);
    strays.push(...left);
    expect(left).toHaveLength(1);
  });
});
