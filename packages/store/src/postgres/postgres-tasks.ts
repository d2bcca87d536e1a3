import type { NewTask, Task, TaskError, TaskEvent } from '@ctxbus/core';
import { CtxbusError, WAITING_TASK_STATES } from '@ctxbus/core';
import type { PoolClient, QueryResultRow } from 'pg';
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
  checkedResult,
  checkLeaseMs,
  HUB_ACTOR,
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
import type { PostgresAudit } from './postgres-audit.js';
import type { PostgresContext, PostgresQuery } from './postgres-connection.js';
import { sqlLiteral } from './postgres-prepare.js';
import { ROW_TYPES, SqlParams } from './postgres-sql.js';
import type { Transaction } from './postgres-subscriptions.js';

// Tasks in PostgreSQL. A change reads its row FOR UPDATE, decides in memory (task-rules.ts)
// and writes the task and its event in the same READ COMMITTED transaction. A claim is one
// statement: the oldest claimable row (routed to the runtime, else unrouted and covered) is
// picked FOR UPDATE SKIP LOCKED, so concurrent claimers, on any number of hubs, each take a
// different task without waiting on each other, each scan walking the queue index in order.

const ms = (column: string, alias = column.replace(/_at$/, '_ms')) =>
  `(extract(epoch FROM ${column}) * 1000)::int8 AS ${alias}`;

const COLUMNS = (t: string) => `${t}.rid, ${t}.id, ${t}.team_id, ${t}.title, ${t}.description,
  ${t}.required_capabilities, ${t}.origin, ${t}.scope, ${t}.input, ${t}.idempotency_key,
  ${t}.state, ${t}.target_runtime, ${t}.routing, ${t}.attempts, ${t}.max_attempts,
  ${t}.ttl_seconds, ${t}.token, ${t}.lease_worker, ${t}.lease_runtime,
  ${ms(`${t}.lease_expires_at`, 'lease_expires_ms')},
  ${ms(`${t}.lease_started_at`, 'lease_started_ms')}, ${t}.result, ${t}.error, ${t}.approval,
  ${ms(`${t}.created_at`, 'created_ms')}, ${ms(`${t}.updated_at`, 'updated_ms')},
  ${ms(`${t}.expires_at`, 'expires_ms')}`;

const EVENT_COLUMNS = `seq, task_id, ${ms('at', 'at_ms')}, from_state, to_state, by, note`;

/** The snapshot an outbox read saw (xid8 as text). */
interface SnapshotColumns {
  snapshot_xmin: string;
  snapshot_xmax: string;
}

/** A transaction id assigned now (the statement's transaction takes one if it has none). */
const NEW_XID_SQL = 'SELECT pg_current_xact_id()::text AS xid';
const MAX_ROLLED_BACK = 1_000;

const json = (value: unknown): string | null => (value === null ? null : JSON.stringify(value));

/** What create_task answers: the new row's id (null: not inserted) and what it counted. */
interface CreatedColumns {
  rid: number | null;
  waiting: number | string;
  connections: number | string;
}

/** What a change writes to a task row: `$1` is the row id, `$2`..`$13` the fields. */
const TASK_SET = `SET state = $2, attempts = $3, token = $4, lease_worker = $5,
  lease_expires_at = $6::timestamptz, result = $7::json, error = $8::json,
  updated_at = $9::timestamptz, expires_at = $10::timestamptz, approval = $11::json,
  lease_runtime = $12, lease_started_at = $13::timestamptz`;

function taskValues(rid: number, mutation: TaskMutation): unknown[] {
  const { task } = mutation;
  return [
    rid,
    task.state,
    task.attempts,
    mutation.token,
    task.lease?.workerId ?? null,
    task.lease?.expiresAt ?? null,
    json(task.result),
    json(task.error),
    task.updatedAt,
    task.expiresAt,
    json(task.approval),
    task.lease?.runtime ?? null,
    task.lease?.startedAt ?? null,
  ];
}

function notFound(id: string): CtxbusError {
  return new CtxbusError('not_found', `no task ${id}`, { details: { taskId: id } });
}

export interface PostgresTasksOptions {
  /** Waiting tasks per team and target runtime (default DEFAULT_MAX_WAITING_TASKS). */
  maxWaitingPerRuntime?: number;
  /** Told each created task's row id (the store's maintenance follows the table's growth). */
  onCreated?: (rid: number) => void;
}

/** Tasks in PostgreSQL. */
export class PostgresTasks implements TaskStore {
  private readonly s: string;
  private readonly query: PostgresQuery;
  private readonly assertOpen: () => void;
  private readonly clock: () => Date;
  private readonly maxWaiting: number;
  private readonly onCreated: (rid: number) => void;
  /** Outbox sequences seen missing: each with an id assigned after the first read that missed it. */
  private readonly gaps = new Map<number, bigint>();
  /** Gaps found rolled back: first missing sequence -> the next sequence that committed. */
  private readonly rolledBack = new Map<number, number>();

  constructor(
    context: PostgresContext,
    private readonly transaction: Transaction,
    private readonly audit: Pick<PostgresAudit, 'appendTaskEventAuditsOn'>,
    options: PostgresTasksOptions = {},
  ) {
    this.s = context.s;
    this.query = context.query;
    this.assertOpen = context.assertOpen;
    this.clock = context.clock;
    this.maxWaiting = options.maxWaitingPerRuntime ?? DEFAULT_MAX_WAITING_TASKS;
    this.onCreated = options.onCreated ?? (() => {});
  }

  private async rows<R extends QueryResultRow>(
    client: PoolClient,
    text: string,
    values: unknown[],
  ): Promise<R[]> {
    return (await client.query<R>({ text, values, types: ROW_TYPES })).rows;
  }

  /**
   * Appends the event with its outbox columns (the relay announces and audits it). No lock:
   * events commit in any order, and the outbox read (`listTaskOutbox`) hands the relay only
   * the prefix of sequences that can no longer be filled. The transaction has written its
   * task row first, so it holds a transaction id before it takes its sequence.
   */
  private async appendEvent(
    client: PoolClient,
    task: Task,
    rid: number,
    event: PlannedTaskEvent,
    origin: TaskEventOrigin,
  ): Promise<TaskEvent> {
    const [row] = await this.rows<TaskEventColumns>(
      client,
      `INSERT INTO ${this.s}.task_events
         (task_rid, task_id, team_id, at, from_state, to_state, by, note, kind, actor, task)
       VALUES ($1, $2, $3, $4::timestamptz, $5, $6, $7, $8, $9, $10, $11::json)
       RETURNING ${EVENT_COLUMNS}`,
      [
        rid,
        task.id,
        task.teamId,
        new Date(event.atMs).toISOString(),
        event.from,
        event.to,
        event.by,
        event.note,
        origin.kind,
        outboxActor(origin, event.by),
        JSON.stringify(task),
      ],
    );
    if (!row) throw new CtxbusError('internal', `task ${task.id}: the event was not stored`);
    return taskEventFromRow(row);
  }

  /** Writes a change of a row this transaction holds locked, with its event (the sweeps). */
  private async write(
    client: PoolClient,
    rid: number,
    mutation: TaskMutation,
    origin: TaskEventOrigin,
  ): Promise<TaskEvent | null> {
    const { task } = mutation;
    await client.query(
      `UPDATE ${this.s}.tasks ${TASK_SET} WHERE rid = $1`,
      taskValues(rid, mutation),
    );
    return mutation.event === null
      ? null
      : this.appendEvent(client, task, rid, mutation.event, origin);
  }

  /**
   * Changes a task in two round trips and no explicit transaction: read the row with its
   * version (`xmin`), decide in memory (task-rules.ts), then one statement writes the task and
   * appends its event only if the row is still that version. A change that lost the race to
   * another (a concurrent complete, a sweep) decides again on the row as it is now, so the
   * rules always see the row they change, as under FOR UPDATE, without holding a lock across
   * round trips. The event's INSERT reads the UPDATE's row, so the statement has written the
   * task row before it takes its sequence (the outbox read relies on it).
   */
  private async mutate(
    action: string,
    teamId: string,
    id: string,
    origin: TaskEventOrigin,
    plan: (stored: StoredTask, nowMs: number) => TaskMutation | null,
  ): Promise<Task> {
    this.assertOpen();
    for (;;) {
      const [row] = await this.query<TaskColumns & { version: string }>(
        action,
        `SELECT t.xmin::text AS version, ${COLUMNS('t')} FROM ${this.s}.tasks t
          WHERE t.team_id = $1 AND t.id = $2`,
        [teamId, id],
        true,
      );
      if (!row) throw notFound(id);
      const stored = taskFromRow(row);
      const mutation = plan(stored, this.clock().getTime());
      if (mutation === null) return stored.task;
      if (await this.writeIfUnchanged(action, stored.rid, row.version, mutation, origin)) {
        return mutation.task;
      }
    }
  }

  /** Writes `mutation` and its event in one statement, if the row is still at `version`. */
  private async writeIfUnchanged(
    action: string,
    rid: number,
    version: string,
    mutation: TaskMutation,
    origin: TaskEventOrigin,
  ): Promise<boolean> {
    const { task, event } = mutation;
    const [row] = await this.query<{ written: number }>(
      action,
      `WITH changed AS (
         UPDATE ${this.s}.tasks ${TASK_SET}
          WHERE rid = $1 AND xmin = $14::text::xid
         RETURNING rid, id, team_id
       ), appended AS (
         INSERT INTO ${this.s}.task_events
           (task_rid, task_id, team_id, at, from_state, to_state, by, note, kind, actor, task)
         SELECT c.rid, c.id, c.team_id, $15::timestamptz, $16, $17, $18, $19, $20, $21, $22::json
           FROM changed c WHERE $23::boolean
         RETURNING seq
       )
       SELECT (SELECT count(*) FROM changed)::int AS written`,
      [
        ...taskValues(rid, mutation),
        version,
        event === null ? null : new Date(event.atMs).toISOString(),
        event?.from ?? null,
        event?.to ?? null,
        event?.by ?? null,
        event?.note ?? null,
        origin.kind,
        event === null ? null : outboxActor(origin, event.by),
        JSON.stringify(task),
        event !== null,
      ],
      true,
    );
    return (row?.written ?? 0) === 1;
  }

  /**
   * One transaction. The per-runtime waiting cap is exact without making creates take turns:
   * a create that waits takes a shared lock on (schema, team, target runtime) and counts the
   * waiting tasks; far from the cap (fewer than the cap minus the server's connection limit,
   * the most creates that can be in flight at once), it goes on beside the others. Near it, it
   * starts again holding the lock exclusively, which waits for the creates in flight and
   * counts after them. The unique index on (team, origin, idempotency key) settles concurrent
   * creates with one key.
   *
   * The usual create is one statement: the schema's create_task function (migration 15) takes
   * the shared lock, counts (its own snapshot, taken once the lock is held) and inserts the row
   * and its event only when far from the cap, with plans kept across calls.
   */
  async createTask(teamId: string, input: NewTask): Promise<CreateTaskOutcome> {
    this.assertOpen();
    const { task, event } = plannedNewTask(teamId, input, this.clock().getTime());
    const waits = (WAITING_TASK_STATES as readonly string[]).includes(task.state);
    const [created] = await this.query<CreatedColumns>(
      'create a task',
      this.createCall(),
      this.createValues(task, event, waits ? this.queueLockKey(task) : null),
      true,
    );
    if (!created) throw new CtxbusError('internal', `task ${task.id}: the create was not answered`);
    const { rid } = created;
    const waiting = Number(created.waiting);
    const connections = Number(created.connections);
    if (rid !== null) {
      this.onCreated(Number(rid));
      return { task, status: 'created' };
    }
    if (task.idempotencyKey !== null) {
      const [found] = await this.query<TaskColumns>(
        'create a task',
        `SELECT ${COLUMNS('t')} FROM ${this.s}.tasks t
          WHERE t.team_id = $1 AND t.origin = $2 AND t.idempotency_key = $3`,
        [task.teamId, task.origin, task.idempotencyKey],
      );
      if (found) return { task: taskFromRow(found).task, status: 'existing' };
    }
    if (waits && waiting >= this.maxWaiting) {
      throw taskLimitError(this.maxWaiting, task.targetRuntime);
    }
    if (!waits || waiting + connections <= this.maxWaiting) {
      // Far from the cap, so the key stopped it: its holder is not visible yet.
      throw new CtxbusError('conflict', 'the idempotency key is being used');
    }
    return this.createNearCap(task, event);
  }

  /** The call of create_task; its values come from createValues. */
  private createCall(): string {
    return `SELECT rid, waiting, connections
              FROM ${this.s}.create_task($1::json, $2, $3, $4::timestamptz, $5, $6, $7)`;
  }

  /**
   * create_task's arguments: the row (its columns by name), the queue lock's key (null: no
   * lock and no count), the cap, and the event.
   */
  private createValues(task: Task, event: PlannedTaskEvent, lockKey: string | null): unknown[] {
    for (const value of [task.title, task.description, task.scope, task.idempotencyKey]) {
      if (value?.includes('\u0000')) {
        throw new CtxbusError('validation_failed', 'text cannot contain the character U+0000');
      }
    }
    const row = {
      id: task.id,
      team_id: task.teamId,
      title: task.title,
      description: task.description,
      required_capabilities: task.requiredCapabilities,
      origin: task.origin,
      scope: task.scope,
      input: task.input,
      idempotency_key: task.idempotencyKey,
      state: task.state,
      target_runtime: task.targetRuntime,
      routing: task.routing,
      max_attempts: task.maxAttempts,
      ttl_seconds: task.ttlSeconds,
      created_at: task.createdAt,
      expires_at: task.expiresAt,
    };
    return [
      JSON.stringify(row),
      lockKey,
      this.maxWaiting,
      new Date(event.atMs).toISOString(),
      event.by,
      event.note,
      outboxActor({ kind: 'created' }, event.by),
    ];
  }

  /** Near the cap: the queue lock held exclusively, then counted and inserted. */
  private async createNearCap(task: Task, event: PlannedTaskEvent): Promise<CreateTaskOutcome> {
    return this.transaction('create a task', async (client): Promise<CreateTaskOutcome> => {
      await client.query({
        text: `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`,
        values: [this.queueLockKey(task)],
      });
      const found = await this.byIdempotencyKey(client, task);
      if (found) return { task: found, status: 'existing' };
      if ((await this.countWaiting(client, task)) >= this.maxWaiting) {
        throw taskLimitError(this.maxWaiting, task.targetRuntime);
      }
      // Counted under the exclusive lock: inserted without the function's own lock and count.
      const [inserted] = await this.rows<CreatedColumns>(
        client,
        this.createCall(),
        this.createValues(task, event, null),
      );
      if (inserted?.rid != null) {
        this.onCreated(Number(inserted.rid));
        return { task, status: 'created' };
      }
      // Another create with the key committed meanwhile.
      const winner = await this.byIdempotencyKey(client, task);
      if (!winner) throw new CtxbusError('conflict', 'the idempotency key is being used');
      return { task: winner, status: 'existing' };
    });
  }

  /** The key of the advisory lock on the team's queue for the task's target runtime. */
  private queueLockKey(task: Task): string {
    return `${this.s}.tasks/${task.teamId}/${task.targetRuntime ?? ''}`;
  }

  /** The team's tasks waiting for the task's target runtime, counted up to the cap. */
  private async countWaiting(client: PoolClient, task: Task): Promise<number> {
    const [count] = await this.rows<{ waiting: number }>(
      client,
      `SELECT count(*)::int8 AS waiting FROM (
         SELECT 1 FROM ${this.s}.tasks
          WHERE team_id = $1 AND state IN ('SUBMITTED', 'AUTH_REQUIRED')
            AND ${task.targetRuntime === null ? 'target_runtime IS NULL AND $2::text IS NULL' : 'target_runtime = $2'}
          LIMIT $3) waiting`,
      [task.teamId, task.targetRuntime, this.maxWaiting],
    );
    return Number(count?.waiting ?? 0);
  }

  /** The team's task created by the same origin with the same idempotency key, if any. */
  private async byIdempotencyKey(client: PoolClient, task: Task): Promise<Task | null> {
    if (task.idempotencyKey === null) return null;
    const [row] = await this.rows<TaskColumns>(
      client,
      `SELECT ${COLUMNS('t')} FROM ${this.s}.tasks t
        WHERE t.team_id = $1 AND t.origin = $2 AND t.idempotency_key = $3`,
      [task.teamId, task.origin, task.idempotencyKey],
    );
    return row ? taskFromRow(row).task : null;
  }

  async getTask(teamId: string, id: string): Promise<TaskWithHistory | null> {
    this.assertOpen();
    const [row] = await this.query<TaskColumns>(
      'read a task',
      `SELECT ${COLUMNS('t')} FROM ${this.s}.tasks t WHERE t.team_id = $1 AND t.id = $2`,
      [teamId, id],
      true,
    );
    if (!row) return null;
    const events = await this.query<TaskEventColumns>(
      'read a task history',
      `SELECT ${EVENT_COLUMNS} FROM ${this.s}.task_events WHERE task_rid = $1 ORDER BY seq`,
      [row.rid],
      true,
    );
    return { task: taskFromRow(row).task, history: events.map(taskEventFromRow) };
  }

  /** The WHERE clauses of `filter` over the team's tasks (alias t), and the team's parameter. */
  private filterClauses(p: SqlParams, teamId: string, filter: TaskFilter) {
    const team = p.add(teamId);
    const clauses = [`t.team_id = ${team}`];
    if (filter.states?.length) clauses.push(`t.state = ANY(${p.add(filter.states)}::text[])`);
    if (filter.targetRuntime !== undefined) {
      clauses.push(`t.target_runtime = ${p.add(filter.targetRuntime)}`);
    }
    if (filter.origin !== undefined) clauses.push(`t.origin = ${p.add(filter.origin)}`);
    return { team, clauses };
  }

  async countTasks(teamId: string, filter: TaskFilter): Promise<number> {
    this.assertOpen();
    const p = new SqlParams();
    const { clauses } = this.filterClauses(p, teamId, filter);
    const [row] = await this.query<{ n: string }>(
      'count tasks',
      `SELECT count(*) AS n FROM ${this.s}.tasks t WHERE ${clauses.join(' AND ')}`,
      p.values,
    );
    return Number(row?.n ?? 0);
  }

  async listTasks(teamId: string, options: ListTasksOptions): Promise<Task[]> {
    this.assertOpen();
    const p = new SqlParams();
    const { team, clauses } = this.filterClauses(p, teamId, options);
    const newest = options.order === 'newest';
    if (options.after !== undefined) {
      const after = `(SELECT a.rid FROM ${this.s}.tasks a
                       WHERE a.team_id = ${team} AND a.id = ${p.add(options.after)})`;
      clauses.push(
        newest
          ? `t.rid < coalesce(${after}, 9223372036854775807)`
          : `t.rid > coalesce(${after}, 0)`,
      );
    }
    const rows = await this.query<TaskColumns>(
      'list tasks',
      `SELECT ${COLUMNS('t')} FROM ${this.s}.tasks t WHERE ${clauses.join(' AND ')}
        ORDER BY t.rid${newest ? ' DESC' : ''} LIMIT ${p.add(options.limit)}`,
      p.values,
    );
    return rows.map((row) => taskFromRow(row).task);
  }

  /** One statement picks and claims the task; its event follows in the same transaction. */
  /**
   * One statement, no explicit transaction: the oldest claimable row is taken and its event
   * appended together. The event's task is the claimed row itself (the outbox reads it with
   * the same `taskFromRow` as every read), and its INSERT reads the UPDATE's row, so the
   * statement has written the task row before it takes its sequence.
   */
  async claimTask(options: ClaimTaskOptions): Promise<Task | null> {
    this.assertOpen();
    const leaseMs = checkLeaseMs(options.leaseMs);
    const nowMs = this.clock().getTime();
    // With a team (the usual case) the scans walk its queue index in claim order.
    const team = options.teamId === undefined ? '$1::text IS NULL' : 'team_id = $1';
    const [row] = await this.query<TaskColumns>(
      'claim a task',
      `WITH routed AS (
         SELECT rid FROM ${this.s}.tasks
          WHERE state = 'SUBMITTED' AND target_runtime = $3
            AND ${team}
            AND (expires_at IS NULL OR expires_at > $2::timestamptz)
          ORDER BY rid LIMIT 1
          FOR UPDATE SKIP LOCKED
       ), unrouted AS (
         SELECT rid FROM ${this.s}.tasks
          WHERE state = 'SUBMITTED' AND target_runtime IS NULL
            AND $4::jsonb IS NOT NULL AND required_capabilities <@ $4::jsonb
            AND ${team}
            AND (expires_at IS NULL OR expires_at > $2::timestamptz)
            AND NOT EXISTS (SELECT 1 FROM routed)
          ORDER BY rid LIMIT 1
          FOR UPDATE SKIP LOCKED
       ), next AS (
         SELECT rid FROM routed UNION ALL SELECT rid FROM unrouted
       ), claimed AS (
         UPDATE ${this.s}.tasks t SET state = 'WORKING', attempts = t.attempts + 1,
           token = $7, lease_worker = $5, lease_runtime = $3,
           lease_expires_at = $2::timestamptz + $6::int8 * interval '1 millisecond',
           lease_started_at = NULL, updated_at = $2::timestamptz, expires_at = NULL
          FROM next WHERE t.rid = next.rid
         RETURNING t.*
       ), picked AS (
         SELECT ${COLUMNS('c')} FROM claimed c
       ), appended AS (
         INSERT INTO ${this.s}.task_events
           (task_rid, task_id, team_id, at, from_state, to_state, by, note, kind, actor, task)
         SELECT p.rid, p.id, p.team_id, $2::timestamptz, 'SUBMITTED', 'WORKING', $5,
                'claimed (attempt ' || p.attempts || ')', 'claimed', $3, row_to_json(p)
           FROM picked p
         RETURNING seq
       )
       SELECT p.* FROM picked p`,
      [
        options.teamId ?? null,
        new Date(nowMs).toISOString(),
        options.runtime,
        options.capabilities === undefined ? null : JSON.stringify(options.capabilities),
        options.workerId,
        leaseMs,
        newFencingToken(),
      ],
      true,
    );
    return row ? taskFromRow(row).task : null;
  }

  async renewLease(
    teamId: string,
    id: string,
    token: number,
    leaseMs: number,
    options: LeaseHolderOptions = {},
  ): Promise<Task> {
    return this.mutate('renew a task lease', teamId, id, { kind: 'updated' }, (stored, now) =>
      plannedRenew(stored, token, leaseMs, now, options.holder),
    );
  }

  /**
   * One statement when the lease holds (the usual case: every command starts with it, so no
   * transaction of four round trips); else the rules, read under the row lock, say why not (or
   * keep the first start).
   */
  async startTask(
    teamId: string,
    id: string,
    token: number,
    options: LeaseHolderOptions = {},
  ): Promise<Task> {
    this.assertOpen();
    const [row] = await this.query<TaskColumns>(
      'start a task',
      `UPDATE ${this.s}.tasks t SET lease_started_at = $1::timestamptz, updated_at = $1::timestamptz
        WHERE t.team_id = $2 AND t.id = $3 AND t.state = 'WORKING' AND t.token = $4
          AND t.lease_started_at IS NULL AND t.lease_expires_at > $1::timestamptz
          AND ($5::text IS NULL OR t.lease_runtime = $5)
        RETURNING ${COLUMNS('t')}`,
      [this.clock().toISOString(), teamId, id, token, options.holder ?? null],
      true,
    );
    if (row) return taskFromRow(row).task;
    return this.mutate('start a task', teamId, id, { kind: 'updated' }, (stored, now) =>
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
    const held = await this.completeHeld(teamId, id, token, checkedResult(result), options);
    if (held) return held;
    return this.mutate('complete a task', teamId, id, origin, (stored, now) =>
      plannedComplete(stored, token, result, now, options.holder),
    );
  }

  /**
   * The usual complete in one statement: the task is WORKING under this token, its lease has
   * not ended and (with a holder) is that runtime's. It is what `plannedComplete` decides for
   * such a row (COMPLETED, the result, no lease, the event by the lease's worker), written with
   * its event as the claim is. Null when the row is not so; the rules then read it and say why
   * (or answer a repeated report).
   */
  private async completeHeld(
    teamId: string,
    id: string,
    token: number,
    result: unknown,
    options: CompleteTaskOptions,
  ): Promise<Task | null> {
    this.assertOpen();
    const [row] = await this.query<TaskColumns>(
      'complete a task',
      `WITH held AS (
         SELECT rid, lease_worker FROM ${this.s}.tasks
          WHERE team_id = $1 AND id = $2 AND state = 'WORKING' AND token = $3
            AND lease_expires_at > $4::timestamptz AND ($5::text IS NULL OR lease_runtime = $5)
       ), changed AS (
         UPDATE ${this.s}.tasks t SET state = 'COMPLETED', result = $6::json, error = NULL,
           lease_worker = NULL, lease_expires_at = NULL, lease_runtime = NULL,
           lease_started_at = NULL, updated_at = $4::timestamptz, expires_at = NULL
          FROM held h
          WHERE t.rid = h.rid AND t.state = 'WORKING' AND t.token = $3
            AND t.lease_expires_at > $4::timestamptz
         RETURNING t.*, coalesce(h.lease_worker, $8) AS held_by
       ), picked AS (
         SELECT ${COLUMNS('c')} FROM changed c
       ), appended AS (
         INSERT INTO ${this.s}.task_events
           (task_rid, task_id, team_id, at, from_state, to_state, by, note, kind, actor, task)
         SELECT p.rid, p.id, p.team_id, $4::timestamptz, 'WORKING', 'COMPLETED', c.held_by, NULL,
                'completed', coalesce($7, c.held_by), row_to_json(p)
           FROM picked p JOIN changed c ON c.rid = p.rid
         RETURNING seq
       )
       SELECT p.* FROM picked p`,
      [
        teamId,
        id,
        token,
        this.clock().toISOString(),
        options.holder ?? null,
        json(result),
        options.actor ?? null,
        HUB_ACTOR,
      ],
      true,
    );
    return row ? taskFromRow(row).task : null;
  }

  async failTask(
    teamId: string,
    id: string,
    token: number,
    error: TaskError,
    options: FailTaskOptions = {},
  ): Promise<Task> {
    const origin = { kind: 'failed' as const, ...(options.actor && { actor: options.actor }) };
    return this.mutate('fail a task', teamId, id, origin, (stored, now) =>
      plannedFail(stored, token, error, options.retry ?? false, now, options.holder),
    );
  }

  async updateTask(teamId: string, id: string, patch: UpdateTaskPatch): Promise<Task> {
    return this.mutate('update a task', teamId, id, { kind: 'updated' }, (stored, now) =>
      plannedUpdate(stored, patch, now),
    );
  }

  async cancelTask(teamId: string, id: string, by: string, note?: string): Promise<Task> {
    return this.mutate('cancel a task', teamId, id, { kind: 'canceled' }, (stored, now) =>
      plannedCancel(stored, by, note, now),
    );
  }

  /** Rows due at `now`, locked (skipping those another hub's sweep holds), changed by `plan`. */
  private async sweep(
    action: string,
    where: string,
    now: string,
    limit: number,
    origin: TaskEventOrigin,
    plan: (stored: StoredTask, nowMs: number) => TaskMutation,
  ): Promise<TaskTransition[]> {
    this.assertOpen();
    const nowMs = Date.parse(now);
    return this.transaction(action, async (client) => {
      const rows = await this.rows<TaskColumns>(
        client,
        `SELECT ${COLUMNS('t')} FROM ${this.s}.tasks t WHERE ${where}
          ORDER BY t.rid LIMIT $2 FOR UPDATE SKIP LOCKED`,
        [new Date(nowMs).toISOString(), limit],
      );
      const transitions: TaskTransition[] = [];
      for (const row of rows) {
        const stored = taskFromRow(row);
        const mutation = plan(stored, nowMs);
        const event = await this.write(client, stored.rid, mutation, origin);
        if (event) transitions.push({ task: mutation.task, event });
      }
      return transitions;
    });
  }

  async expireLeases(now: string, options: ExpireTasksOptions = {}): Promise<TaskTransition[]> {
    return this.sweep(
      'expire task leases',
      `t.state = 'WORKING' AND t.lease_expires_at <= $1::timestamptz`,
      now,
      options.limit ?? 1_000,
      { kind: 'lease-expired' },
      plannedLeaseExpiry,
    );
  }

  async expireWaiting(now: string, options: ExpireTasksOptions = {}): Promise<TaskTransition[]> {
    return this.sweep(
      'expire waiting tasks',
      `t.state = 'SUBMITTED' AND t.expires_at <= $1::timestamptz`,
      now,
      options.limit ?? 1_000,
      { kind: 'wait-expired' },
      plannedWaitExpiry,
    );
  }

  async expireApprovals(now: string, options: ExpireTasksOptions = {}): Promise<TaskTransition[]> {
    return this.sweep(
      'expire approval requests',
      `t.state = 'AUTH_REQUIRED' AND t.expires_at <= $1::timestamptz`,
      now,
      options.limit ?? 1_000,
      { kind: 'approval-expired' },
      plannedApprovalExpiry,
    );
  }

  /**
   * The events past `afterSeq` in sequence order, up to the first sequence that may still
   * commit. Appends take no lock, so a sequence can be missing from a read because its
   * transaction is still running (it will commit later, behind events after it) or because it
   * rolled back (it never will). Every appending transaction holds its transaction id before
   * it takes its sequence, so its id is older than any id assigned after a read that missed
   * the sequence: the first such read takes a new transaction id as the gap's bound. A later
   * snapshot whose xmin has passed the bound (and whose xmax shows the bound ended, so every
   * transaction still running below it is in the snapshot) has no holder running: a sequence
   * still missing then rolled back and is passed over. (A snapshot's xmax is not a bound: it is
   * the newest ended id plus one, and a running transaction can hold an id at or above it.)
   */
  async listTaskOutbox(afterSeq: number, limit: number): Promise<TaskOutboxEvent[]> {
    this.assertOpen();
    const rows = await this.query<TaskOutboxColumns & SnapshotColumns>(
      'read the task outbox',
      this.outboxSql('$1', '$2'),
      [afterSeq, limit],
      true,
    );
    return this.committedPrefix(afterSeq, rows, () =>
      this.query<{ xid: string }>('bound a task outbox gap', NEW_XID_SQL, []),
    );
  }

  /** The outbox read past `after` (an expression), up to `limit` rows, with its snapshot. */
  private outboxSql(after: string, limit: string): string {
    return `SELECT ${EVENT_COLUMNS}, ${outboxColumns(`${this.s}.task_events`)},
              pg_snapshot_xmin(pg_current_snapshot())::text AS snapshot_xmin,
              pg_snapshot_xmax(pg_current_snapshot())::text AS snapshot_xmax
         FROM ${this.s}.task_events e WHERE e.seq > ${after} AND e.kind IS NOT NULL
        ORDER BY e.seq LIMIT ${limit}`;
  }

  /**
   * The rows up to the first sequence that may still commit (see listTaskOutbox); `newXid`
   * assigns a transaction id after the read (a gap's bound).
   */
  private async committedPrefix(
    afterSeq: number,
    rows: readonly (TaskOutboxColumns & SnapshotColumns)[],
    newXid: () => Promise<readonly { xid: string }[]>,
  ): Promise<TaskOutboxEvent[]> {
    const events: TaskOutboxEvent[] = [];
    let expected = afterSeq + 1;
    for (const row of rows) {
      const seq = Number(row.seq);
      if (seq !== expected && !(await this.gapClosed(expected, seq, row, newXid))) break;
      events.push(taskOutboxFromRow(row));
      expected = seq + 1;
    }
    for (const gap of this.gaps.keys()) if (gap < expected) this.gaps.delete(gap);
    return events;
  }

  /** Whether the missing sequences from `from` up to `seq` have ended without committing. */
  private async gapClosed(
    from: number,
    seq: number,
    row: SnapshotColumns,
    newXid: () => Promise<readonly { xid: string }[]>,
  ): Promise<boolean> {
    if ((this.rolledBack.get(from) ?? 0) >= seq) return true;
    const bound = this.gaps.get(from);
    if (bound === undefined) {
      const [assigned] = await newXid();
      if (assigned) this.gaps.set(from, BigInt(assigned.xid));
      return false;
    }
    if (BigInt(row.snapshot_xmin) < bound || BigInt(row.snapshot_xmax) <= bound) return false;
    // Remembered for reads from before it (a report's); a few, as rollbacks are rare.
    this.rolledBack.set(from, seq);
    if (this.rolledBack.size > MAX_ROLLED_BACK) {
      for (const oldest of this.rolledBack.keys()) {
        this.rolledBack.delete(oldest);
        break;
      }
    }
    return true;
  }

  async derivedIdSecret(): Promise<string> {
    this.assertOpen();
    const [row] = await this.query<{ value: string }>(
      'read the derived-id secret',
      `SELECT value FROM ${this.s}.hub_secrets WHERE name = 'derived-ids'`,
      [],
      true,
    );
    if (!row) throw new CtxbusError('internal', 'the database has no derived-id secret');
    return row.value;
  }

  async taskRelayCursor(): Promise<TaskRelayCursor> {
    this.assertOpen();
    const [row] = await this.query<TaskRelayCursor>(
      'read the task relay cursor',
      `SELECT seq, since FROM ${this.s}.task_relay WHERE name = 'tasks'`,
      [],
      true,
    );
    return row ?? { seq: 0, since: 0 };
  }

  /**
   * One transaction on one connection, in four round trips whatever the batch's size: BEGIN
   * with the relay lock, the cursor and the outbox read in one message; `work` (the status
   * items, written on their own path); the audit marks, heads and the cursor's move; the
   * records; then COMMIT. A failure anywhere rolls back the audit and the cursor
   * together: the next pass repeats the batch, whose item writes are then no-ops.
   */
  async relayTaskBatch(
    limit: number,
    work: (events: readonly TaskOutboxEvent[]) => Promise<readonly TaskEventAudit[]>,
  ): Promise<RelayedTaskBatch | null> {
    this.assertOpen();
    const cursor = `(SELECT seq FROM ${this.s}.task_relay WHERE name = 'tasks')`;
    const opening = [
      `SELECT pg_try_advisory_xact_lock(hashtextextended(${sqlLiteral(`${this.s}.task_relay`)}, 0)) AS held`,
      `SELECT coalesce(${cursor}, 0)::int8 AS seq`,
      this.outboxSql(`coalesce(${cursor}, 0)`, String(Math.max(1, Math.trunc(limit)))),
    ].join(';\n');
    return this.transaction(
      'relay task events',
      async (client, [lock, at, outbox]) => {
        if (!(lock?.rows[0] as { held?: boolean } | undefined)?.held) return null;
        const afterSeq = Number((at?.rows[0] as { seq?: number } | undefined)?.seq ?? 0);
        const rows = (outbox?.rows ?? []) as (TaskOutboxColumns & SnapshotColumns)[];
        const events = await this.committedPrefix(afterSeq, rows, () =>
          this.rows<{ xid: string }>(client, NEW_XID_SQL, []),
        );
        const last = events.at(-1);
        if (!last) return { events: 0, audited: [] };
        const entries = await work(events);
        const records = await this.audit.appendTaskEventAuditsOn(client, entries, last.event.seq);
        return {
          events: events.length,
          audited: entries.map((entry, index) => ({
            teamId: entry.teamId,
            records: records[index] ?? [],
          })),
        };
      },
      opening,
    );
  }
}
