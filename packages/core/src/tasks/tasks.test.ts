import { describe, expect, it } from 'vitest';
import { CtxbusError } from '../shared/errors.js';
import {
  assertTransition,
  canTransition,
  isTerminalTaskState,
  newTaskId,
  newTaskSchema,
  staleLeaseError,
  TASK_LIMITS,
  TASK_STATES,
  TERMINAL_TASK_STATES,
  taskIdSchema,
  taskResultSchema,
} from './tasks.js';

describe('task states', () => {
  it('are A2A 1.0 wire names, four of them terminal', () => {
    expect(TASK_STATES).toEqual([
      'SUBMITTED',
      'WORKING',
      'INPUT_REQUIRED',
      'AUTH_REQUIRED',
      'COMPLETED',
      'FAILED',
      'CANCELED',
      'REJECTED',
    ]);
    expect(TASK_STATES.filter(isTerminalTaskState)).toEqual([...TERMINAL_TASK_STATES]);
  });

  it('never leave a terminal state, and enter WORKING only from SUBMITTED (a claim)', () => {
    for (const from of TASK_STATES) {
      for (const to of TASK_STATES) {
        if (isTerminalTaskState(from)) expect(canTransition(from, to)).toBe(false);
        if (to === 'WORKING') expect(canTransition(from, to)).toBe(from === 'SUBMITTED');
        if (from === to) expect(canTransition(from, to)).toBe(false);
      }
    }
    expect(canTransition('AUTH_REQUIRED', 'SUBMITTED')).toBe(true);
    expect(canTransition('WORKING', 'INPUT_REQUIRED')).toBe(true);
    expect(canTransition('INPUT_REQUIRED', 'COMPLETED')).toBe(false);
  });

  it('refuse an illegal move with a conflict that names both states', () => {
    expect(() => assertTransition('SUBMITTED', 'WORKING')).not.toThrow();
    try {
      assertTransition('COMPLETED', 'SUBMITTED', 'task_x');
      expect.fail('expected a refusal');
    } catch (error) {
      expect(CtxbusError.isInstance(error)).toBe(true);
      const refusal = error as CtxbusError;
      expect(refusal.code).toBe('conflict');
      expect(refusal.status).toBe(409);
      expect(refusal.message).toContain('COMPLETED is terminal');
      expect(refusal.details).toMatchObject({ reason: 'illegal_transition', taskId: 'task_x' });
    }
    const stale = staleLeaseError('task_y', 'token 1 is not the current token 2');
    expect([stale.code, stale.status, stale.retryable]).toEqual(['conflict', 409, false]);
    expect(stale.details).toMatchObject({ reason: 'stale_lease' });
  });
});

describe('task schemas', () => {
  it('give task ids as task_ + UUIDv7, in creation order', () => {
    const ids = [newTaskId(), newTaskId(), newTaskId()];
    for (const id of ids) expect(taskIdSchema.parse(id)).toBe(id);
    expect(ids[0]?.charAt(19)).toBe('7');
    expect([...ids].sort()).toEqual(ids);
  });

  it('accept a minimal task and refuse bad names, oversized or too deep input', () => {
    const minimal = {
      title: 'run tests',
      requiredCapabilities: ['code_execution'],
      origin: 'openclaw',
    };
    expect(newTaskSchema.parse(minimal)).toEqual(minimal);
    expect(newTaskSchema.safeParse({ ...minimal, origin: 'Open Claw' }).success).toBe(false);
    expect(newTaskSchema.safeParse({ ...minimal, requiredCapabilities: ['Code'] }).success).toBe(
      false,
    );
    expect(newTaskSchema.safeParse({ ...minimal, initialState: 'WORKING' }).success).toBe(false);
    const big = { blob: 'é'.repeat(TASK_LIMITS.inputBytes / 2) };
    expect(newTaskSchema.safeParse({ ...minimal, input: big }).success).toBe(false);
    expect(newTaskSchema.safeParse({ ...minimal, input: { blob: 'x'.repeat(1000) } }).success).toBe(
      true,
    );
    let deep: unknown = 1;
    for (let level = 0; level < 10_000; level++) deep = { deep };
    const parsed = newTaskSchema.safeParse({ ...minimal, input: deep as object });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.message).toContain('nested deeper');
    expect(taskResultSchema.safeParse(deep).success).toBe(false);
    expect(taskResultSchema.safeParse({ exitCode: 0 }).success).toBe(true);
  });
});
