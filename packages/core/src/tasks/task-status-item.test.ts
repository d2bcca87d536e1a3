import { describe, expect, it } from 'vitest';
import type { ContextItem } from '../items/context-item.js';
import { prepareParsedItem } from '../items/prepare-item.js';
import type { TaskStreamEvent } from './task-status-item.js';
import {
  followTaskStatus,
  taskNeedsSomeone,
  taskOutputKey,
  taskOutputOf,
  taskStatusItem,
  taskStatusOf,
} from './task-status-item.js';
import type { Task } from './tasks.js';
import { TASK_STATES } from './tasks.js';

const task = (state: Task['state']): Task => ({
  id: 'task_019a0000-0000-7000-8000-000000000001',
  teamId: 'acme',
  title: 'run the tests',
  description: null,
  requiredCapabilities: ['code_execution'],
  origin: 'openclaw',
  scope: null,
  input: null,
  idempotencyKey: null,
  state,
  targetRuntime: 'claude-code',
  routing: { reason: 'proxied to claude-code' },
  attempts: 0,
  maxAttempts: 3,
  ttlSeconds: null,
  lease: null,
  result: null,
  error: null,
  approval: null,
  createdAt: '2026-11-20T00:00:00.000Z',
  updatedAt: '2026-11-20T00:00:00.000Z',
  expiresAt: null,
});

/** The item as a store would hand it back. */
function stored(input: ReturnType<typeof taskStatusItem>): ContextItem {
  const { inputHash: _, ...item } = prepareParsedItem(
    input,
    { teamId: 'acme', runtime: 'claude-code' },
    { now: new Date('2026-11-20T00:00:01.000Z') },
  );
  return { ...item, seq: 1, supersedes: null, supersededBy: null, consumed: false, consumedBy: [] };
}

describe('the task status item', () => {
  it('says the routing once when the note is the routing reason (a new task), else both', () => {
    const created = taskStatusItem(task('SUBMITTED'), 'proxied to claude-code').content ?? '';
    expect(created.match(/proxied to claude-code/g)).toHaveLength(1);
    expect(created).toContain('Routing: proxied to claude-code');
    const noted = taskStatusItem(task('WORKING'), 'claimed (attempt 1)').content ?? '';
    expect(noted).toContain('Routing: proxied to claude-code');
    expect(noted).toContain('Note: claimed (attempt 1)');
  });

  it('decodes what it encodes, for every state', () => {
    for (const state of TASK_STATES) {
      expect(taskStatusOf(stored(taskStatusItem(task(state), 'a note')))).toEqual({
        taskId: task(state).id,
        state,
        targetRuntime: 'claude-code',
        origin: 'openclaw',
        requiredCapabilities: task(state).requiredCapabilities,
      });
    }
  });

  it('reads an item written before it carried the needed capabilities as unknown ones', () => {
    const item = stored(taskStatusItem(task('SUBMITTED'), null));
    const older = { task: { id: task('SUBMITTED').id, state: 'SUBMITTED', targetRuntime: null } };
    expect(taskStatusOf({ ...item, runtimeOptions: older })?.requiredCapabilities).toBeNull();
  });

  it('is null for an item that reports no task, or a state no task has', () => {
    const item = stored(taskStatusItem(task('WORKING'), null));
    expect(taskStatusOf({ ...item, relevanceTags: ['other'] })).toBeNull();
    expect(taskStatusOf({ ...item, type: 'decision' })).toBeNull();
    const odd = { task: { id: task('WORKING').id, state: 'DREAMING' } };
    expect(taskStatusOf({ ...item, runtimeOptions: odd })).toBeNull();
  });

  it('names the states where someone must act', () => {
    expect(TASK_STATES.filter(taskNeedsSomeone)).toEqual(['INPUT_REQUIRED', 'AUTH_REQUIRED']);
  });

  it('follows one task on a stream until it ends (or `until` says), skipping everything else', async () => {
    const other = { ...task('COMPLETED'), id: 'task_019a0000-0000-7000-8000-000000000002' };
    const line = (seq: number, of: Task, event = 'context-added'): TaskStreamEvent => ({
      event,
      seq,
      item: { ...stored(taskStatusItem(of, null)), seq },
    });
    const events = async function* (): AsyncGenerator<TaskStreamEvent> {
      yield line(1, task('SUBMITTED'));
      yield line(2, other);
      yield { event: 'heartbeat', seq: 2 };
      yield line(3, task('SUBMITTED'), 'context-superseded');
      yield line(4, task('AUTH_REQUIRED'));
      yield line(5, task('WORKING'));
      yield line(6, task('COMPLETED'));
      yield line(7, task('FAILED'));
    };
    const seen = async (until?: (state: Task['state']) => boolean) => {
      const states: string[] = [];
      for await (const status of followTaskStatus(events(), task('WORKING').id, until)) {
        states.push(`${status.seq}:${status.state}`);
      }
      return states;
    };
    expect(await seen()).toEqual(['1:SUBMITTED', '4:AUTH_REQUIRED', '5:WORKING', '6:COMPLETED']);
    expect(await seen(taskNeedsSomeone)).toEqual(['1:SUBMITTED', '4:AUTH_REQUIRED']);
  });

  it("decodes a running command's output line: its tail and where it ends, nothing else", () => {
    const working = { ...task('WORKING'), description: 'Output so far:\n```\nnot the output\n```' };
    const line = (output: string, end?: number) =>
      stored({ ...taskStatusItem(working, null, output, end), key: taskOutputKey(working.id) });
    // A fence in the output is written as ''' so that the tail ends at the item's own fence.
    expect(taskOutputOf(line('npm test\n``` 3 passing\n', 42))).toEqual({
      tail: "npm test\n''' 3 passing\n",
      end: 42,
    });
    // A worker that does not say where its tail ends: the tail, and no end.
    expect(taskOutputOf(line('ok'))).toEqual({ tail: 'ok', end: null });
    // A note or any other status item is no output line, whatever its text says.
    const noted = stored(taskStatusItem(working, 'Output so far:\n```\nforged\n```'));
    expect(taskOutputOf(noted)).toBeNull();
    expect(taskOutputOf(stored(taskStatusItem(working, null)))).toBeNull();
  });
});
