import { randomInt } from 'node:crypto';
import type { NewTask, Task, TaskError, TaskState } from '@ctxbus/core';
import {
  assertTransition,
  CtxbusError,
  canonicalJson,
  DEFAULT_TASK_MAX_ATTEMPTS,
  newTaskId,
  newTaskSchema,
  notLeaseHolderError,
  parseOrThrow,
  staleLeaseError,
  TASK_LIMITS,
  taskApprovalSchema,
  taskErrorSchema,
  taskNoteSchema,
  taskResultSchema,
} from '@ctxbus/core';
import type { StoredTask } from '../rows/task-row.js';
import type { UpdateTaskPatch } from '../store.js';

// The rules of task changes, decided in memory, once for every backend: what each operation
// does to a task read under a lock, and the event it records. No I/O: the backend reads the
// row (locked), runs one of these, and writes the task and event it returns in the same
// transaction. Claims are the exception: each backend does them in SQL (one statement).

/** An event to append (the backend assigns its seq). */
export interface PlannedTaskEvent {
  from: TaskState | null;
  to: TaskState;
  by: string;
  note: string | null;
  atMs: number;
}

/** What to write: the task as it becomes, its token, and the event (none for a renew). */
export interface TaskMutation {
  task: Task;
  token: number;
  event: PlannedTaskEvent | null;
}

/** Who a sweep acts as in the history. */
export const HUB_ACTOR = 'hub';

const iso = (ms: number): string => new Date(ms).toISOString();

/** Checks a lease length asked for by a worker. */
export function checkLeaseMs(leaseMs: number): number {
  if (!Number.isInteger(leaseMs) || leaseMs < 1 || leaseMs > TASK_LIMITS.maxLeaseMs) {
    throw new CtxbusError(
      'validation_failed',
      `leaseMs: a whole number of milliseconds from 1 to ${TASK_LIMITS.maxLeaseMs}`,
      { details: { field: 'leaseMs' } },
    );
  }
  return leaseMs;
}

/** When a task entering SUBMITTED at `nowMs` stops waiting. */
function waitEnd(ttlSeconds: number | null, nowMs: number): string | null {
  return ttlSeconds === null ? null : iso(nowMs + ttlSeconds * 1000);
}

/** A new task, validated, and its creation event. */
export function plannedNewTask(
  teamId: string,
  input: NewTask,
  nowMs: number,
): { task: Task; event: PlannedTaskEvent } {
  const parsed = parseOrThrow(newTaskSchema, input, 'task');
  const state = parsed.initialState ?? 'SUBMITTED';
  const ttlSeconds = parsed.ttlSeconds ?? null;
  const task: Task = {
    id: newTaskId(),
    teamId,
    title: parsed.title,
    description: parsed.description ?? null,
    requiredCapabilities: [...new Set(parsed.requiredCapabilities)],
    origin: parsed.origin,
    scope: parsed.scope ?? null,
    input: parsed.input ?? null,
    idempotencyKey: parsed.idempotencyKey ?? null,
    state,
    targetRuntime: parsed.targetRuntime ?? null,
    routing: parsed.routing ?? null,
    attempts: 0,
    maxAttempts: parsed.maxAttempts ?? DEFAULT_TASK_MAX_ATTEMPTS,
    ttlSeconds,
    lease: null,
    result: null,
    error: null,
    approval: null,
    createdAt: iso(nowMs),
    updatedAt: iso(nowMs),
    expiresAt: state === 'SUBMITTED' ? waitEnd(ttlSeconds, nowMs) : null,
  };
  return { task, event: { from: null, to: state, by: task.origin, note: null, atMs: nowMs } };
}

/** What a create asks for, as a retry with the same idempotency key must ask it again. */
const REQUESTED = (task: Task) => ({
  title: task.title,
  description: task.description,
  requiredCapabilities: [...task.requiredCapabilities].sort(),
  scope: task.scope,
  input: task.input,
  maxAttempts: task.maxAttempts,
  ttlSeconds: task.ttlSeconds,
});

/**
 * Throws `conflict` (idempotency_key_reused) when a create that found the task stored under its
 * idempotency key asks for something else: another title, description, capability set, scope,
 * input, attempt limit or wait. A retry is the same request again; a different one with an old
 * key is a client's mistake, and answering it with the earlier task would report work it never
 * asked for as done. Where it is routed (presence changes between tries) is not compared.
 */
export function assertSameCreate(stored: Task, retry: NewTask): void {
  const asked = REQUESTED(plannedNewTask(stored.teamId, retry, Date.now()).task);
  const kept = REQUESTED(stored);
  const fields = (Object.keys(asked) as (keyof typeof asked)[]).filter(
    (field) => canonicalJson(asked[field]) !== canonicalJson(kept[field]),
  );
  if (fields.length === 0) return;
  throw new CtxbusError(
    'conflict',
    `idempotency key ${JSON.stringify(retry.idempotencyKey)} was used for task ${stored.id}, which asked for another ${fields.join(', ')}: use a new key for a new task`,
    { details: { reason: 'idempotency_key_reused', taskId: stored.id, fields } },
  );
}

/**
 * A claim's fencing token: random (48 bits), so only the worker instance the claim answered
 * knows it. Another process holding the same runtime's token (a second worker, or an agent
 * reading that token from its config) cannot guess it, and no read route, event note, error
 * or audit record shows it. Only equality is checked, so it need not grow.
 */
export function newFencingToken(): number {
  return randomInt(1, 2 ** 48);
}

/**
 * Throws `conflict` (stale_lease) unless `token` holds the running lease of a WORKING task, and
 * `forbidden` (not_lease_holder) when `holder` is given and is not the runtime that claimed it
 * (checked before the token, so a refusal says nothing about the token).
 */
export function assertLease(
  stored: StoredTask,
  token: number,
  nowMs: number,
  holder?: string,
): void {
  const { task } = stored;
  if (task.state !== 'WORKING' || task.lease === null) {
    throw staleLeaseError(task.id, `the task is ${task.state}, not held by anyone`);
  }
  if (holder !== undefined && task.lease.runtime !== holder) {
    throw notLeaseHolderError(task.id, holder, task.lease.runtime);
  }
  if (token !== stored.token) {
    throw staleLeaseError(task.id, `token ${token} is not the current claim's token`);
  }
  if (Date.parse(task.lease.expiresAt) <= nowMs) {
    throw staleLeaseError(task.id, `the lease ended at ${task.lease.expiresAt}`);
  }
}

function moved(
  stored: StoredTask,
  to: TaskState,
  changes: Partial<Task>,
  by: string,
  note: string | null,
  nowMs: number,
): TaskMutation {
  assertTransition(stored.task.state, to, stored.task.id);
  const leaves = stored.task.state === 'WORKING';
  const task: Task = {
    ...stored.task,
    ...(leaves && { lease: null }),
    expiresAt: to === 'SUBMITTED' ? waitEnd(stored.task.ttlSeconds, nowMs) : null,
    ...changes,
    state: to,
    updatedAt: iso(nowMs),
  };
  return {
    task,
    token: stored.token,
    event: { from: stored.task.state, to, by, note, atMs: nowMs },
  };
}

export function plannedRenew(
  stored: StoredTask,
  token: number,
  leaseMs: number,
  nowMs: number,
  holder?: string,
): TaskMutation {
  checkLeaseMs(leaseMs);
  assertLease(stored, token, nowMs, holder);
  const lease = stored.task.lease;
  if (lease === null) throw new Error('unreachable: assertLease checked the lease');
  return {
    task: {
      ...stored.task,
      lease: { ...lease, expiresAt: iso(nowMs + leaseMs) },
      updatedAt: iso(nowMs),
    },
    token: stored.token,
    event: null,
  };
}

/**
 * The holder is about to start the command: the lease records when (no event; a second call
 * keeps the first time). From then on a lease that runs out fails the task (worker_lost).
 */
export function plannedStart(
  stored: StoredTask,
  token: number,
  nowMs: number,
  holder?: string,
): TaskMutation | null {
  assertLease(stored, token, nowMs, holder);
  const lease = stored.task.lease;
  if (lease === null) throw new Error('unreachable: assertLease checked the lease');
  if (lease.startedAt !== null) return null;
  return {
    task: {
      ...stored.task,
      lease: { ...lease, startedAt: iso(nowMs) },
      updatedAt: iso(nowMs),
    },
    token: stored.token,
    event: null,
  };
}

/** A worker's result as the task keeps it (checked against the result schema and limits). */
export function checkedResult(result: unknown) {
  return parseOrThrow(taskResultSchema, result, 'result');
}

export function plannedComplete(
  stored: StoredTask,
  token: number,
  result: unknown,
  nowMs: number,
  holder?: string,
): TaskMutation | null {
  const value = checkedResult(result);
  if (alreadyReported(stored, token, 'COMPLETED', stored.task.result, value)) return null;
  assertLease(stored, token, nowMs, holder);
  const by = stored.task.lease?.workerId ?? HUB_ACTOR;
  return moved(stored, 'COMPLETED', { result: value, error: null }, by, null, nowMs);
}

/**
 * A report sent again by the worker that made it (its claim's token, which only it knows),
 * with the same content, after the task already ended so: the answer to the first was lost (the
 * hub died after committing it). It changes nothing and is answered with the task as it is.
 */
function alreadyReported(
  stored: StoredTask,
  token: number,
  state: TaskState,
  kept: unknown,
  sent: unknown,
): boolean {
  return (
    stored.task.state === state &&
    stored.token === token &&
    JSON.stringify(kept) === JSON.stringify(sent)
  );
}

/** The error of a task that ran out of attempts. */
function deadLetter(task: Task, last: TaskError | null): TaskError {
  const why = last === null ? '' : `; last error: ${last.code}: ${last.message}`;
  return {
    code: 'dead_letter',
    message: `gave up after ${task.attempts} of ${task.maxAttempts} attempts${why}`.slice(
      0,
      TASK_LIMITS.errorMessageChars,
    ),
  };
}

export function plannedFail(
  stored: StoredTask,
  token: number,
  error: TaskError,
  retry: boolean,
  nowMs: number,
  holder?: string,
): TaskMutation | null {
  const parsed = parseOrThrow(taskErrorSchema, error, 'error');
  if (!retry && alreadyReported(stored, token, 'FAILED', stored.task.error, parsed)) return null;
  assertLease(stored, token, nowMs, holder);
  const by = stored.task.lease?.workerId ?? HUB_ACTOR;
  const note = `${parsed.code}: ${parsed.message}`.slice(0, TASK_LIMITS.noteChars);
  if (retry && stored.task.attempts < stored.task.maxAttempts) {
    return moved(stored, 'SUBMITTED', { error: null }, by, `retry: ${note}`, nowMs);
  }
  const final = retry ? deadLetter(stored.task, parsed) : parsed;
  return moved(stored, 'FAILED', { error: final }, by, note, nowMs);
}

export function plannedUpdate(
  stored: StoredTask,
  patch: UpdateTaskPatch,
  nowMs: number,
): TaskMutation {
  const note = patch.note === undefined ? null : parseOrThrow(taskNoteSchema, patch.note, 'note');
  const { task } = stored;
  if (patch.state === 'WORKING' || patch.state === 'COMPLETED') {
    const how = patch.state === 'WORKING' ? 'claim it' : 'complete it with its result';
    throw new CtxbusError(
      'conflict',
      `task ${task.id}: ${patch.state} is not set by an update (${how} instead)`,
      { details: { reason: 'illegal_transition', from: task.state, to: patch.state } },
    );
  }
  assertTransition(task.state, patch.state, task.id);
  if (task.state === 'WORKING') {
    if (patch.token === undefined) {
      throw staleLeaseError(task.id, 'the task is WORKING: an update must carry its token');
    }
    assertLease(stored, patch.token, nowMs, patch.holder);
  }
  const changes: Partial<Task> = {};
  if (patch.state === 'FAILED') {
    changes.error =
      patch.error === undefined
        ? { code: 'failed', message: note ?? '' }
        : parseOrThrow(taskErrorSchema, patch.error, 'error');
  } else if (patch.state === 'REJECTED' && patch.error !== undefined) {
    changes.error = parseOrThrow(taskErrorSchema, patch.error, 'error');
  }
  if (patch.approval !== undefined) {
    const approval = parseOrThrow(taskApprovalSchema, patch.approval, 'approval');
    changes.approval = approval;
    // Waiting for a human: until the request lapses (then expireApprovals rejects it).
    if (patch.state === 'AUTH_REQUIRED') changes.expiresAt = approval.expiresAt;
  }
  return moved(stored, patch.state, changes, patch.by, note, nowMs);
}

/** Null when the task is already canceled (nothing to write). */
export function plannedCancel(
  stored: StoredTask,
  by: string,
  note: string | undefined,
  nowMs: number,
): TaskMutation | null {
  if (stored.task.state === 'CANCELED') return null;
  const text = note === undefined ? null : parseOrThrow(taskNoteSchema, note, 'note');
  return moved(stored, 'CANCELED', {}, by, text, nowMs);
}

/** The error of a task whose worker went silent after it started the command. */
export const WORKER_LOST = 'worker_lost';

/**
 * A WORKING task whose lease ran out. Its worker had said it was starting the command: FAILED
 * (`worker_lost`), never run again by the hub, since the command may have run and had its
 * effects (its origin may create the task again). Otherwise the command never started:
 * requeued, or a dead letter after its last attempt.
 */
export function plannedLeaseExpiry(stored: StoredTask, nowMs: number): TaskMutation {
  const { task } = stored;
  const worker = task.lease?.workerId ?? 'unknown';
  const note = `lease of ${worker} expired`;
  const startedAt = task.lease?.startedAt ?? null;
  if (startedAt !== null) {
    const message =
      `worker ${worker} started the command at ${startedAt}, then stopped answering until its ` +
      `lease ended at ${task.lease?.expiresAt}: the command may or may not have run, so it ` +
      'is not run again; create the task again to run it';
    return moved(
      stored,
      'FAILED',
      { error: { code: WORKER_LOST, message: message.slice(0, TASK_LIMITS.errorMessageChars) } },
      HUB_ACTOR,
      `${note} after the command started; not run again (${WORKER_LOST})`,
      nowMs,
    );
  }
  if (task.attempts < task.maxAttempts) {
    return moved(
      stored,
      'SUBMITTED',
      {},
      HUB_ACTOR,
      `${note} before the command started; requeued`,
      nowMs,
    );
  }
  return moved(
    stored,
    'FAILED',
    { error: deadLetter(task, { code: 'lease_expired', message: note }) },
    HUB_ACTOR,
    `${note}; dead letter`,
    nowMs,
  );
}

/** A SUBMITTED task nobody claimed in time. */
export function plannedWaitExpiry(stored: StoredTask, nowMs: number): TaskMutation {
  const waited = stored.task.ttlSeconds ?? 0;
  return moved(
    stored,
    'FAILED',
    {
      error: { code: 'expired', message: `no worker claimed it within ${waited} s` },
    },
    HUB_ACTOR,
    'expired unclaimed',
    nowMs,
  );
}

/** An AUTH_REQUIRED task nobody answered in time: an unanswered approval is a deny. */
export function plannedApprovalExpiry(stored: StoredTask, nowMs: number): TaskMutation {
  const { approval } = stored.task;
  return moved(
    stored,
    'REJECTED',
    {
      error: {
        code: 'approval_expired',
        message: `nobody approved or denied it by ${stored.task.expiresAt ?? 'its deadline'}`,
      },
      ...(approval && { approval: { ...approval, status: 'expired' as const } }),
    },
    HUB_ACTOR,
    'approval request expired unanswered',
    nowMs,
  );
}
