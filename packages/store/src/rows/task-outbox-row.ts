import type { Task } from '@ctxbus/core';
import type { TaskEventKind, TaskOutboxEvent } from '../store.js';
import type { TaskColumns, TaskEventColumns } from './task-row.js';
import { taskEventFromRow, taskFromRow } from './task-row.js';

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
  /** The Task, or (a claim on PostgreSQL, written in SQL) the task row as `COLUMNS` reads it. */
  task: Task | TaskColumns;
  previous_seq: number | null;
}

/** The outbox columns besides the event's own, for `table` (task_events) aliased `e`. */
export const outboxColumns = (table: string) => `e.team_id, e.kind, e.actor, e.task,
  (SELECT max(p.seq) FROM ${table} p WHERE p.task_rid = e.task_rid AND p.seq < e.seq)
    AS previous_seq`;

/** The event's actor column: the origin's actor, else the event's `by`. */
export function outboxActor(origin: TaskEventOrigin, by: string): string {
  return origin.actor ?? by;
}

export function taskOutboxFromRow(row: TaskOutboxColumns): TaskOutboxEvent {
  return {
    event: taskEventFromRow(row),
    previousSeq: row.previous_seq,
    teamId: row.team_id,
    kind: row.kind,
    actor: row.actor ?? row.by,
    task: 'team_id' in row.task ? taskFromRow(row.task).task : row.task,
  };
}
