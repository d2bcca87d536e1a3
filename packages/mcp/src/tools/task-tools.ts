import type { Task } from '@ctxbus/core/contract';
import {
  CtxbusError,
  capabilityNameSchema,
  runtimeNameSchema,
  scopeSchema,
  TASK_LIMITS,
  TASK_STATES,
  UPDATE_TASK_STATES,
} from '@ctxbus/core/contract';
import { z } from 'zod';
import {
  routingSentence,
  routingViewSchema,
  taskEventViewSchema,
  taskText,
  taskViewSchema,
  toEventView,
  toRoutingView,
  toTaskView,
} from '../task-view.js';
import type { ToolContext } from './tool-context.js';
import { defineTool } from './tool-definition.js';

export const TASK_CREATE_TOOL = 'task_create';
export const TASK_STATUS_TOOL = 'task_status';
export const TASK_UPDATE_TOOL = 'task_update';

// Looser than the hub's checks where a strict pattern would bloat the schema a model reads on
// every turn; the hub validates exactly and its message comes back as the tool error.
const taskIdInput = z
  .string()
  .regex(
    /^task_[0-9a-f-]{36}$/,
    'a task id: task_ followed by a UUID, as task_create and task://active give it (a label such as T-42 names work in a scopeKey, not a task of the hub)',
  )
  .describe('The task id (task_...), as task_create and task://active give it.');

const runtimeListInput = z.array(runtimeNameSchema).max(64);

export const taskCreateInput = z.object({
  title: z
    .string()
    .trim()
    .min(1)
    .max(TASK_LIMITS.titleChars)
    .describe('What to do, one specific sentence: "Run the test suite of ctxbus on main".'),
  description: z
    .string()
    .max(TASK_LIMITS.descriptionChars)
    .optional()
    .describe('Details the doer needs: context, acceptance criteria, where to report.'),
  requiredCapabilities: z
    .array(capabilityNameSchema)
    .min(1)
    .max(TASK_LIMITS.capabilities)
    .describe(
      'Every capability the task needs, as capabilities.yaml names them: code_execution, file_operations, search, communication, memory, or a user-defined one.',
    ),
  input: z
    .record(z.string(), z.unknown())
    .optional()
    .describe(
      'What the doer needs, as a JSON object. For code_execution: {"argv": ["npm", "test"], "cwd": "/abs/path"} (argv, never a shell string).',
    ),
  idempotencyKey: z
    .string()
    .min(1)
    .max(TASK_LIMITS.idempotencyKeyChars)
    .optional()
    .describe('A key of yours making retries safe: the same key returns the task already created.'),
  preferences: z
    .strictObject({
      prefer: runtimeListInput.optional().describe('Runtimes to prefer, best first.'),
      avoid: runtimeListInput.optional().describe('Runtimes to take only when no other can.'),
      allowQueue: z
        .boolean()
        .optional()
        .describe('Whether it may wait for a capable runtime that is offline (default true).'),
    })
    .optional(),
  constraints: z
    .strictObject({
      network: z.boolean().optional().describe('The task needs the network.'),
      seconds: z
        .number()
        .int()
        .positive()
        .max(86_400)
        .optional()
        .describe('The task needs to run this long.'),
    })
    .optional(),
  scope: scopeSchema.optional().describe('Who the task concerns (default: the team).'),
  ttlSeconds: z
    .number()
    .int()
    .positive()
    .max(TASK_LIMITS.maxTtlSeconds)
    .optional()
    .describe('How long it may wait unclaimed before it FAILS with code expired.'),
});

export const taskCreateOutput = z.object({
  task: taskViewSchema,
  status: z
    .enum(['created', 'existing'])
    .describe(
      '"existing": this request was already created with this idempotencyKey (returned as is; another request with the key is refused).',
    ),
  routing: routingViewSchema,
});

const CREATE_DESCRIPTION = `Hand work to whichever runtime of the team can do it: the hub routes the task with the capability matrix (capabilities.yaml) and who is online, and says why. Use it when you cannot do something yourself (run code, touch files on another machine, reach a channel you lack), or when another runtime should do it.

The answer says where it went: native (you do it yourself), via-api / via-mcp (you, through an API or MCP server), proxy (another runtime's worker runs it), queue (a capable runtime is offline; it runs when one connects), escalate (no runtime can: REJECTED, a human must step in); and whether a human must approve it first (AUTH_REQUIRED).

Example: {"title": "Run the ctxbus tests", "requiredCapabilities": ["code_execution"], "input": {"argv": ["pnpm", "test"], "cwd": "/home/me/ctxbus"}, "idempotencyKey": "tests-2026-11-25"}
Follow it with task_status (or read task://active); cancel it with task_update status CANCELED.`;

export function taskCreateTool(context: ToolContext) {
  return defineTool({
    name: TASK_CREATE_TOOL,
    title: 'Create a routed task',
    description: CREATE_DESCRIPTION,
    input: taskCreateInput,
    output: taskCreateOutput,
    annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: true },
    async run(input) {
      const created = await context.backend.createTask({
        title: input.title,
        requiredCapabilities: input.requiredCapabilities,
        ...(input.description !== undefined && { description: input.description }),
        ...(input.input !== undefined && {
          input: input.input as Record<string, never>,
        }),
        ...(input.idempotencyKey !== undefined && { idempotencyKey: input.idempotencyKey }),
        ...(input.preferences !== undefined && { preferences: input.preferences }),
        ...(input.constraints !== undefined && { constraints: input.constraints }),
        ...(input.scope !== undefined && { scope: input.scope }),
        ...(input.ttlSeconds !== undefined && { ttlSeconds: input.ttlSeconds }),
      });
      const task = toTaskView(created.task);
      const verb =
        created.status === 'created' ? 'Created' : 'Already created (same idempotencyKey)';
      return {
        structured: { task, status: created.status, routing: toRoutingView(created.routing) },
        text: `${verb}: ${taskText(task)}\n${routingSentence(created.routing, created.task.origin)}`,
      };
    },
  });
}

export const taskStatusInput = z.object({
  taskId: taskIdInput,
  newStatus: z
    .enum(TASK_STATES)
    .optional()
    .describe(
      "The seed's task_status(taskId, newStatus): move the task as task_update does with status (note and token as there), then report it.",
    ),
  note: z
    .string()
    .max(TASK_LIMITS.noteChars)
    .optional()
    .describe('With newStatus: what happened or what is needed.'),
  token: z
    .number()
    .int()
    .positive()
    .optional()
    .describe('With newStatus, while the task is WORKING: the fencing token of your claim.'),
});

export const taskStatusOutput = z.object({
  task: taskViewSchema,
  history: z.array(taskEventViewSchema).describe('Every state change, oldest first.'),
});

const STATUS_DESCRIPTION = `Where a task stands: its state (SUBMITTED waiting for a worker, WORKING with its holder and fencing token, INPUT_REQUIRED, AUTH_REQUIRED waiting for a human's approval, or ended: COMPLETED with its result, FAILED with its error, CANCELED, REJECTED), the runtime doing it, attempts, and its history (who moved it, when, with what note).
Example: {"taskId": "task_019a..."}. Open tasks of the team are in task://active.
With newStatus (the design's "get or update"), it first moves the task as task_update does: {"taskId": "task_019a...", "newStatus": "CANCELED", "note": "not needed"}.`;

export function taskStatusTool(context: ToolContext) {
  return defineTool({
    name: TASK_STATUS_TOOL,
    title: 'Task status',
    description: STATUS_DESCRIPTION,
    input: taskStatusInput,
    output: taskStatusOutput,
    // Reads, unless newStatus moves the task (the seed's form): so not read-only.
    annotations: { readOnlyHint: false, destructiveHint: true, openWorldHint: false },
    async run(input) {
      if (input.newStatus !== undefined) {
        await moveTask(context, {
          taskId: input.taskId,
          status: input.newStatus,
          ...(input.note !== undefined && { note: input.note }),
          ...(input.token !== undefined && { token: input.token }),
        });
      } else if (input.note !== undefined || input.token !== undefined) {
        throw new CtxbusError(
          'validation_failed',
          'note and token go with newStatus (or use task_update): task_status alone only reads',
        );
      }
      const { task, history } = await context.backend.task(input.taskId);
      const view = toTaskView(task);
      return {
        structured: { task: view, history: history.map(toEventView) },
        text: taskText(view, history),
      };
    },
  });
}

/** What task_update accepts: the moves an update makes, plus COMPLETED for a holder. */
const UPDATE_STATUSES = [...UPDATE_TASK_STATES, 'COMPLETED', 'WORKING'] as const;

export const taskUpdateInput = z.object({
  taskId: taskIdInput,
  status: z
    .enum(TASK_STATES)
    .describe(
      `CANCELED: stop it (any open task, no token needed). INPUT_REQUIRED: the doer needs input (say what in note). SUBMITTED: input given, or the holder hands it back to the queue. FAILED: give up (note says why). COMPLETED: the holder finishes it (token, and result). The task's current state: record progress (note; on a WORKING task with the claim's token). Others (${TASK_STATES.filter((state) => !(UPDATE_STATUSES as readonly string[]).includes(state)).join(', ')}) are set by the hub only.`,
    ),
  note: z
    .string()
    .max(TASK_LIMITS.noteChars)
    .optional()
    .describe('What happened or what is needed; everyone sees it in the task history and stream.'),
  token: z
    .number()
    .int()
    .positive()
    .optional()
    .describe(
      'The fencing token of your claim (task.lease.token) while the task is WORKING: needed for every move but CANCELED. A stale token is refused: you lost the task, stop working on it.',
    ),
  result: z
    .unknown()
    .optional()
    .describe('With COMPLETED: the result as JSON (default: {"summary": note}).'),
});

export const taskUpdateOutput = z.object({ task: taskViewSchema });

const UPDATE_DESCRIPTION = `Record progress on a task or move it, as its origin (the runtime that created it) or its doer. Everyone sees the change in the task history, their stream and the shared context.
- Cancel: {"taskId": "task_...", "status": "CANCELED", "note": "not needed any more"} works in any open state.
- Progress: {"taskId": "task_...", "status": "WORKING", "note": "tests 40/120 passed", "token": 123} (the task's current state: a note, with the claim's token while WORKING).
- Ask for input: {"status": "INPUT_REQUIRED", "note": "which branch?", "token": 3}; once answered, {"status": "SUBMITTED", "note": "use main"} puts it back in the queue.
- Finish as the holder: {"status": "COMPLETED", "note": "all green", "token": 3, "result": {"passed": 120}}; give up: {"status": "FAILED", "note": "why", "token": 3}.
A WORKING task moves only with the token of its current claim (except CANCELED), so a doer that lost its lease cannot overwrite a newer result. A task waiting for approval (AUTH_REQUIRED) moves on only through an approval.`;

/** task_update's move (also task_status with the seed's `newStatus`). */
async function moveTask(
  context: ToolContext,
  input: z.output<typeof taskUpdateInput>,
): Promise<Task> {
  const { backend } = context;
  if (input.result !== undefined && input.status !== 'COMPLETED') {
    throw new CtxbusError(
      'validation_failed',
      `result goes with COMPLETED only (a ${input.status} move would drop it): say what happened in note`,
    );
  }
  if (input.status === 'CANCELED') return backend.cancelTask(input.taskId, input.note);
  if (input.status === 'COMPLETED') {
    if (input.token === undefined) {
      throw new CtxbusError(
        'validation_failed',
        'COMPLETED needs token: the fencing token of your claim (task.lease.token)',
      );
    }
    return backend.completeTask(input.taskId, {
      token: input.token,
      result: input.result === undefined ? { summary: input.note ?? 'completed' } : input.result,
    });
  }
  return backend.updateTask(input.taskId, {
    state: input.status,
    ...(input.note !== undefined && { note: input.note }),
    ...(input.token !== undefined && { token: input.token }),
  });
}

export function taskUpdateTool(context: ToolContext) {
  return defineTool({
    name: TASK_UPDATE_TOOL,
    title: 'Update a task',
    description: UPDATE_DESCRIPTION,
    input: taskUpdateInput,
    output: taskUpdateOutput,
    annotations: { readOnlyHint: false, destructiveHint: true, openWorldHint: false },
    async run(input) {
      const task = await moveTask(context, input);
      const view = toTaskView(task);
      return { structured: { task: view }, text: `Task now: ${taskText(view)}` };
    },
  });
}
