import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { detectSandbox } from '@ctxbus/exec';
import { call, spawnCli, tempDir, waitUntil, workerPolicy } from '@ctxbus/test-kit';
import { describe, expect, it } from 'vitest';
import { useTaskHub } from './in-process-serve.ts';

// A real `ctxbus worker` runs a sandboxed task in bubblewrap with the /tmp size its
// --sandbox-tmp gives: the sandbox's private directories are memory, so each has a size. And
// the command holds no descriptor of the host's: through one, it would be out of the jail.

const required = process.env.CTXBUS_REQUIRE_BWRAP === '1';
const bwrap = await detectSandbox();
const skip = !bwrap.available && !required;
const because = bwrap.available ? '' : ` (skipped: ${bwrap.reason})`;

const hub = useTaskHub('ctxbus-worker-sandbox-hub-');

const root = tempDir('ctxbus-worker-sandbox-machine-');
const policyFile = join(root, 'capabilities.yaml');
writeFileSync(policyFile, workerPolicy(root, ['df -k /tmp', 'cat ...']));
const project = join(root, 'project');
mkdirSync(project);
writeFileSync(join(root, 'secret.txt'), 'the worker host secret\n');

type Ended = { state: string; result?: { stdout?: string; stderr?: string }; error?: unknown };

/** Creates a task for `input`, runs one worker until it ends, and returns the task. */
async function runTask(input: Record<string, unknown>, workerArgs: string[] = []) {
  const created = await call(hub.url, 'POST', '/api/tasks', {
    token: hub.tokens.claw,
    body: { title: 'a sandboxed command', requiredCapabilities: ['code_execution'], input },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const id = created.body.task.id;
  const worker = spawnCli(['worker', '--capabilities', policyFile, ...workerArgs], {
    env: { CTXBUS_URL: hub.url, CTXBUS_TOKEN: hub.tokens.code },
  });
  let task: Ended = { state: 'SUBMITTED' };
  try {
    await waitUntil(async () => {
      task = (await call(hub.url, 'GET', `/api/tasks/${id}`, { token: hub.tokens.claw })).body.task;
      return ['COMPLETED', 'FAILED', 'REJECTED'].includes(task.state);
    }, `task ${id} to end`);
  } finally {
    worker.child.kill('SIGTERM');
  }
  expect((await worker.done).code).toBe(0);
  return task;
}

describe(`ctxbus worker --sandbox-tmp${because}`, () => {
  (skip ? it.skip : it)("sizes a sandboxed task's /tmp", async () => {
    const task = await runTask({ argv: ['df', '-k', '/tmp'], cwd: root, sandboxed: true }, [
      '--id',
      'sized',
      '--sandbox-tmp',
      '24',
    ]);
    expect(task.state, JSON.stringify(task.error)).toBe('COMPLETED');
    // df's last line, second column: the file system's size in KiB.
    const size = task.result?.stdout?.trim().split('\n').at(-1)?.split(/\s+/)[1];
    expect(size).toBe(String(24 * 1024));
  });

  (skip ? it.skip : it)(
    "gives the command no descriptor of the working directory's (its parent stays out of reach)",
    async () => {
      // The worker opens the directory to bind it; were that descriptor the command's too,
      // /proc/self/fd/3/.. would be the host's parent directory, outside every bind.
      const task = await runTask({
        argv: ['cat', '/proc/self/fd/3/../secret.txt'],
        cwd: project,
        sandboxed: true,
      });
      expect(JSON.stringify(task)).not.toContain('the worker host secret');
      expect(task.state).toBe('FAILED');
    },
  );
});
