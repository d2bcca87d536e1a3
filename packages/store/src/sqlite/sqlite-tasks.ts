import type { SQLInputValue } from 'node:sqlite';
import type { NewTask, Task, TaskApproval, TaskError, TaskEvent } from '@ctxbus/core';
import { CtxbusError, isTerminalTaskState, WAITING_TASK_STATES } from '@ctxbus/core';
import type { TaskEventOrigin, TaskOutboxColumns } from '../rows/task-outbox-row.js';
import { outboxActor, outboxColumns, taskOutboxFromRow } from '../rows/task-outbox-row.js';
import type { StoredTask, TaskColumns, TaskEventColumns } from '../rows/task-row.js';
import { taskEventFromRow, taskFromRow } from '../rows/task-row.js';
import type {
  ClaimTaskOptions,
  CompleteTaskOptions,
  CreateTaskOutcome,
  ExpireTasksOptions,
  FailTaskOptions,
  LeaseHolderOptions,
  ListTasksOptions,
  RelayedTaskBatch,
  TaskEventAudit,
  TaskFilter,
  TaskOutboxEvent,
  TaskRelayCursor,
  TaskStore,
  TaskTransition,
  TaskWithHistory,
  UpdateTaskPatch,
} from '../store.js';
import { DEFAULT_MAX_WAITING_TASKS, taskLimitError } from '../store.js';
import type { PlannedTaskEvent, TaskMutation } from '../write/task-rules.js';
import {
  checkLeaseMs,
  newFencingToken,
  plannedApprovalExpiry,
  plannedCancel,
  plannedComplete,
  plannedFail,
  plannedLeaseExpiry,
  plannedNewTask,
  plannedRenew,
  plannedStart,
  plannedUpdate,
  plannedWaitExpiry,
} from '../write/task-rules.js';
import type { SqliteAudit } from './sqlite-audit.js';
import type { SqliteConnection } from './sqlite-connection.js';

// Tasks in the embedded store (times as epoch milliseconds, JSON as text). Every change runs
// in one IMMEDIATE transaction: SQLite has one writer at a time, across processes too, so a
// row read in it cannot change before the write (the claim is a single UPDATE ... RETURNING).

interface TaskRow
  extends Omit<
    TaskColumns,
    'required_capabilities' | 'input' | 'routing' | 'result' | 'error' | 'approval'
  > {
  required_capabilities: string;
  input: string | null;
  routing: string | null;
  result: string | null;
  error: string | null;
  approval: string | null;
}

const COLUMNS = `rid, id, team_id, title, description, required_capabilities, origin, scope,
  input, idempotency_key, state, target_runtime, routing, attempts, max_attempts, ttl_seconds,
  token, lease_worker, lease_runtime, lease_expires_at AS lease_expires_ms,
  lease_started_at AS lease_started_ms, result, error, approval,
  created_at AS created_ms, updated_at AS updated_ms, expires_at AS expires_ms`;

const json = <T>(text: string | null): T | null => (text === null ? null : (JSON.parse(text) as T));
const text = (value: unknown): string | null => (value === null ? null : JSON.stringify(value));
const ms = (iso: string | null): number | null => (iso === null ? null : Date.parse(iso));

function rowToStored(row: TaskRow): StoredTask {
  return taskFromRow({
    ...row,
    required_capabilities: JSON.parse(row.required_capabilities) as string[],
    input: json<Task['input']>(row.input),
    routing: json<Task['routing']>(row.routing),
    result: json<Task['result']>(row.result),
    error: json<TaskError>(row.error),
    approval: json<TaskApproval>(row.approval),
  });
}

function notFound(id: string): CtxbusError {
  return new CtxbusError('not_found', `no task ${id}`, { details: { taskId: id } });
}

export interface SqliteTasksOptions {
  /** Waiting tasks per team and target runtime (default DEFAULT_MAX_WAITING_TASKS). */
  maxWaitingPerRuntime?: number;
}

/** Tasks of the embedded store, over its connection. */
/** The WHERE clauses of `filter` over the team's tasks, with their parameters. */
function filterClauses(teamId: string, filter: TaskFilter) {
  const clauses = ['team_id = ?'];
  const params: SQLInputValue[] = [teamId];
  if (filter.states?.length) {
    clauses.push(`state IN (${filter.states.map(() => '?').join(', ')})`);
    params.push(...filter.states);
  }
  if (filter.targetRuntime !== undefined) {
    clauses.push('target_runtime = ?');
    params.push(filter.targetRuntime);
  }
  if (filter.origin !== undefined) {
    clauses.push('origin = ?');
    params.push(filter.origin);
  }
  return { clauses, params };
}

export class SqliteTasks implements TaskStore {
  private readonly maxWaiting: number;
  private relayHeld = false;

  constructor(
    private readonly connection: SqliteConnection,
    private readonly audit: Pick<SqliteAudit, 'appendTaskEventAuditsIn'>,
    options: SqliteTasksOptions = {},
  ) {
    this.maxWaiting = options.maxWaitingPerRuntime ?? DEFAULT_MAX_WAITING_TASKS;
  }

  private get nowMs(): number {
    return this.connection.clock().getTime();
  }

  private one(sql: string, ...params: SQLInputValue[]): TaskRow | undefined {
    return this.connection.statement(sql).get(...params) as TaskRow | undefined;
  }

  /** Appends the event with its outbox columns: the relay announces and audits it. */
  private appendEvent(
    task: Task,
    rid: number,
    event: PlannedTaskEvent,
    origin: TaskEventOrigin,
  ): TaskEvent {
    const row = this.connection
      .statement(
        `INSERT INTO task_events
           (task_rid, task_id, team_id, at, from_state, to_state, by, note, kind, actor, task)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq`,
      )
      .get(
        rid,
        task.id,
        task.teamId,
        event.atMs,
        event.from,
        event.to,
        event.by,
        event.note,
        origin.kind,
        outboxActor(origin, event.by),
        JSON.stringify(task),
      ) as { seq: number };
    return {
      seq: row.seq,
      taskId: task.id,
      at: new Date(event.atMs).toISOString(),
      from: event.from,
      to: event.to,
      by: event.by,
      note: event.note,
    };
  }

  /** Writes a mutation's task and event (inside the caller's transaction). */
  private write(rid: number, mutation: TaskMutation, origin: TaskEventOrigin): TaskEvent | null {
    const { task } = mutation;
    this.connection
      .statement(
        `UPDATE tasks SET state = ?, attempts = ?, token = ?, lease_worker = ?,
           lease_runtime = ?, lease_expires_at = ?, lease_started_at = ?, result = ?, error = ?,
           approval = ?, updated_at = ?, expires_at = ?
         WHERE rid = ?`,
      )
      .run(
        task.state,
        task.attempts,
        mutation.token,
        task.lease?.workerId ?? null,
        task.lease?.runtime ?? null,
        ms(task.lease?.expiresAt ?? null),
        ms(task.lease?.startedAt ?? null),
        text(task.result),
        text(task.error),
        text(task.approval),
        Date.parse(task.updatedAt),
        ms(task.expiresAt),
        rid,
      );
    return mutation.event === null ? null : this.appendEvent(task, rid, mutation.event, origin);
  }

  /** Reads the task in a transaction, applies `plan`, writes what it returns. */
  private mutate(
    teamId: string,
    id: string,
    origin: TaskEventOrigin,
    plan: (stored: StoredTask, nowMs: number) => TaskMutation | null,
  ): Task {
    this.connection.assertOpen();
    return this.connection.transaction(() => {
      const row = this.one(`SELECT ${COLUMNS} FROM tasks WHERE team_id = ? AND id = ?`, teamId, id);
      if (!row) throw notFound(id);
      const stored = rowToStored(row);
      const mutation = plan(stored, this.nowMs);
      if (mutation === null) return stored.task;
      this.write(stored.rid, mutation, origin);
      return mutation.task;
    });
  }

  async createTask(teamId: string, input: NewTask): Promise<CreateTaskOutcome> {
    this.connection.assertOpen();
    const { task, event } = plannedNewTask(teamId, input, this.nowMs);
    return this.connection.transaction(() => {
      if (task.idempotencyKey !== null) {
        const existing = this.one(
          `SELECT ${COLUMNS} FROM tasks WHERE team_id = ? AND origin = ? AND idempotency_key = ?`,
          teamId,
          task.origin,
          task.idempotencyKey,
        );
        if (existing) return { task: rowToStored(existing).task, status: 'existing' as const };
      }
      if ((WAITING_TASK_STATES as readonly string[]).includes(task.state)) {
        const { waiting } = this.connection
          .statement(
            `SELECT count(*) AS waiting FROM tasks
              WHERE team_id = ? AND target_runtime IS ? AND state IN ('SUBMITTED', 'AUTH_REQUIRED')`,
          )
          .get(teamId, task.targetRuntime) as { waiting: number };
        if (waiting >= this.maxWaiting) throw taskLimitError(this.maxWaiting, task.targetRuntime);
      }
      const { rid } = this.connection
        .statement(
          `INSERT INTO tasks (id, team_id, title, description, required_capabilities, origin,
             scope, input, idempotency_key, state, target_runtime, routing, attempts,
             max_attempts, ttl_seconds, token, lease_worker, lease_expires_at, result, error,
             created_at, updated_at, expires_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, 0, NULL, NULL, NULL, NULL, ?, ?, ?)
           RETURNING rid`,
        )
        .get(
          task.id,
          teamId,
          task.title,
          task.description,
          JSON.stringify(task.requiredCapabilities),
          task.origin,
          task.scope,
          text(task.input),
          task.idempotencyKey,
          task.state,
          task.targetRuntime,
          text(task.routing),
          task.maxAttempts,
          task.ttlSeconds,
          Date.parse(task.createdAt),
          Date.parse(task.updatedAt),
          ms(task.expiresAt),
        ) as { rid: number };
      this.appendEvent(task, rid, event, { kind: 'created' });
      return { task, status: 'created' as const };
    });
  }

  async getTask(teamId: string, id: string): Promise<TaskWithHistory | null> {
    this.connection.assertOpen();
    const row = this.one(`SELECT ${COLUMNS} FROM tasks WHERE team_id = ? AND id = ?`, teamId, id);
    if (!row) return null;
    const events = this.connection
      .statement(
        `SELECT seq, task_id, at AS at_ms, from_state, to_state, by, note
           FROM task_events WHERE task_rid = ? ORDER BY seq`,
      )
      .all(row.rid) as unknown as TaskEventColumns[];
    return { task: rowToStored(row).task, history: events.map(taskEventFromRow) };
  }

  async countTasks(teamId: string, filter: TaskFilter): Promise<number> {
    this.connection.assertOpen();
    const { clauses, params } = filterClauses(teamId, filter);
    const row = this.connection
      .statement(`SELECT count(*) AS n FROM tasks WHERE ${clauses.join(' AND ')}`)
      .get(...params) as { n: number } | undefined;
    return Number(row?.n ?? 0);
  }

  async listTasks(teamId: string, options: ListTasksOptions): Promise<Task[]> {
    this.connection.assertOpen();
    const { clauses, params } = filterClauses(teamId, options);
    const newest = options.order === 'newest';
    if (options.after !== undefined) {
      clauses.push(
        newest
          ? 'rid < coalesce((SELECT rid FROM tasks WHERE team_id = ? AND id = ?), 9223372036854775807)'
          : 'rid > coalesce((SELECT rid FROM tasks WHERE team_id = ? AND id = ?), 0)',
      );
      params.push(teamId, options.after);
    }
    // Open states only (the shared bundle, task://active): few rows, so seek them through the
    // queue index and sort, rather than walk the team's whole history in rid order.
    const openOnly =
      options.states?.length && options.states.every((state) => !isTerminalTaskState(state));
    const key = openOnly ? '+rid' : 'rid';
    const order = newest ? `${key} DESC` : key;
    const rows = this.connection
      .statement(
        `SELECT ${COLUMNS} FROM tasks WHERE ${clauses.join(' AND ')} ORDER BY ${order} LIMIT ?`,
      )
      .all(...params, options.limit) as unknown as TaskRow[];
    return rows.map((row) => rowToStored(row).task);
  }

  async claimTask(options: ClaimTaskOptions): Promise<Task | null> {
    this.connection.assertOpen();
    const leaseMs = checkLeaseMs(options.leaseMs);
    const nowMs = this.nowMs;
    const capabilities =
      options.capabilities === undefined ? null : JSON.stringify(options.capabilities);
    // With a team (the usual case) the scans walk its queue index in claim order.
    const team = options.teamId === undefined ? '' : 'AND team_id = ?4';
    return this.connection.transaction(() => {
      const row = this.one(
        `UPDATE tasks SET state = 'WORKING', attempts = attempts + 1, token = ?7,
           lease_worker = ?1, lease_runtime = ?5, lease_expires_at = ?2 + ?3,
           lease_started_at = NULL, updated_at = ?2, expires_at = NULL
         WHERE rid = coalesce(
           (SELECT rid FROM tasks
             WHERE state = 'SUBMITTED' AND target_runtime = ?5
               ${team}
               AND (expires_at IS NULL OR expires_at > ?2)
             ORDER BY rid LIMIT 1),
           (SELECT rid FROM tasks
             WHERE state = 'SUBMITTED' AND target_runtime IS NULL AND ?6 IS NOT NULL
               ${team}
               AND (expires_at IS NULL OR expires_at > ?2)
               AND NOT EXISTS (
                 SELECT 1 FROM json_each(tasks.required_capabilities) AS needed
                  WHERE needed.value NOT IN (SELECT value FROM json_each(?6)))
             ORDER BY rid LIMIT 1))
         RETURNING ${COLUMNS}`,
        options.workerId,
        nowMs,
        leaseMs,
        options.teamId ?? null,
        options.runtime,
        capabilities,
        newFencingToken(),
      );
      if (!row) return null;
      const stored = rowToStored(row);
      this.appendEvent(
        stored.task,
        stored.rid,
        {
          from: 'SUBMITTED',
          to: 'WORKING',
          by: options.workerId,
          note: `claimed (attempt ${stored.task.attempts})`,
          atMs: nowMs,
        },
        { kind: 'claimed', actor: options.runtime },
      );
      return stored.task;
    });
  }

  async renewLease(
    teamId: string,
    id: string,
    token: number,
    leaseMs: number,
    options: LeaseHolderOptions = {},
  ): Promise<Task> {
    return this.mutate(teamId, id, { kind: 'updated' }, (stored, now) =>
      plannedRenew(stored, token, leaseMs, now, options.holder),
    );
  }

  /**
   * One statement when the lease holds (the usual case: every command starts with it); else
   * the rules, read under the transaction, say why not (or keep the first start).
   */
  async startTask(
    teamId: string,
    id: string,
    token: number,
    options: LeaseHolderOptions = {},
  ): Promise<Task> {
    this.connection.assertOpen();
    const nowMs = this.nowMs;
    const row = this.one(
      `UPDATE tasks SET lease_started_at = ?1, updated_at = ?1
        WHERE team_id = ?2 AND id = ?3 AND state = 'WORKING' AND token = ?4
          AND lease_started_at IS NULL AND lease_expires_at > ?1
          AND (?5 IS NULL OR lease_runtime = ?5)
        RETURNING ${COLUMNS}`,
      nowMs,
      teamId,
      id,
      token,
      options.holder ?? null,
    );
    if (row) return rowToStored(row).task;
    return this.mutate(teamId, id, { kind: 'updated' }, (stored, now) =>
      plannedStart(stored, token, now, options.holder),
    );
  }

  async completeTask(
    teamId: string,
    id: string,
    token: number,
    result: unknown,
    options: CompleteTaskOptions = {},
  ): Promise<Task> {
    const origin = { kind: 'completed' as const, ...(options.actor && { actor: options.actor }) };
    return this.mutate(teamId, id, origin, (stored, now) =>
      plannedComplete(stored, token, result, now, options.holder),
    );
  }

  async failTask(
    teamId: string,
    id: string,
    token: number,
    error: TaskError,
    options: FailTaskOptions = {},
  ): Promise<Task> {
    const origin = { kind: 'failed' as const, ...(options.actor && { actor: options.actor }) };
    return this.mutate(teamId, id, origin, (stored, now) =>
      plannedFail(stored, token, error, options.retry ?? false, now, options.holder),
    );
  }

  async updateTask(teamId: string, id: string, patch: UpdateTaskPatch): Promise<Task> {
    return this.mutate(teamId, id, { kind: 'updated' }, (stored, now) =>
      plannedUpdate(stored, patch, now),
    );
  }

  async cancelTask(teamId: string, id: string, by: string, note?: string): Promise<Task> {
    return this.mutate(teamId, id, { kind: 'canceled' }, (stored, now) =>
      plannedCancel(stored, by, note, now),
    );
  }

  private sweep(
    where: string,
    now: string,
    limit: number,
    origin: TaskEventOrigin,
    plan: (stored: StoredTask, nowMs: number) => TaskMutation,
  ): TaskTransition[] {
    this.connection.assertOpen();
    const nowMs = Date.parse(now);
    return this.connection.transaction(() => {
      const rows = this.connection
        .statement(`SELECT ${COLUMNS} FROM tasks WHERE ${where} ORDER BY rid LIMIT ?`)
        .all(nowMs, limit) as unknown as TaskRow[];
      const transitions: TaskTransition[] = [];
      for (const row of rows) {
        const stored = rowToStored(row);
        const mutation = plan(stored, nowMs);
        const event = this.write(stored.rid, mutation, origin);
        if (event) transitions.push({ task: mutation.task, event });
      }
      return transitions;
    });
  }

  async expireLeases(now: string, options: ExpireTasksOptions = {}): Promise<TaskTransition[]> {
    return this.sweep(
      "state = 'WORKING' AND lease_expires_at <= ?",
      now,
      options.limit ?? 1_000,
      { kind: 'lease-expired' },
      plannedLeaseExpiry,
    );
  }

  async expireWaiting(now: string, options: ExpireTasksOptions = {}): Promise<TaskTransition[]> {
    return this.sweep(
      "state = 'SUBMITTED' AND expires_at <= ?",
      now,
      options.limit ?? 1_000,
      { kind: 'wait-expired' },
      plannedWaitExpiry,
    );
  }

  async expireApprovals(now: string, options: ExpireTasksOptions = {}): Promise<TaskTransition[]> {
    return this.sweep(
      "state = 'AUTH_REQUIRED' AND expires_at <= ?",
      now,
      options.limit ?? 1_000,
      { kind: 'approval-expired' },
      plannedApprovalExpiry,
    );
  }

  async listTaskOutbox(afterSeq: number, limit: number): Promise<TaskOutboxEvent[]> {
    this.connection.assertOpen();
    const rows = this.connection
      .statement(
        `SELECT e.seq, e.task_id, e.at AS at_ms, e.from_state, e.to_state, e.by, e.note,
                ${outboxColumns('task_events')}
           FROM task_events e WHERE e.seq > ? AND e.kind IS NOT NULL ORDER BY e.seq LIMIT ?`,
      )
      .all(afterSeq, limit) as unknown as (Omit<TaskOutboxColumns, 'task'> & { task: string })[];
    return rows.map((row) => taskOutboxFromRow({ ...row, task: JSON.parse(row.task) as Task }));
  }

  async derivedIdSecret(): Promise<string> {
    this.connection.assertOpen();
    const row = this.connection
      .statement(`SELECT value FROM hub_secrets WHERE name = 'derived-ids'`)
      .get() as { value: string } | undefined;
    if (!row) throw new CtxbusError('internal', 'the database has no derived-id secret');
    return row.value;
  }

  async taskRelayCursor(): Promise<TaskRelayCursor> {
    this.connection.assertOpen();
    const row = this.connection
      .statement(`SELECT seq, since FROM task_relay WHERE name = 'tasks'`)
      .get() as TaskRelayCursor | undefined;
    return row ?? { seq: 0, since: 0 };
  }

  /**
   * One relay per store at a time. Processes sharing the file may each relay: the status
   * item's id and the audit mark make the second pass write nothing. The records and the
   * cursor's move commit in one transaction.
   */
  async relayTaskBatch(
    limit: number,
    work: (events: readonly TaskOutboxEvent[]) => Promise<readonly TaskEventAudit[]>,
  ): Promise<RelayedTaskBatch | null> {
    if (this.relayHeld) return null;
    this.relayHeld = true;
    try {
      const events = await this.listTaskOutbox((await this.taskRelayCursor()).seq, limit);
      const last = events.at(-1);
      if (!last) return { events: 0, audited: [] };
      const entries = await work(events);
      const records = this.connection.transaction(() => {
        const appended = this.audit.appendTaskEventAuditsIn(entries);
        this.connection
          .statement(`UPDATE task_relay SET seq = max(seq, ?) WHERE name = 'tasks'`)
          .run(last.event.seq);
        return appended;
      });
      return {
        events: events.length,
        audited: entries.map((entry, index) => ({
          teamId: entry.teamId,
          records: records[index] ?? [],
        })),
      };
    } finally {
      this.relayHeld = false;
    }
  }
}
