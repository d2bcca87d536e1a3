import type { CapabilitiesFile, Task } from '@ctxbus/core';
import { parseCapabilities } from '@ctxbus/core';
import type { WorkerHubApi } from './task-worker.js';

// The worker tests' fixtures: a task as a claim hands it over, the worker's own capabilities
// file allowing some commands, and a hub port for the calls a test does not watch.

/** A task claimed by worker `w1` (lease token 1, never ending) that runs `argv` in `cwd`. */
export function claimedTask(
  cwd: string,
  argv: readonly string[],
  id = 'task_019a0000-0000-7000-8000-000000000001',
): Task {
  return {
    id,
    teamId: 'acme',
    title: id,
    description: null,
    requiredCapabilities: ['code_execution'],
    origin: 'openclaw',
    scope: null,
    input: { argv: [...argv], cwd },
    idempotencyKey: null,
    state: 'WORKING',
    targetRuntime: 'claude-code',
    routing: null,
    attempts: 1,
    maxAttempts: 3,
    ttlSeconds: null,
    lease: {
      workerId: 'w1',
      runtime: 'claude-code',
      token: 1,
      expiresAt: '2999-01-01T00:00:00.000Z',
      startedAt: null,
    },
    result: null,
    error: null,
    approval: null,
    createdAt: '2026-11-20T00:00:00.000Z',
    updatedAt: '2026-11-20T00:00:00.000Z',
    expiresAt: null,
  } as Task;
}

/** Claude Code's machine: it runs code_execution natively, trusts OpenClaw, allows `allow`. */
export function workerMatrix(allow: readonly string[]): CapabilitiesFile {
  return parseCapabilities(
    [
      'version: 1',
      'runtimes:',
      '  claude-code:',
      '    description: this machine',
      '    capabilities:',
      '      code_execution: { mode: native }',
      '  openclaw:',
      '    description: the assistant',
      'remote_execution:',
      `  allow: ${JSON.stringify(allow)}`,
    ].join('\n'),
  );
}

/**
 * A hub port that takes every report and hands out no task, with `watched` for the calls a
 * test records; a failure or an approval request nobody expects throws.
 */
export function quietHub(watched: Partial<WorkerHubApi>): WorkerHubApi {
  return {
    announce: async () => ({}),
    leave: async () => {},
    claimTask: async () => null,
    renewTask: async () => ({}) as Task,
    startTask: async () => ({}) as Task,
    completeTask: async () => ({}) as Task,
    failTask: async (_id, body) => {
      throw new Error(`the task failed: ${body.error.message}`);
    },
    requestApproval: async () => {
      throw new Error('no approval expected');
    },
    taskProgress: async () => {},
    approvalKey: async () => '',
    ...watched,
  };
}
