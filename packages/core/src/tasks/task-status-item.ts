import type { ContextItem, ContextItemInput, Urgency } from '../items/context-item.js';
import { shownJson, visibleText } from '../shared/visible-text.js';
import type { Task, TaskState } from './tasks.js';
import { isTerminalTaskState, TASK_STATES } from './tasks.js';

// A task's status item: how the hub announces a task change to every runtime's shared context
// and live stream (tag `task`, scope key `task:<id>`, the task in `runtimeOptions.task`), and
// how a reader decodes one. One encoder and one decoder for the hub, the adapters and the
// shared context, with the state sets they decide on.

/** The tag every task status item carries; a worker's stream filters on it. */
export const TASK_TAG = 'task';

/** States where waiting longer does not help: a human or the requester must act. */
export const NEEDS_SOMEONE_TASK_STATES = ['AUTH_REQUIRED', 'INPUT_REQUIRED'] as const;

export function taskNeedsSomeone(state: TaskState): boolean {
  return (NEEDS_SOMEONE_TASK_STATES as readonly TaskState[]).includes(state);
}

/** The scope key of a task's status items. */
export function taskScopeKey(taskId: string): string {
  return `task:${taskId}`;
}

/** What a task status item reports (its `runtimeOptions.task`). */
export interface TaskStatusReport {
  taskId: string;
  state: TaskState;
  targetRuntime: string | null;
  origin: string | null;
  /** What the task needs (null: an item written before status items said). */
  requiredCapabilities: string[] | null;
}

const URGENCY: Record<TaskState, Urgency> = {
  SUBMITTED: 'background',
  WORKING: 'background',
  COMPLETED: 'background',
  CANCELED: 'background',
  INPUT_REQUIRED: 'attention',
  FAILED: 'attention',
  AUTH_REQUIRED: 'blocking',
  // Ended: its origin should notice, but it blocks nobody (a blocking line would stay in every
  // runtime's "blocked" section for good).
  REJECTED: 'attention',
};

/** Tags the shared context reads as "finished" (DONE_TAGS) for terminal states. */
const DONE_TAG: Partial<Record<TaskState, string>> = {
  COMPLETED: 'completed',
  CANCELED: 'cancelled',
  FAILED: 'closed',
  REJECTED: 'closed',
};

/** What opens a running command's output tail in a status item's content (a fence closes it). */
const OUTPUT_OPENING = '\nOutput so far:\n```\n';

function statusText(task: Task, note: string | null, output?: string): string {
  const lines = [
    `State: ${task.state}${task.targetRuntime ? ` (runtime: ${task.targetRuntime})` : ''}`,
    `Needs: ${task.requiredCapabilities.join(', ')}; from ${task.origin}`,
  ];
  const reason = typeof task.routing?.reason === 'string' ? task.routing.reason : null;
  if (reason) lines.push(`Routing: ${reason}`);
  // A new task's event note is its routing reason: said once.
  if (note && note !== reason) lines.push(`Note: ${note}`);
  const request = task.approval?.request as
    | { argv?: string[]; cwd?: string; scriptHash?: string | null }
    | undefined;
  if (task.approval && request?.argv) {
    lines.push(
      `Approval ${task.approval.status}: ${shownJson(request.argv)} in ${shownJson(request.cwd ?? '?')}${request.scriptHash ? ` (script sha256 ${request.scriptHash.slice(0, 12)}…)` : ''}`,
    );
    if (task.approval.status === 'pending') {
      lines.push(
        `Answer by ${task.approval.expiresAt}: ctxbus approve ${task.id}  |  ctxbus deny ${task.id}`,
      );
    }
  }
  if (task.error) lines.push(`Error (${task.error.code}): ${task.error.message}`);
  // The tail holds no fence of its own, so the first one after it closes it (taskOutputOf).
  if (output) lines.push(`${OUTPUT_OPENING}${output.replaceAll('```', "'''")}\n\`\`\``);
  if (task.description) lines.push('', task.description);
  return lines.join('\n');
}

/**
 * The status item a task change is published as (`note`, `output`: what else it says;
 * `outputEnd`: how many characters the command has written, `output` being the last of them).
 */
export function taskStatusItem(
  task: Task,
  note: string | null,
  output?: string,
  outputEnd?: number,
): ContextItemInput {
  const done = DONE_TAG[task.state];
  return {
    type: 'status',
    // An agent's words, where people read them: nothing hidden or reordered (visibleText).
    title: `Task ${task.state}: ${visibleText(task.title)}`.slice(0, 300),
    content: statusText(task, note, output),
    scope: 'task',
    scopeKey: taskScopeKey(task.id),
    relevanceTags: [
      TASK_TAG,
      `task-${task.state.toLowerCase().replaceAll('_', '-')}`,
      ...(done ? [done] : []),
    ],
    urgency: URGENCY[task.state],
    sourceTaskId: task.id,
    runtimeOptions: {
      task: {
        id: task.id,
        state: task.state,
        targetRuntime: task.targetRuntime,
        origin: task.origin,
        requiredCapabilities: task.requiredCapabilities,
        ...(output && outputEnd !== undefined && { outputEnd }),
      },
    },
  };
}

/** The key of a task's output line (a running command's latest output). */
export const taskOutputKey = (taskId: string): string => `task-output:${taskId}`;

/**
 * A running command's output as its output line shows it: its tail, and (when the worker said)
 * where that tail ends in all it has written. Null for any other item.
 */
export function taskOutputOf(
  item: Pick<ContextItem, 'key' | 'content' | 'runtimeOptions'>,
): { tail: string; end: number | null } | null {
  if (!item.key?.startsWith(taskOutputKey(''))) return null;
  const at = item.content.indexOf(OUTPUT_OPENING);
  if (at < 0) return null;
  const start = at + OUTPUT_OPENING.length;
  // The tail holds no ``` (statusText replaces them), so the first fence after it closes it.
  const close = item.content.indexOf('\n```', start);
  if (close < 0) return null;
  const task = (item.runtimeOptions as { task?: { outputEnd?: unknown } } | null)?.task;
  const end = task?.outputEnd;
  return {
    tail: item.content.slice(start, close),
    end: typeof end === 'number' && Number.isInteger(end) && end >= 0 ? end : null,
  };
}

function stringsOrNull(value: unknown): string[] | null {
  if (!Array.isArray(value) || !value.every((entry) => typeof entry === 'string')) return null;
  return value;
}

/** The task a status item reports, or null when it is no task status item. */
export function taskStatusOf(
  item: Pick<ContextItem, 'type' | 'relevanceTags' | 'runtimeOptions'>,
): TaskStatusReport | null {
  if (item.type !== 'status' || !item.relevanceTags.includes(TASK_TAG)) return null;
  const task = (item.runtimeOptions as { task?: Record<string, unknown> } | null)?.task;
  if (!task || typeof task.id !== 'string' || typeof task.state !== 'string') return null;
  if (!(TASK_STATES as readonly string[]).includes(task.state)) return null;
  return {
    taskId: task.id,
    state: task.state as TaskState,
    targetRuntime: typeof task.targetRuntime === 'string' ? task.targetRuntime : null,
    origin: typeof task.origin === 'string' ? task.origin : null,
    requiredCapabilities: stringsOrNull(task.requiredCapabilities),
  };
}

/** A task's status item seen on a stream, decoded. */
export interface TaskStatusEvent extends TaskStatusReport {
  seq: number;
  item: ContextItem;
}

/** What `followTaskStatus` reads: a stream's events (the clients' StreamEvent). */
export interface TaskStreamEvent {
  event: string;
  seq: number;
  item?: ContextItem;
}

/**
 * Follows one task on a stream (opened with the task's scope key and `TASK_TAG`): yields each
 * of its status items as it arrives, decoded, and ends after the first whose state `until`
 * accepts (default: a terminal state). The one follower of the clients: the status item
 * carries the state, so following a task reads nothing per event.
 */
export async function* followTaskStatus(
  events: AsyncIterable<TaskStreamEvent>,
  taskId: string,
  until: (state: TaskState) => boolean = isTerminalTaskState,
): AsyncGenerator<TaskStatusEvent> {
  for await (const event of events) {
    if (event.event !== 'context-added' || !event.item) continue;
    const status = taskStatusOf(event.item);
    if (!status || status.taskId !== taskId) continue;
    yield { seq: event.seq, ...status, item: event.item };
    if (until(status.state)) return;
  }
}
