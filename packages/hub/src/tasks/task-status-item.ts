import type { ContextItemInput } from '@ctxbus/core';
import { taskStatusItem } from '@ctxbus/core';
import type { TaskOutboxEvent } from '@ctxbus/store';
import type { DerivedIds } from './derived-ids.js';

// A task change as the status item every runtime's shared context and live stream sees (tag
// `task`, scope key `task:<id>`). The relay writes one per task event, with an id derived from
// the event (DerivedIds): writing it again after a crash is the same write (the store answers
// `existing`), never a second announcement.

/** The runtime name the hub writes its own status items as (sweeps: lost leases, expiries). */
export const HUB_RUNTIME = 'ctxbus';

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
export function taskEventStatusItem(
  outbox: TaskOutboxEvent,
  ids: DerivedIds,
): {
  item: ContextItemInput;
  author: string;
} {
  return {
    item: {
      ...taskStatusItem(outbox.task, eventNote(outbox)),
      id: ids.taskEvent(outbox.task.id, outbox.event.seq),
    },
    author: eventAuthor(outbox),
  };
}
