import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Task } from '@ctxbus/core';
import { CtxbusError, silentLogger } from '@ctxbus/core/light';
import { describe, expect, it } from 'vitest';
import { NODE, tempDir } from '../test-support.js';
import { TaskWorker } from './task-worker.js';
import { claimedTask, quietHub, workerMatrix } from './worker-test-support.js';

// The lease while the command runs, against a hub port that keeps the hub's rule (a renewal
// that comes after the lease ran out is refused as stale) and is away for a while: away for
// less than the lease, but across two of the worker's regular renewals (at a third of the
// lease each). The command is a real process, which ends once a renewal after the outage got
// through.

const LEASE_MS = 9_000;
/** Away from the start for 70% of the lease: the renewals at 1/3 and 2/3 both fall in it. */
const AWAY_MS = LEASE_MS * 0.7;

describe('TaskWorker lease renewals', () => {
  it('a hub away for less than the lease (across two renewals) costs the running command nothing', async () => {
    const root = tempDir();
    const back = join(root, 'renewed-after-outage');
    writeFileSync(
      join(root, 'wait.js'),
      `const fs = require('node:fs'); const timer = setInterval(() => { if (fs.existsSync(${JSON.stringify(back)})) { clearInterval(timer); console.log('done'); } }, 50);`,
    );
    const started = Date.now();
    let leaseEndsAt = started + LEASE_MS;
    const attempts: { at: number; outcome: string }[] = [];
    const completed: unknown[] = [];
    const hub = quietHub({
      renewTask: async (_id, body) => {
        const now = Date.now();
        if (now < started + AWAY_MS) {
          attempts.push({ at: now - started, outcome: 'away' });
          throw new CtxbusError('unavailable', 'cannot reach the ctxbus hub (connection refused)');
        }
        if (now >= leaseEndsAt) {
          attempts.push({ at: now - started, outcome: 'stale' });
          throw new CtxbusError('conflict', 'the lease ran out');
        }
        attempts.push({ at: now - started, outcome: 'renewed' });
        leaseEndsAt = now + body.leaseMs;
        writeFileSync(back, '');
        return {} as Task;
      },
      completeTask: async (_id, body) => {
        completed.push(body.result);
        return {} as Task;
      },
    });
    const worker = new TaskWorker({
      hub,
      workerId: 'w1',
      matrix: workerMatrix(['node wait.js']),
      roots: [root],
      logger: silentLogger,
      leaseMs: LEASE_MS,
      policy: { childPath: dirname(NODE) },
    });
    await worker.process(claimedTask(root, ['node', 'wait.js']));
    expect(attempts.filter((attempt) => attempt.outcome === 'away').length).toBeGreaterThanOrEqual(
      2,
    );
    expect(attempts.map((attempt) => attempt.outcome)).not.toContain('stale');
    expect(attempts.at(-1)?.outcome, JSON.stringify(attempts)).toBe('renewed');
    expect(completed).toEqual([expect.objectContaining({ exitCode: 0, stdout: 'done\n' })]);
  }, 30_000);
});
