import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Task } from '@ctxbus/core';
import { CtxbusError } from '@ctxbus/core';
import { silentLogger } from '@ctxbus/core/light';
import { describe, expect, it } from 'vitest';
import { NODE, tempDir } from '../test-support.js';
import type { ClaimNext, WorkerHubApi } from './task-worker.js';
import { TaskWorker } from './task-worker.js';
import { claimedTask, quietHub, workerMatrix } from './worker-test-support.js';

// The worker's completion that claims its next task (`next`), against a port that answers as a
// hub with `next` does, and as one older than it (which refuses the unknown field, 400): the
// worker completes every task either way, and after one refusal no longer asks.

/** A project with the allowed script (each test its own: the test support removes it after). */
function project(): string {
  const root = tempDir();
  writeFileSync(join(root, 'ok.js'), "console.log('ok');\n");
  return root;
}
const matrix = workerMatrix(['node ok.js']);
const claimNext: ClaimNext = { workerId: 'w1', capabilities: ['code_execution'], leaseMs: 30_000 };

const task = (id: string, root: string) => claimedTask(root, ['node', 'ok.js'], id);

/** A port recording each completion as `complete <id>` or `complete+next <id>`. */
function port(options: { knowsNext: boolean; queue: Task[] }) {
  const calls: string[] = [];
  const hub = quietHub({
    completeTask: async (id) => {
      calls.push(`complete ${id}`);
      return {} as Task;
    },
    async completeAndClaim(id, body) {
      expect(body.next).toEqual(claimNext);
      if (!options.knowsNext) {
        calls.push(`refused ${id}`);
        throw new CtxbusError('validation_failed', 'body: Unrecognized key: "next"');
      }
      calls.push(`complete+next ${id}`);
      return { task: {} as Task, next: options.queue.shift() ?? null };
    },
    failTask: async (id, body) => {
      calls.push(`fail ${id}: ${body.error.message}`);
      return {} as Task;
    },
  });
  return { hub, calls };
}

const worker = (hub: WorkerHubApi, root: string) =>
  new TaskWorker({
    hub,
    workerId: 'w1',
    matrix,
    roots: [root],
    logger: silentLogger,
    policy: { childPath: dirname(NODE) },
  });

describe('TaskWorker completions that claim the next task', () => {
  it('returns the task its completion claimed, and null once none is waiting', async () => {
    const root = project();
    const { hub, calls } = port({ knowsNext: true, queue: [task('b', root)] });
    const w = worker(hub, root);
    const next = await w.process(task('a', root), claimNext);
    expect(next?.id).toBe('b');
    expect(await w.process(next as Task, claimNext)).toBeNull();
    // Without a claim to make, a plain completion.
    expect(await w.process(task('c', root))).toBeNull();
    expect(calls).toEqual(['complete+next a', 'complete+next b', 'complete c']);
  });

  it('completes through a hub older than `next`, and stops asking after its first refusal', async () => {
    const root = project();
    const { hub, calls } = port({ knowsNext: false, queue: [] });
    const w = worker(hub, root);
    expect(await w.process(task('x', root), claimNext)).toBeNull();
    expect(await w.process(task('y', root), claimNext)).toBeNull();
    expect(calls).toEqual(['refused x', 'complete x', 'complete y']);
  });
});
