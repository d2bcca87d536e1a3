import type { Task } from '@ctxbus/core';
import type { TaskEventKind, TaskOutboxEvent } from '../store.js';
import type { TaskEventColumns } from './task-row.js';
import { taskEventFromRow } from './task-row.js';

// The outbox side of a task event (see TaskStore.listTaskOutbox): what made it and the task as
// the change left it, written with the event in the same transaction by every backend.

/** What a backend writes with an event besides the event itself. */
export interface TaskEventOrigin {
  kind: TaskEventKind;
  /** Who asked for the change, when not the event's `by` (a worker's runtime, for example). */
  actor?: string;
}

/** An outbox row as the backends read it (`task` already parsed). */
export interface TaskOutboxColumns extends TaskEventColumns {
  team_id: string;
  kind: TaskEventKind;
  actor: string | null;
  task: Task;
}

/** The event's actor column: the origin's actor, else the event's `by`. */
export function outboxActor(origin: TaskEventOrigin, by: string): string {
  return origin.actor ?? by;
}

export function taskOutboxFromRow(row: TaskOutboxColumns): TaskOutboxEvent {
  return {
    event: taskEventFromRow(row),
    teamId: row.team_id,
    kind: row.kind,
    actor: row.actor ?? row.by,
    task: row.task,
  };
}
