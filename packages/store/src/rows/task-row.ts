import type { Scope, Task, TaskApproval, TaskError, TaskEvent, TaskState } from '@ctxbus/core';

// One mapping between a tasks row and the Task, for every backend (which decode times to epoch
// milliseconds and JSON columns to values before calling it).

export interface TaskColumns {
  rid: number;
  id: string;
  team_id: string;
  title: string;
  description: string | null;
  required_capabilities: string[];
  origin: string;
  scope: Scope | null;
  input: Task['input'];
  idempotency_key: string | null;
  state: TaskState;
  target_runtime: string | null;
  routing: Task['routing'];
  attempts: number;
  max_attempts: number;
  ttl_seconds: number | null;
  /** The fencing token of the latest claim (random; 0 before the first); kept when the lease ends. */
  token: number;
  lease_worker: string | null;
  /** The runtime that claimed the task (null: claimed before holders were recorded). */
  lease_runtime: string | null;
  lease_expires_ms: number | null;
  /** When the holder said it was starting the command (null: not yet, or no lease). */
  lease_started_ms: number | null;
  result: Task['result'];
  error: TaskError | null;
  approval: TaskApproval | null;
  created_ms: number;
  updated_ms: number;
  expires_ms: number | null;
}

/** A task as stored: the Task, its row id (claim order) and its current fencing token. */
export interface StoredTask {
  rid: number;
  token: number;
  task: Task;
}

export interface TaskEventColumns {
  seq: number;
  task_id: string;
  at_ms: number;
  from_state: TaskState | null;
  to_state: TaskState;
  by: string;
  note: string | null;
}

const iso = (ms: number): string => new Date(ms).toISOString();
const isoOrNull = (ms: number | null): string | null => (ms === null ? null : iso(ms));

export function taskFromRow(row: TaskColumns): StoredTask {
  return {
    rid: row.rid,
    token: row.token,
    task: {
      id: row.id,
      teamId: row.team_id,
      title: row.title,
      description: row.description,
      requiredCapabilities: row.required_capabilities,
      origin: row.origin,
      scope: row.scope,
      input: row.input,
      idempotencyKey: row.idempotency_key,
      state: row.state,
      targetRuntime: row.target_runtime,
      routing: row.routing,
      attempts: row.attempts,
      maxAttempts: row.max_attempts,
      ttlSeconds: row.ttl_seconds,
      lease:
        row.lease_worker === null || row.lease_expires_ms === null
          ? null
          : {
              workerId: row.lease_worker,
              runtime: row.lease_runtime,
              token: row.token,
              expiresAt: iso(row.lease_expires_ms),
              startedAt: isoOrNull(row.lease_started_ms),
            },
      result: row.result,
      error: row.error,
      approval: row.approval,
      createdAt: iso(row.created_ms),
      updatedAt: iso(row.updated_ms),
      expiresAt: isoOrNull(row.expires_ms),
    },
  };
}

export function taskEventFromRow(row: TaskEventColumns): TaskEvent {
  return {
    seq: row.seq,
    taskId: row.task_id,
    at: iso(row.at_ms),
    from: row.from_state,
    to: row.to_state,
    by: row.by,
    note: row.note,
  };
}
