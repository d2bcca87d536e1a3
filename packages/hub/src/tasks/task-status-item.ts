import type { ContextItemInput, Task, TaskState, Urgency } from '@ctxbus/core';
import { stableId } from '@ctxbus/core';
import type { TaskOutboxEvent } from '@ctxbus/store';

// A task change as the status item every runtime's shared context and live stream sees (tag
// `task`, scope key `task:<id>`). The relay writes one per task event, with an id derived from
// the event: writing it again after a crash is the same write (the store answers `existing`),
// never a second announcement.

/** The runtime name the hub writes its own status items as (sweeps: lost leases, expiries). */
export const HUB_RUNTIME = 'ctxbus';

/** The tag every task status item carries; a worker's stream filters on it. */
export const TASK_TAG = 'task';

const URGENCY: Record<TaskState, Urgency> = {
  SUBMITTED: 'background',
  WORKING: 'background',
  COMPLETED: 'background',
  CANCELED: 'background',
  INPUT_REQUIRED: 'attention',
  FAILED: 'attention',
  AUTH_REQUIRED: 'blocking',
  REJECTED: 'blocking',
};

/** Tags the shared context reads as "finished" (DONE_TAGS) for terminal states. */
const DONE_TAG: Partial<Record<TaskState, string>> = {
  COMPLETED: 'completed',
  CANCELED: 'cancelled',
  FAILED: 'closed',
  REJECTED: 'closed',
};

function statusText(task: Task, note: string | null, output?: string): string {
  const lines = [
    `State: ${task.state}${task.targetRuntime ? ` (runtime: ${task.targetRuntime})` : ''}`,
    `Needs: ${task.requiredCapabilities.join(', ')}; from ${task.origin}`,
  ];
  const reason = typeof task.routing?.reason === 'string' ? task.routing.reason : null;
  if (reason) lines.push(`Routing: ${reason}`);
  if (note) lines.push(`Note: ${note}`);
  const request = task.approval?.request as
    | { argv?: string[]; cwd?: string; scriptHash?: string | null }
    | undefined;
  if (task.approval && request?.argv) {
    lines.push(
      `Approval ${task.approval.status}: \`${request.argv.join(' ')}\` in ${request.cwd ?? '?'}${request.scriptHash ? ` (script sha256 ${request.scriptHash.slice(0, 12)}…)` : ''}`,
    );
    if (task.approval.status === 'pending') {
      lines.push(
        `Answer by ${task.approval.expiresAt}: ctxbus approve ${task.id}  |  ctxbus deny ${task.id}`,
      );
    }
  }
  if (task.error) lines.push(`Error (${task.error.code}): ${task.error.message}`);
  if (output) lines.push('', 'Output so far:', '```', output.replaceAll('```', "'''"), '```');
  if (task.description) lines.push('', task.description);
  return lines.join('\n');
}

/** The status item a task change is published as (one live per task: its scope key). */
export function taskStatusItem(task: Task, note: string | null, output?: string): ContextItemInput {
  const done = DONE_TAG[task.state];
  return {
    type: 'status',
    title: `Task ${task.state}: ${task.title}`.slice(0, 300),
    content: statusText(task, note, output),
    scope: 'task',
    scopeKey: `task:${task.id}`,
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
      },
    },
  };
}

/** The id of the status item that announces task event `seq`: the same on every retry. */
export function taskEventItemId(taskId: string, seq: number): string {
  return stableId('ctxbus-task-event', taskId, String(seq));
}

/** What the status item of a task event says besides the task's state. */
function eventNote({ kind, event, task }: TaskOutboxEvent): string | null {
  if (kind === 'created') {
    const routing = (task.routing ?? {}) as { approvalReason?: string | null; reason?: string };
    return routing.approvalReason ?? routing.reason ?? null;
  }
  if (kind === 'claimed') return `claimed by ${task.lease?.workerId ?? event.by}`;
  if (kind === 'completed') return null;
  if (event.from === 'AUTH_REQUIRED' && task.approval?.status === 'approved') {
    return `approved by ${event.by}`;
  }
  if (event.from === 'AUTH_REQUIRED' && task.approval?.status === 'denied') {
    return `denied by ${event.by}`;
  }
  return event.note;
}

/** The runtime a task event's status item is written as: the actor's, else the hub's or origin's. */
function eventAuthor({ kind, actor, task }: TaskOutboxEvent): string {
  if (kind === 'lease-expired' || kind === 'wait-expired' || kind === 'approval-expired') {
    return HUB_RUNTIME;
  }
  return actor.startsWith('admin:') ? task.origin : actor;
}

/** The status item that announces one task event, and who it is written as. */
export function taskEventStatusItem(outbox: TaskOutboxEvent): {
  item: ContextItemInput;
  author: string;
} {
  return {
    item: {
      ...taskStatusItem(outbox.task, eventNote(outbox)),
      id: taskEventItemId(outbox.task.id, outbox.event.seq),
    },
    author: eventAuthor(outbox),
  };
}
