import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { call, spawnCli, tempDir, waitUntil, workerPolicy } from '@ctxbus/test-kit';
import { describe, expect, it } from 'vitest';
import { useTaskHub } from './in-process-serve.ts';

// A real `ctxbus worker` with tasks queued takes each next task with its completion (the
// `next` of POST /api/tasks/:id/complete) instead of a claim call of its own: every task runs
// once, in order.

const hub = useTaskHub('ctxbus-worker-chain-hub-');

const root = tempDir('ctxbus-worker-chain-machine-');
// Appends its argument to a file: which tasks ran, in which order, how often.
writeFileSync(
  join(root, 'mark.js'),
  "require('node:fs').appendFileSync('runs', process.argv[2] + '\\n');\n",
);
const names = ['a', 'b', 'c', 'd', 'e'];
const policyFile = join(root, 'capabilities.yaml');
writeFileSync(
  policyFile,
  workerPolicy(
    root,
    names.map((name) => `node mark.js ${name}`),
  ),
);

async function create(name: string): Promise<string> {
  const response = await call(hub.url, 'POST', '/api/tasks', {
    token: hub.tokens.claw,
    body: {
      title: `mark ${name}`,
      requiredCapabilities: ['code_execution'],
      input: { argv: ['node', 'mark.js', name], cwd: root },
    },
  });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body.task.id;
}

const state = async (id: string) =>
  (await call(hub.url, 'GET', `/api/tasks/${id}`, { token: hub.tokens.claw })).body.task.state;

describe('ctxbus worker with tasks queued', () => {
  it('takes each next task with its completion, runs each once, in order', async () => {
    const ids: string[] = [];
    for (const name of names) ids.push(await create(name));
    const worker = spawnCli(
      ['worker', '--capabilities', policyFile, '--id', 'chain', '--concurrency', '1'],
      { env: { CTXBUS_URL: hub.url, CTXBUS_TOKEN: hub.tokens.code } },
    );
    try {
      for (const id of ids) {
        await waitUntil(async () => (await state(id)) === 'COMPLETED', `task ${id} to complete`);
      }
      expect(readFileSync(join(root, 'runs'), 'utf8')).toBe(names.map((n) => `${n}\n`).join(''));
      const stats = await call(hub.url, 'GET', '/api/admin/tasks', {
        token: hub.adminToken ?? '',
      });
      // The first came with the worker's claim call; the four after it with completions.
      expect(stats.body.claims).toMatchObject({ taken: 5, takenWithCompletion: 4 });
    } finally {
      worker.child.kill('SIGTERM');
    }
    expect((await worker.done).code).toBe(0);
  });
});
