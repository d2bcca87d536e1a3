import { v7 as uuidv7 } from 'uuid';
import { z } from 'zod';
import { runtimeNameSchema, scopeSchema } from '../items/context-item.js';
import { CtxbusError } from '../shared/errors.js';
import { MAX_JSON_DEPTH, tooDeep } from '../shared/validation.js';
import type { TaskState } from './task-states.js';
import { TASK_STATES } from './task-states.js';

// Tasks: work one runtime hands to another (issue 12, "Tasks in the hub"). Pure: the states
// as A2A 1.0 names them on the wire, the moves between them, and the shapes the task store
// keeps. The store enforces these rules in its transactions; the hub and workers share them.

export type { TaskState } from './task-states.js';
export { TASK_STATES };

export const taskStateSchema = z.enum(TASK_STATES);

/** States a task never leaves. */
export const TERMINAL_TASK_STATES = ['COMPLETED', 'FAILED', 'CANCELED', 'REJECTED'] as const;

/** States in which a task waits to start (counted against the per-runtime cap). */
export const WAITING_TASK_STATES = ['SUBMITTED', 'AUTH_REQUIRED'] as const;

/** States a task may be created in (AUTH_REQUIRED: held for approval; REJECTED: no runtime can). */
export const INITIAL_TASK_STATES = ['SUBMITTED', 'AUTH_REQUIRED', 'REJECTED'] as const;

export function isTerminalTaskState(state: TaskState): boolean {
  return (TERMINAL_TASK_STATES as readonly TaskState[]).includes(state);
}

/**
 * The allowed moves. WORKING is entered only by a claim (SUBMITTED -> WORKING, with a lease);
 * a task that needs input or approval goes back through SUBMITTED once it has it, so that a
 * worker claims it again with a fresh lease and fencing token.
 */
export const TASK_TRANSITIONS: Readonly<Record<TaskState, readonly TaskState[]>> = {
  SUBMITTED: ['WORKING', 'AUTH_REQUIRED', 'REJECTED', 'CANCELED', 'FAILED'],
  WORKING: ['COMPLETED', 'FAILED', 'CANCELED', 'INPUT_REQUIRED', 'AUTH_REQUIRED', 'SUBMITTED'],
  INPUT_REQUIRED: ['SUBMITTED', 'CANCELED', 'FAILED'],
  AUTH_REQUIRED: ['SUBMITTED', 'REJECTED', 'CANCELED', 'FAILED'],
  COMPLETED: [],
  FAILED: [],
  CANCELED: [],
  REJECTED: [],
};

export function canTransition(from: TaskState, to: TaskState): boolean {
  return TASK_TRANSITIONS[from].includes(to);
}

/** Throws `conflict` (409) unless `from -> to` is an allowed move. */
export function assertTransition(from: TaskState, to: TaskState, taskId?: string): void {
  if (canTransition(from, to)) return;
  const what = taskId === undefined ? 'a task' : `task ${taskId}`;
  const why = isTerminalTaskState(from)
    ? `${from} is terminal: the task never changes again`
    : `allowed from ${from}: ${TASK_TRANSITIONS[from].join(', ')}`;
  throw new CtxbusError('conflict', `${what} cannot move from ${from} to ${to} (${why})`, {
    details: { reason: 'illegal_transition', from, to, ...(taskId && { taskId }) },
  });
}

/**
 * The refusal of a renew, complete or fail whose fencing token is not the task's current one,
 * or whose lease ran out: the caller lost the task and must stop (409, never retried).
 */
export function staleLeaseError(taskId: string, why: string): CtxbusError {
  return new CtxbusError('conflict', `task ${taskId}: stale lease (${why}); stop working on it`, {
    details: { reason: 'stale_lease', taskId },
  });
}

/**
 * The refusal of a renew, progress report, complete or fail from a runtime that does not hold
 * the task's lease (403): only the runtime whose token claimed the task reports on it, whatever
 * fencing token another runtime presents.
 */
export function notLeaseHolderError(
  taskId: string,
  runtime: string,
  holder: string | null,
): CtxbusError {
  return new CtxbusError(
    'forbidden',
    `task ${taskId}: runtime ${runtime} does not hold its lease${holder === null ? '' : ` (${holder} does)`}; only the worker that claimed a task reports on it`,
    { details: { reason: 'not_lease_holder', taskId } },
  );
}

export const TASK_LIMITS = {
  titleChars: 300,
  descriptionChars: 10_000,
  capabilities: 32,
  idempotencyKeyChars: 200,
  noteChars: 2_000,
  errorCodeChars: 64,
  errorMessageChars: 4_000,
  /** Serialised UTF-8 bytes of `input` and of `routing`. */
  inputBytes: 64 * 1024,
  /** Serialised UTF-8 bytes of `result` (a worker caps output below it). */
  resultBytes: 512 * 1024,
  maxTtlSeconds: 30 * 24 * 3600,
  maxAttempts: 100,
  /** Longest a claim may wait for a task (its `waitMs`). */
  maxClaimWaitMs: 25_000,
  /** Longest lease a claim or renew may ask for. */
  maxLeaseMs: 60 * 60 * 1000,
} as const;

/** Attempts a task gets when the creator does not say (the last failure is a dead letter). */
export const DEFAULT_TASK_MAX_ATTEMPTS = 3;

/** The lease a worker gets when it does not ask for another (it renews at a third). */
export const DEFAULT_TASK_LEASE_MS = 30_000;

const NO_NUL = (value: string) => !value.includes('\u0000');

/** UTF-8 bytes of `value` as JSON (core has no TextEncoder in its lib: counted by hand). */
function jsonBytes(value: unknown): number {
  const text = JSON.stringify(value) ?? '';
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

function depthChecked<T extends z.ZodType>(inner: T) {
  return z.preprocess((value, ctx) => {
    const deep = tooDeep(value);
    if (deep !== null) {
      ctx.addIssue({
        code: 'custom',
        message: `${deep === '(root)' ? '' : `${deep.slice(1)}: `}nested deeper than ${MAX_JSON_DEPTH} levels`,
        input: value,
        continue: false,
      });
    }
    return value;
  }, inner);
}

/** A JSON object at most `maxBytes` serialised and MAX_JSON_DEPTH deep (checked first). */
export function boundedJsonObject(maxBytes: number) {
  return depthChecked(
    z
      .record(z.string(), z.json())
      .refine((value) => jsonBytes(value) <= maxBytes, `at most ${maxBytes} bytes as JSON`),
  );
}

export type JsonObject = Record<string, z.core.util.JSONType>;

/** A capability name, as in capabilities.yaml. */
export const capabilityNameSchema = z
  .string()
  .regex(/^[a-z][a-z0-9_-]{0,62}$/, 'a lower-case name (letters, digits, - and _)');

export const taskIdSchema = z
  .string()
  .regex(
    /^task_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
    'a task id: task_ and a UUID (task_01a2b3c4-...)',
  );

/** `task_` + UUIDv7, like the project's other ids. */
export function newTaskId(): string {
  return `task_${uuidv7()}`;
}

export const taskErrorSchema = z.strictObject({
  code: z.string().min(1).max(TASK_LIMITS.errorCodeChars),
  message: z.string().max(TASK_LIMITS.errorMessageChars),
});
export type TaskError = z.infer<typeof taskErrorSchema>;

const titleSchema = z.string().trim().min(1).max(TASK_LIMITS.titleChars).refine(NO_NUL, 'no NUL');

/** What a creator (the hub, for a runtime's request) gives to store a task. */
export const newTaskSchema = z.strictObject({
  title: titleSchema,
  description: z.string().max(TASK_LIMITS.descriptionChars).refine(NO_NUL, 'no NUL').optional(),
  requiredCapabilities: z.array(capabilityNameSchema).max(TASK_LIMITS.capabilities),
  /** The runtime the task comes from. */
  origin: runtimeNameSchema,
  scope: scopeSchema.optional(),
  input: boundedJsonObject(TASK_LIMITS.inputBytes).optional(),
  /**
   * The same key from the same origin runtime (per team) returns the task already stored
   * instead of a second one; another runtime's key never finds it.
   */
  idempotencyKey: z
    .string()
    .min(1)
    .max(TASK_LIMITS.idempotencyKeyChars)
    .refine(NO_NUL, 'no NUL')
    .optional(),
  /** How long it may wait unclaimed (counted from each time it enters SUBMITTED). */
  ttlSeconds: z.number().int().positive().max(TASK_LIMITS.maxTtlSeconds).optional(),
  maxAttempts: z.number().int().min(1).max(TASK_LIMITS.maxAttempts).optional(),
  /** Where the router sent it; null: any runtime whose worker has the capabilities. */
  targetRuntime: runtimeNameSchema.nullable().optional(),
  /** The router's decision, kept as is. */
  routing: boundedJsonObject(TASK_LIMITS.inputBytes).optional(),
  initialState: z.enum(INITIAL_TASK_STATES).optional(),
});
export type NewTask = z.input<typeof newTaskSchema>;
export type ParsedNewTask = z.output<typeof newTaskSchema>;

export const taskLeaseSchema = z.strictObject({
  workerId: z.string(),
  /**
   * The runtime whose token claimed the task: only it may renew, report progress, complete or
   * fail it (null: claimed before the hub recorded holders; nobody reports on it, it lapses).
   */
  runtime: z.string().nullable(),
  /**
   * Fencing token: random, new with every claim of this task. Only the claim's (and renew's)
   * answer carries it, so only the worker instance that claimed the task knows it; every read
   * shows null, even to the holder's runtime.
   */
  token: z.number().int().positive().nullable(),
  expiresAt: z.iso.datetime(),
  /**
   * When the holder said it was about to start the command (POST /api/tasks/:id/start); null:
   * not yet. A lease that runs out after this is not requeued: the command may have run (and
   * had its effects), so the task ends FAILED with code `worker_lost` instead of running twice.
   */
  startedAt: z.iso.datetime().nullable().meta({
    description:
      'When the holder said it was starting the command (POST /api/tasks/:id/start); null: not yet. A lease that runs out after this ends the task FAILED with code worker_lost (the command may have run, so it never runs twice); one that runs out before it requeues the task.',
  }),
});
export type TaskLease = z.infer<typeof taskLeaseSchema>;

/** What a human approves for a task: one exact command, until a deadline (unanswered: denied). */
export const TASK_APPROVAL_STATUSES = ['pending', 'approved', 'denied', 'expired'] as const;

export const taskApprovalSchema = z.strictObject({
  status: z.enum(TASK_APPROVAL_STATUSES),
  /** The exact command as the worker will run it: argv, cwd, scriptHash, digest, because. */
  request: z.record(z.string(), z.json()),
  requestedBy: z.string().max(200),
  requestedAt: z.iso.datetime(),
  /** An unanswered request is a deny after this. */
  expiresAt: z.iso.datetime(),
  decidedBy: z.string().max(200).nullable(),
  decidedAt: z.iso.datetime().nullable(),
  note: z.string().max(TASK_LIMITS.noteChars).nullable(),
  /** The hub's signed approval of exactly this command (approved only). */
  token: z.string().max(4_000).nullable(),
});
export type TaskApproval = z.infer<typeof taskApprovalSchema>;

export const taskSchema = z.strictObject({
  id: z.string(),
  teamId: z.string(),
  title: z.string(),
  description: z.string().nullable(),
  requiredCapabilities: z.array(z.string()),
  origin: z.string(),
  scope: scopeSchema.nullable(),
  input: z.record(z.string(), z.json()).nullable(),
  idempotencyKey: z.string().nullable(),
  state: taskStateSchema,
  targetRuntime: z.string().nullable(),
  routing: z.record(z.string(), z.json()).nullable(),
  attempts: z.number().int().nonnegative(),
  maxAttempts: z.number().int().positive(),
  ttlSeconds: z.number().int().positive().nullable(),
  lease: taskLeaseSchema.nullable(),
  result: z.json().nullable(),
  error: taskErrorSchema.nullable(),
  /** A human's approval of the exact command, once a worker asked for one. */
  approval: taskApprovalSchema.nullable(),
  createdAt: z.iso.datetime(),
  updatedAt: z.iso.datetime(),
  /**
   * When a SUBMITTED task stops waiting, or an AUTH_REQUIRED one's approval request lapses
   * (null: it waits until claimed, answered or canceled).
   */
  expiresAt: z.iso.datetime().nullable(),
});
export type Task = z.infer<typeof taskSchema>;

/** One entry of a task's history: every state change, in order. */
export const taskEventSchema = z.strictObject({
  seq: z.number().int().positive(),
  taskId: z.string(),
  at: z.iso.datetime(),
  /** null for the creation. */
  from: taskStateSchema.nullable(),
  to: taskStateSchema,
  /** Who moved it: a runtime, a worker id, or `hub` for expiries. */
  by: z.string(),
  note: z.string().nullable(),
});
export type TaskEvent = z.infer<typeof taskEventSchema>;

export const taskNoteSchema = z.string().max(TASK_LIMITS.noteChars).refine(NO_NUL, 'no NUL');

/** The JSON result of a completed task, capped. */
export const taskResultSchema = depthChecked(
  z
    .json()
    .refine(
      (value) => jsonBytes(value) <= TASK_LIMITS.resultBytes,
      `at most ${TASK_LIMITS.resultBytes} bytes as JSON`,
    ),
);
