import { existsSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Task } from '@ctxbus/core';
import { silentLogger } from '@ctxbus/core/light';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { NODE, tempDir, waitUntil } from '../test-support.js';
import { TaskWorker } from './task-worker.js';
import { claimedTask, quietHub, workerMatrix } from './worker-test-support.js';

// The worker's progress posts, with the interval timers turned by the test (the command is a
// real process): none for output alone, the first once a second has passed, none while the
// output has not changed, and the result at the end.

afterEach(() => {
  vi.useRealTimers();
});

/** The hub side, recording what the worker sent (the command runs for real). */
function recordingHub() {
  const progress: string[] = [];
  const completed: unknown[] = [];
  const hub = quietHub({
    completeTask: async (_id, body) => {
      completed.push(body.result);
      return {} as Task;
    },
    taskProgress: async (_id, body) => {
      progress.push(body.output);
    },
  });
  return { hub, progress, completed };
}

describe('TaskWorker progress posts', () => {
  it('posts none for output alone, then the tail once a second while it changes', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const root = tempDir();
    // Prints a step, says so in a file, waits for the next file; three steps.
    writeFileSync(
      join(root, 'steps.js'),
      [
        "const fs = require('node:fs');",
        'let step = 1;',
        "const say = () => { console.log('step ' + step); fs.writeFileSync('said-' + step, ''); };",
        'say();',
        "const timer = setInterval(() => { if (fs.existsSync('go-' + step)) { step += 1; if (step > 3) { clearInterval(timer); return; } say(); } }, 20);",
      ].join('\n'),
    );
    const { hub, progress, completed } = recordingHub();
    const worker = new TaskWorker({
      hub,
      workerId: 'w1',
      matrix: workerMatrix(['node steps.js']),
      roots: [root],
      logger: silentLogger,
      policy: { childPath: dirname(NODE) },
    });
    const done = worker.process(claimedTask(root, ['node', 'steps.js']));
    await waitUntil(() => existsSync(join(root, 'said-1')), 'the first step');
    // Its output may have arrived: nothing is posted before the first second has passed.
    expect(progress).toEqual([]);
    await waitUntil(() => {
      vi.advanceTimersByTime(1_000);
      return progress.length === 1;
    }, 'the first progress post');
    expect(progress[0]).toBe('step 1\n');
    // No new output: another second passes without a post.
    vi.advanceTimersByTime(1_000);
    expect(progress).toHaveLength(1);
    writeFileSync(join(root, 'go-1'), '');
    await waitUntil(() => existsSync(join(root, 'said-2')), 'the second step');
    await waitUntil(() => {
      vi.advanceTimersByTime(1_000);
      return progress.length === 2;
    }, 'the second progress post');
    expect(progress[1]).toBe('step 1\nstep 2\n');
    writeFileSync(join(root, 'go-2'), '');
    writeFileSync(join(root, 'go-3'), '');
    await done;
    expect(completed).toEqual([
      expect.objectContaining({ exitCode: 0, stdout: 'step 1\nstep 2\nstep 3\n' }),
    ]);
  });
});
