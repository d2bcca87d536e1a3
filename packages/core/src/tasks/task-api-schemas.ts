import { z } from 'zod';
import { scopeSchema } from '../items/context-item.js';
import { routeRequestSchema, routingDecisionSchema } from '../routing/routing.js';
import { queryInt } from '../shared/query-int.js';
import {
  boundedJsonObject,
  capabilityNameSchema,
  DEFAULT_TASK_LEASE_MS,
  TASK_LIMITS,
  TASK_STATES,
  taskErrorSchema,
  taskEventSchema,
  taskIdSchema,
  taskNoteSchema,
  taskResultSchema,
  taskSchema,
} from './tasks.js';

// The wire shapes of /api/tasks: a runtime creates a task (the hub routes it), workers claim,
// renew, complete and fail it under a lease whose fencing token every call carries.

const MAX_TASK_PAGE = 200;

/** POST /api/tasks: the origin is the caller's runtime (never the body's). */
export const createTaskRequestSchema = z.strictObject({
  title: z.string().trim().min(1).max(TASK_LIMITS.titleChars),
  description: z.string().max(TASK_LIMITS.descriptionChars).optional(),
  requiredCapabilities: z
    .array(capabilityNameSchema)
    .min(1)
    .max(TASK_LIMITS.capabilities)
    .meta({ description: 'Every capability the task needs, e.g. ["code_execution"].' }),
  scope: scopeSchema.optional(),
  input: boundedJsonObject(TASK_LIMITS.inputBytes).optional().meta({
    description:
      'What the doer needs. For code_execution: { "argv": ["npm", "test"], "cwd": "/path", "sandboxed"?: bool, "network"?: bool } ("network" is whether a sandboxed command may reach the network; an unsandboxed one runs with the worker\'s network).',
  }),
  idempotencyKey: z.string().min(1).max(TASK_LIMITS.idempotencyKeyChars).optional().meta({
    description:
      "The same request again with the same key from the same runtime (per team) returns the task already created instead of a second; another request with that key is refused (conflict, idempotency_key_reused). Keys are scoped to the caller's runtime, so another runtime's key never finds your task.",
  }),
  ttlSeconds: z.int().positive().max(TASK_LIMITS.maxTtlSeconds).optional().meta({
    description: 'How long it may wait unclaimed; then it FAILS with code `expired`.',
  }),
  maxAttempts: z.int().min(1).max(TASK_LIMITS.maxAttempts).optional(),
  preferences: routeRequestSchema.shape.preferences,
  constraints: routeRequestSchema.shape.constraints,
});
export type CreateTaskRequest = z.input<typeof createTaskRequestSchema>;

export const taskResponseSchema = z.object({ task: taskSchema });
export const taskWithHistoryResponseSchema = z.object({
  task: taskSchema,
  history: z.array(taskEventSchema),
});
export const createTaskResponseSchema = z.object({
  task: taskSchema,
  status: z.enum(['created', 'existing']),
  routing: routingDecisionSchema,
});

const commaList = <T extends z.ZodType>(item: T) =>
  z.preprocess(
    (value) => (typeof value === 'string' ? value.split(',').filter(Boolean) : value),
    z.array(item).min(1),
  );

export const listTasksQuerySchema = z.strictObject({
  state: commaList(z.enum(TASK_STATES)).optional(),
  target: z.string().min(1).max(64).optional(),
  origin: z.string().min(1).max(64).optional(),
  limit: queryInt(1, MAX_TASK_PAGE).default(50),
  order: z.enum(['oldest', 'newest']).default('oldest').meta({
    description: 'oldest (default): oldest created first; newest: newest created first.',
  }),
  after: taskIdSchema.optional().meta({
    description: 'The last id of the previous page: the page continues after it in `order`.',
  }),
});
export const listTasksResponseSchema = z.object({
  tasks: z.array(taskSchema),
  nextAfter: z.string().nullable(),
});

export const taskIdParamsSchema = z.strictObject({ id: taskIdSchema });

const leaseMsSchema = z.int().min(1_000).max(TASK_LIMITS.maxLeaseMs);
const fencingTokenSchema = z.int().positive().meta({
  description:
    "The claim's fencing token, from the claim's answer only (reads never show it); a stale or wrong one is refused with 409 (reason stale_lease). Only the runtime that claimed the task may use it (403, reason not_lease_holder).",
});
const workerIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9._:-]{1,128}$/, 'a worker id (letters, digits, . _ : -)');

export const claimTaskRequestSchema = z.strictObject({
  workerId: workerIdSchema,
  capabilities: z.array(capabilityNameSchema).max(TASK_LIMITS.capabilities).optional(),
  leaseMs: leaseMsSchema.default(DEFAULT_TASK_LEASE_MS),
  waitMs: z.int().min(0).max(TASK_LIMITS.maxClaimWaitMs).default(0).meta({
    description:
      'How long to wait for a task when none is waiting now (long poll; default 0: answer at once). The hub wakes one waiting claim per new task it can take, so idle workers do not all race for each task.',
  }),
});
export const claimTaskResponseSchema = z.object({ task: taskSchema.nullable() });

export const renewTaskRequestSchema = z.strictObject({
  token: fencingTokenSchema,
  leaseMs: leaseMsSchema.default(DEFAULT_TASK_LEASE_MS),
});
/** Worker: it is about to start the command (a lease that runs out after this fails the task). */
export const startTaskRequestSchema = z.strictObject({ token: fencingTokenSchema });
/**
 * A claim made with a completion (`next` of POST /api/tasks/:id/complete): the worker's next
 * task in the same call, without waiting.
 */
export const claimNextSchema = claimTaskRequestSchema.omit({ waitMs: true }).meta({
  description:
    "Also take the next task routed to the caller's runtime, as POST /api/tasks/claim without `waitMs` would, once the completion is committed: a worker that completes a task and wants another saves a request per task. Answered as `next` (null when none is waiting, or when the claim could not be made: then claim as usual).",
});
export const completeTaskRequestSchema = z.strictObject({
  token: fencingTokenSchema,
  result: taskResultSchema,
  next: claimNextSchema.optional(),
});
export const completeTaskResponseSchema = z.object({
  task: taskSchema,
  next: taskSchema.nullable().optional().meta({
    description: 'With `next` in the request: the task claimed for the caller, or null.',
  }),
});
export const failTaskRequestSchema = z.strictObject({
  token: fencingTokenSchema,
  error: taskErrorSchema,
  retry: z.boolean().optional(),
});
/** Worker: the tail of a running command's output, for the origin to watch. */
export const taskProgressRequestSchema = z.strictObject({
  token: fencingTokenSchema,
  output: z
    .string()
    .max(8_000)
    .meta({ description: 'The latest output (the worker sends a tail).' }),
  outputEnd: z.number().int().nonnegative().optional().meta({
    description:
      'How many characters the command has written so far (both streams); `output` is the last of them. A follower prints only what is new.',
  }),
});

export const cancelTaskRequestSchema = z.strictObject({ note: taskNoteSchema.optional() });

/** A worker's request that a human approve the exact command it was refused. */
export const approvalRequestBodySchema = z.strictObject({
  token: fencingTokenSchema,
  request: z.strictObject({
    argv: z.array(z.string().max(100_000)).min(1).max(10_000),
    /** The working directory's real path. */
    cwd: z.string().min(1).max(4_096),
    /** SHA-256 of the script the command runs, when it runs one. */
    scriptHash: z
      .string()
      .regex(/^[0-9a-f]{64}$/)
      .nullable(),
    because: z.enum(['not_allowed', 'untrusted_origin', 'runs_code']),
  }),
  note: taskNoteSchema.optional(),
});

/** A human's answer. Admin tokens name the task's team; runtime tokens act for their own. */
export const approvalDecisionBodySchema = z.strictObject({
  note: taskNoteSchema.optional(),
  team: z.string().min(1).max(64).optional(),
  digest: z
    .string()
    .regex(/^[0-9a-f]{64}$/, 'a SHA-256 hex digest')
    .optional()
    .meta({
      description:
        "The digest of the command the person was shown (`approval.request.digest`): required to approve (400, reason digest_required), optional to deny; the decision is refused with 409 (reason digest_mismatch) unless it is the pending request's.",
    }),
});

/** Why a people's channel refused a person's decision before it reached the hub. */
export const CHANNEL_REFUSALS = [
  'no_approver_configured',
  'not_an_approver',
  'not_this_message',
  'superseded',
] as const;

export type ChannelRefusal = (typeof CHANNEL_REFUSALS)[number];

export const refusedDecisionBodySchema = z.strictObject({
  decision: z.enum(['approve', 'deny']),
  by: z.string().trim().min(1).max(200).meta({
    description: 'Who tried, as the channel knows them (e.g. "telegram user 222 (chat -100)").',
  }),
  reason: z.enum(CHANNEL_REFUSALS).meta({
    description:
      'no_approver_configured: the channel has none; not_an_approver: the person is not one; not_this_message: the button was not sent for this task on that message; superseded: the message showed another command than the one the task waits on.',
  }),
  message: taskNoteSchema.optional(),
});
export const refusedDecisionResponseSchema = z.object({ recorded: z.literal(true) });

export const approvalKeyResponseSchema = z.object({
  algorithm: z.literal('ed25519'),
  /** SPKI PEM: workers verify approvals with it. */
  publicKey: z.string(),
});

/** The non-terminal states: the team's active tasks. */
export const ACTIVE_TASK_STATES = [
  'SUBMITTED',
  'WORKING',
  'INPUT_REQUIRED',
  'AUTH_REQUIRED',
] as const;

/**
 * States `POST /api/tasks/:id/update` may move a task to. WORKING is entered by a claim,
 * COMPLETED by complete (with the result), AUTH_REQUIRED and REJECTED by the hub (routing and
 * approvals), and leaving AUTH_REQUIRED for SUBMITTED is an approval, never an update.
 */
export const UPDATE_TASK_STATES = ['SUBMITTED', 'INPUT_REQUIRED', 'FAILED', 'CANCELED'] as const;

/**
 * POST /api/tasks/:id/update: the origin or the doer records progress or moves the task. The
 * same state as the task's (not terminal) records the note only, as a status item.
 */
export const updateTaskRequestSchema = z.strictObject({
  state: z.enum(TASK_STATES).meta({
    description: `The state to move to: ${UPDATE_TASK_STATES.join(', ')}; or the task's current state to record the note only.`,
  }),
  note: taskNoteSchema.optional(),
  token: fencingTokenSchema.optional().meta({
    description:
      "Required to move a WORKING task (except to CANCELED): the holder's fencing token (`task.lease.token`); a stale one is refused with 409.",
  }),
});
export type UpdateTaskRequest = z.input<typeof updateTaskRequestSchema>;
