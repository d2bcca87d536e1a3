import type { RoutingDecision, Task, TaskEvent } from '@ctxbus/core/contract';
import { shownJson, sliceText } from '@ctxbus/core/contract';
import { z } from 'zod';

// What the task tools and task://active show of a task: the fields an agent acts on, and the
// same in words. Results are shown in full in structured content and cut in text.

/** Characters of a result (as JSON) or description shown in text. */
export const TASK_TEXT_CHARS = 1_500;

/** History entries task_status shows (the newest). */
export const TASK_HISTORY_ENTRIES = 10;

export const taskViewSchema = z.object({
  id: z.string(),
  title: z.string(),
  description: z.string().nullable(),
  state: z
    .string()
    .describe(
      'A2A 1.0 state: SUBMITTED, WORKING, INPUT_REQUIRED, AUTH_REQUIRED, COMPLETED, FAILED, CANCELED or REJECTED.',
    ),
  requiredCapabilities: z.array(z.string()),
  origin: z.string().describe('The runtime that created the task.'),
  targetRuntime: z.string().nullable().describe('The runtime that does it (null: none can).'),
  attempts: z.number().int(),
  maxAttempts: z.number().int(),
  lease: z
    .object({
      workerId: z.string(),
      runtime: z.string().nullable(),
      token: z.number().int().nullable(),
      expiresAt: z.string(),
    })
    .nullable()
    .describe(
      'While WORKING: who holds it (worker and runtime), and the fencing token task_update needs (shown to the holding runtime only; null for everyone else).',
    ),
  result: z.unknown().describe('The result once COMPLETED.'),
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
  approval: z
    .object({
      status: z.string().describe('pending, approved, denied or expired.'),
      argv: z.array(z.string()),
      cwd: z.string().nullable(),
      expiresAt: z.string(),
      decidedBy: z.string().nullable(),
    })
    .nullable()
    .describe(
      'The exact command a human must approve (ctxbus approve|deny TASK), once a worker asked.',
    ),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type TaskView = z.output<typeof taskViewSchema>;

export const taskEventViewSchema = z.object({
  at: z.string(),
  from: z.string().nullable(),
  to: z.string(),
  by: z.string(),
  note: z.string().nullable(),
});

export const routingViewSchema = z.object({
  kind: z
    .string()
    .describe(
      'native: the origin does it; via-api / via-mcp: the origin through an API or MCP server; proxy: another runtime does it; queue: waits for a capable runtime that is offline; escalate: no runtime can (REJECTED).',
    ),
  runtime: z.string().nullable(),
  reason: z.string(),
  requiresApproval: z.boolean(),
  approvalReason: z.string().nullable(),
  candidates: z.array(z.object({ runtime: z.string(), kept: z.boolean(), reason: z.string() })),
});
export type RoutingView = z.output<typeof routingViewSchema>;

export function toTaskView(task: Task): TaskView {
  return {
    id: task.id,
    title: task.title,
    description: task.description,
    state: task.state,
    requiredCapabilities: task.requiredCapabilities,
    origin: task.origin,
    targetRuntime: task.targetRuntime,
    attempts: task.attempts,
    maxAttempts: task.maxAttempts,
    lease: task.lease,
    result: task.result,
    error: task.error,
    approval: task.approval
      ? {
          status: task.approval.status,
          argv: Array.isArray(task.approval.request.argv)
            ? task.approval.request.argv.map(String)
            : [],
          cwd: typeof task.approval.request.cwd === 'string' ? task.approval.request.cwd : null,
          expiresAt: task.approval.expiresAt,
          decidedBy: task.approval.decidedBy,
        }
      : null,
    createdAt: task.createdAt,
    updatedAt: task.updatedAt,
  };
}

export function toEventView(event: TaskEvent) {
  return { at: event.at, from: event.from, to: event.to, by: event.by, note: event.note };
}

export function toRoutingView(routing: RoutingDecision): RoutingView {
  return {
    kind: routing.kind,
    runtime: routing.runtime,
    reason: routing.reason,
    requiresApproval: routing.requiresApproval,
    approvalReason: routing.approvalReason,
    candidates: routing.candidates.map(({ runtime, kept, reason }) => ({ runtime, kept, reason })),
  };
}

function cut(text: string, chars = TASK_TEXT_CHARS): string {
  return text.length <= chars ? text : `${sliceText(text, chars).trimEnd()}…`;
}

/** Where the router sent the task, in one sentence an agent can relay to its user. */
export function routingSentence(routing: RoutingDecision, origin: string): string {
  const runtime = routing.runtime ?? 'no runtime';
  const how: Record<RoutingDecision['kind'], string> = {
    native: `${runtime} does it itself (native)`,
    'via-api': `${runtime} does it through an API (via-api)`,
    'via-mcp': `${runtime} does it through an MCP server (via-mcp)`,
    proxy: `handed to ${runtime}, whose worker runs it (proxy)`,
    queue: `queued for ${runtime}, which can do it but is offline: it runs when a worker of ${runtime} connects (queue)`,
    escalate: 'no runtime can do it: the task is REJECTED and a human must step in (escalate)',
  };
  const approval = routing.requiresApproval
    ? ` A human must approve it first${routing.approvalReason ? `: ${routing.approvalReason}` : ''}.`
    : ' No approval needed.';
  const from =
    routing.kind === 'native' || routing.kind.startsWith('via-') ? '' : ` (from ${origin})`;
  return `Routing: ${how[routing.kind]}${from}. Why: ${routing.reason}.${approval}`.replace(
    /\.\./g,
    '.',
  );
}

/** One line: state, title, who does it. */
export function taskHeadline(task: TaskView): string {
  const where = task.targetRuntime ? ` on ${task.targetRuntime}` : '';
  const held = task.lease ? `, held by ${task.lease.workerId}` : '';
  return `${task.state}: ${task.title} [${task.id}]${where}${held}`;
}

/** The task in words: state, attempts, result or error, and the newest history entries. */
export function taskText(task: TaskView, history: readonly TaskEvent[] = []): string {
  const lines = [
    taskHeadline(task),
    `Needs ${task.requiredCapabilities.join(', ')}; from ${task.origin}; attempt ${task.attempts} of ${task.maxAttempts}; updated ${task.updatedAt}.`,
  ];
  if (task.description) lines.push(`Description: ${cut(task.description, 400)}`);
  if (task.state === 'COMPLETED')
    lines.push(`Result: ${cut(JSON.stringify(task.result) ?? 'null')}`);
  if (task.error) lines.push(`Error (${task.error.code}): ${cut(task.error.message, 600)}`);
  if (task.approval) {
    const command = `${cut(shownJson(task.approval.argv), 400)}${task.approval.cwd ? ` in ${shownJson(task.approval.cwd)}` : ''}`;
    lines.push(
      task.approval.status === 'pending'
        ? `Approval pending until ${task.approval.expiresAt}: ${command} (a human answers: ctxbus approve|deny ${task.id})`
        : `Approval ${task.approval.status}${task.approval.decidedBy ? ` by ${task.approval.decidedBy}` : ''}: ${command}`,
    );
  }
  const recent = history.slice(-TASK_HISTORY_ENTRIES);
  if (recent.length > 0) {
    lines.push(
      `History (newest last${history.length > recent.length ? `, ${recent.length} of ${history.length}` : ''}):`,
    );
    for (const event of recent) {
      const note = event.note ? `: ${cut(event.note, 200)}` : '';
      lines.push(`- ${event.at} ${event.from ?? 'created'} -> ${event.to} by ${event.by}${note}`);
    }
  }
  return lines.join('\n');
}
