import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { detectSandbox } from '@ctxbus/exec';
import { call, spawnCli, tempDir, waitUntil, workerPolicy } from '@ctxbus/test-kit';
import { describe, expect, it } from 'vitest';
import { useTaskHub } from './in-process-serve.ts';

// A real `ctxbus worker` runs a sandboxed task in bubblewrap with the /tmp size its
// --sandbox-tmp gives: the sandbox's private directories are memory, so each has a size.

const required = process.env.CTXBUS_REQUIRE_BWRAP === '1';
const bwrap = await detectSandbox();
const skip = !bwrap.available && !required;
const because = bwrap.available ? '' : ` (skipped: ${bwrap.reason})`;

const hub = useTaskHub('ctxbus-worker-sandbox-hub-');

const root = tempDir('ctxbus-worker-sandbox-machine-');
const policyFile = join(root, 'capabilities.yaml');
writeFileSync(policyFile, workerPolicy(root, ['df -k /tmp']));

describe(`ctxbus worker --sandbox-tmp${because}`, () => {
  (skip ? it.skip : it)("sizes a sandboxed task's /tmp", async () => {
    const created = await call(hub.url, 'POST', '/api/tasks', {
      token: hub.tokens.claw,
      body: {
        title: 'how big is /tmp',
        requiredCapabilities: ['code_execution'],
        input: { argv: ['df', '-k', '/tmp'], cwd: root, sandboxed: true },
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.task.id;
    const worker = spawnCli(
      ['worker', '--capabilities', policyFile, '--id', 'sized', '--sandbox-tmp', '24'],
      { env: { CTXBUS_URL: hub.url, CTXBUS_TOKEN: hub.tokens.code } },
    );
    try {
      let task: { state: string; result?: { stdout?: string }; error?: unknown } = {
        state: 'SUBMITTED',
      };
      await waitUntil(async () => {
        task = (await call(hub.url, 'GET', `/api/tasks/${id}`, { token: hub.tokens.claw })).body
          .task;
        return ['COMPLETED', 'FAILED', 'REJECTED'].includes(task.state);
      }, `task ${id} to end`);
      expect(task.state, JSON.stringify(task.error)).toBe('COMPLETED');
      // df's last line, second column: the file system's size in KiB.
      const size = task.result?.stdout?.trim().split('\n').at(-1)?.split(/\s+/)[1];
      expect(size).toBe(String(24 * 1024));
    } finally {
      worker.child.kill('SIGTERM');
    }
    expect((await worker.done).code).toBe(0);
  });
});
