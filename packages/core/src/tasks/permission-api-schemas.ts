import { z } from 'zod';
import { MAX_PERMISSION_WAIT_SECONDS, MIN_PERMISSION_WAIT_SECONDS } from './permission-limits.js';
import { TASK_LIMITS, taskNoteSchema, taskSchema } from './tasks.js';

// POST /api/approvals: a runtime asks the team's people to approve one exact command it runs
// itself (Codex's PermissionRequest hook), through the same approvals as a worker's. The hub
// records it as a task waiting in AUTH_REQUIRED, from and for the asking runtime, so the
// approval routes refuse that runtime's own decision as they refuse a worker's; a person answers
// through `ctxbus approve`, Telegram or the dashboard.

export const permissionRequestBodySchema = z.strictObject({
  request: z.strictObject({
    argv: z.array(z.string().min(1).max(100_000)).min(1).max(10_000).meta({
      description:
        'The command exactly as the runtime will run it (a shell runtime: the one command line, as one element).',
    }),
    cwd: z
      .string()
      .min(1)
      .max(4_096)
      .regex(/^\//, 'an absolute path')
      .meta({ description: 'The directory it runs in (absolute).' }),
    tool: z
      .string()
      .regex(/^[A-Za-z][A-Za-z0-9_.-]{0,63}$/)
      .meta({ description: "The runtime's name for the tool asking (Codex: Bash)." }),
    reason: z
      .string()
      .max(TASK_LIMITS.noteChars)
      .optional()
      .meta({ description: 'Why the runtime says it needs it (its own words: data).' }),
  }),
  idempotencyKey: z.string().min(1).max(TASK_LIMITS.idempotencyKeyChars).meta({
    description:
      'One per request: a retry with the same key gets the same task (scoped to the runtime).',
  }),
  waitSeconds: z
    .int()
    .min(MIN_PERMISSION_WAIT_SECONDS)
    .max(MAX_PERMISSION_WAIT_SECONDS)
    .meta({ description: 'How long people have to answer; unanswered then: a deny.' }),
  note: taskNoteSchema.optional(),
});
export type PermissionRequestBody = z.input<typeof permissionRequestBodySchema>;

export const permissionRequestResponseSchema = z.object({
  task: taskSchema,
  status: z.enum(['created', 'existing']),
});
