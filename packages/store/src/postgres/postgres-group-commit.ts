import type { ContextItem, Viewer } from '@ctxbus/core';
import type { PoolClient } from 'pg';
import type { WriteOutcome } from '../store.js';
import type { PostgresTarget } from './postgres-connection.js';
import { isStatementError, toStoreError } from './postgres-errors.js';
import type { PreparedItem } from './postgres-prepare.js';
import { CHANGE_INSERT_COLUMNS, ITEM_INSERT_COLUMNS, sqlLiteral } from './postgres-prepare.js';
import type { ItemRow } from './postgres-sql.js';
import { ITEM_COLUMNS, ROW_TYPES, rowToItem } from './postgres-sql.js';
import type { TermStatistics } from './postgres-term-stats.js';
import type { PendingRows } from './postgres-write-plan.js';
import { PostgresWritePlan } from './postgres-write-plan.js';

type Operation =
  | {
      kind: 'write';
      items: readonly PreparedItem[];
      resolve: (outcomes: WriteOutcome[]) => void;
      reject: (error: unknown) => void;
    }
  | {
      kind: 'consume';
      viewer: Viewer;
      id: string;
      resolve: (item: ContextItem | null) => void;
      reject: (error: unknown) => void;
    };

/** Most characters of row data one group commit sends (one write always goes). */
const MAX_GROUP_BYTES = 16_000_000;

export interface GroupCommitOptions {
  target: PostgresTarget;
  clock: () => Date;
  /** Most items one group commit takes; the rest wait for the next. */
  maxGroupItems: number;
  termStats: TermStatistics;
  /** Called after each commit with the newest sequence number. */
  onCommitted: (seq: number) => void;
  /** NOTIFY channel that carries each commit's newest sequence to other processes. */
  channel: string;
}

/**
 * The write path of the PostgreSQL store: every change (items added, superseded, consumed).
 *
 * Sequence numbers. Every transaction that changes items first locks the single row of
 * `counter` with SELECT ... FOR UPDATE, takes its numbers from it, and writes the new value
 * back before COMMIT; the row lock is held until the commit. So the transaction holding N
 * commits before the one that gets N+1 can even start: numbers are gapless (a rolled-back
 * transaction never wrote its numbers back) and become visible in order, whichever process
 * wrote them, which the change feed relies on (a reader that has seen N will next see N+1,
 * never N+2 first). A PostgreSQL SEQUENCE would be cheaper but is neither: nextval() is not
 * rolled back, and two transactions commit in any order. The cost, one writing transaction at
 * a time per database, is what group commit pays back.
 *
 * Group commit. Writes and consumptions that arrive while a transaction is in flight wait and
 * then share the next one. Under the counter lock nothing else can change the rows involved,
 * so the decisions (idempotency, conflicts, supersession, key holders) are taken in memory
 * from one read (WritePlan) and persisted with one statement. A write the rules refuse fails
 * alone, before anything is sent. Should PostgreSQL refuse the combined statement, the same
 * operations are replayed in a new transaction, each in its own SAVEPOINT, so that only the
 * offending write fails.
 */
export class GroupCommit {
  private readonly target: PostgresTarget;
  private readonly s: string;
  private readonly clock: () => Date;
  private readonly maxGroupItems: number;
  private readonly termStats: TermStatistics;
  private readonly onCommitted: (seq: number) => void;
  private readonly channel: string;
  private queue: Operation[] = [];
  private draining: Promise<void> | null = null;
  constructor(options: GroupCommitOptions) {
    this.target = options.target;
    this.s = options.target.quotedSchema;
    this.clock = options.clock;
    this.maxGroupItems = Math.max(1, options.maxGroupItems);
    this.termStats = options.termStats;
    this.onCommitted = options.onCommitted;
    this.channel = options.channel;
  }

  /** Resolves after the commit that stored the items. */
  write(items: readonly PreparedItem[]): Promise<WriteOutcome[]> {
    return new Promise((resolve, reject) => {
      this.enqueue({ kind: 'write', items, resolve, reject });
    });
  }

  /** The item after the commit that recorded the consumption; null when not visible. */
  consume(viewer: Viewer, id: string): Promise<ContextItem | null> {
    return new Promise((resolve, reject) => {
      this.enqueue({ kind: 'consume', viewer, id, resolve, reject });
    });
  }

  /** Waits until everything queued so far has been committed (or has failed). */
  async drained(): Promise<void> {
    while (this.draining) await this.draining;
  }

  private enqueue(operation: Operation): void {
    this.queue.push(operation);
    // Operations arriving in the same event-loop turn go together; later ones wait for the
    // transaction in flight and then share the next.
    this.draining ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() =>
      this.drain(),
    );
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        // Bounded in items and in bytes of statement (content is up to 100k characters).
        let items = 0;
        let bytes = 0;
        let take = 0;
        for (const operation of this.queue) {
          const size = operation.kind === 'write' ? operation.items.length : 1;
          const length =
            operation.kind === 'write'
              ? operation.items.reduce((sum, item) => sum + item.fixedColumns.length, 0)
              : 0;
          if (take > 0 && (items + size > this.maxGroupItems || bytes + length > MAX_GROUP_BYTES))
            break;
          items += size;
          bytes += length;
          take += 1;
        }
        await this.flush(this.queue.splice(0, take));
      }
    } finally {
      this.draining = null;
    }
  }

  private async flush(batch: Operation[]): Promise<void> {
    let client: PoolClient;
    try {
      client = await this.target.pool.connect();
    } catch (error) {
      const failure = toStoreError(error, 'connect', this.target.location);
      for (const operation of batch) operation.reject(failure);
      return;
    }
    let broken: Error | undefined;
    try {
      let settle = await this.runGroup(client, batch, false);
      // PostgreSQL refused the combined statement: replay with one savepoint per operation.
      if (settle === null) {
        this.target.logger.warn(
          { operations: batch.length },
          'postgres: group commit refused, retrying each write in its own savepoint',
        );
        settle = await this.runGroup(client, batch, true);
      }
      for (const done of settle ?? []) done();
    } catch (error) {
      if (!isStatementError(error)) {
        broken = error instanceof Error ? error : new Error(String(error));
      }
      await client.query('ROLLBACK').catch(() => {});
      const failure = toStoreError(error, 'write', this.target.location);
      for (const operation of batch) operation.reject(failure);
    } finally {
      client.release(broken);
    }
  }

  /**
   * One transaction for `batch`, in two round trips: BEGIN, the counter lock and the read of
   * every row the batch's rules need; then the combined write and COMMIT. Each goes as one
   * simple-protocol message of several statements (values inlined as escaped literals, since
   * that protocol takes no parameters). Every statement takes its own snapshot, so the read
   * sees everything committed before the lock was granted. Returns the callbacks that settle
   * each operation (run after COMMIT), or null when PostgreSQL refused the combined write and
   * the batch must be replayed `isolated`: one SAVEPOINT per operation, so that only the
   * refused one fails.
   */
  private async runGroup(
    client: PoolClient,
    batch: readonly Operation[],
    isolated: boolean,
  ): Promise<(() => void)[] | null> {
    const nowMs = this.clock().getTime();
    const statements = [
      'BEGIN ISOLATION LEVEL READ COMMITTED',
      `SELECT seq FROM ${this.s}.counter FOR UPDATE`,
      this.loadSql(batch, nowMs),
    ];
    if (isolated) statements.push('SAVEPOINT operation');
    const results = (await client.query({
      text: statements.join(';\n'),
      types: ROW_TYPES,
    })) as unknown as [unknown, { rows: { seq: number }[] }, { rows: ItemRow[] }];
    const seq = results[1].rows[0]?.seq ?? 0;
    const loaded = results[2].rows.map((row) => ({
      item: rowToItem(row),
      inputHash: row.input_hash,
    }));
    const plan = new PostgresWritePlan(seq, loaded);
    const settle: (() => void)[] = [];
    const terms: PendingRows['terms'] = [];
    for (const operation of batch) {
      const mark = plan.mark();
      let result: unknown;
      try {
        result =
          operation.kind === 'write'
            ? plan.write(operation.items, nowMs)
            : plan.consume(operation.viewer, operation.id, nowMs);
      } catch (error) {
        settle.push(() => operation.reject(error));
        continue;
      }
      if (isolated && plan.hasPending) {
        try {
          const rows = plan.pending();
          await client.query(
            `${this.persistSql(rows)}; RELEASE SAVEPOINT operation; SAVEPOINT operation`,
          );
          plan.markPersisted();
          terms.push(...rows.terms);
        } catch (error) {
          if (!isStatementError(error)) throw error;
          await client.query('ROLLBACK TO SAVEPOINT operation');
          plan.rollbackTo(mark);
          const failure = toStoreError(error, 'write', this.target.location);
          settle.push(() => operation.reject(failure));
          continue;
        }
      }
      settle.push(() => (operation.resolve as (value: unknown) => void)(result));
    }
    // One notification per transaction, carrying only the newest sequence (a hint: listeners
    // read the change log from their own cursor). NOTIFY is transactional: sent on COMMIT.
    const notify =
      plan.currentSeq > seq
        ? `SELECT pg_notify(${sqlLiteral(this.channel)}, '${plan.currentSeq}');\n`
        : '';
    if (isolated || !plan.hasPending) {
      await client.query(`${notify}COMMIT`);
    } else {
      const rows = plan.pending();
      try {
        await client.query(`${this.persistSql(rows)};\n${notify}COMMIT`);
      } catch (error) {
        if (!isStatementError(error)) throw error;
        await client.query('ROLLBACK');
        return null;
      }
      terms.push(...rows.terms);
    }
    this.termStats.add(terms);
    this.onCommitted(plan.currentSeq);
    return settle;
  }

  /**
   * The read of a batch, run under the counter lock: rows with the ids it writes, supersedes
   * or consumes, each in the team that names it (ids are unique within a team; another team's
   * item with the same id is never read, so it changes nothing, not even the timing), and the
   * live rows holding the keys it writes.
   */
  private loadSql(batch: readonly Operation[], nowMs: number): string {
    const ids = new Set<string>();
    const keys: string[] = [];
    const pair = (id: string, teamId: string) => `(${sqlLiteral(id)}, ${sqlLiteral(teamId)})`;
    for (const operation of batch) {
      if (operation.kind === 'consume') {
        ids.add(pair(operation.id, operation.viewer.teamId));
        continue;
      }
      for (const { item } of operation.items) {
        ids.add(pair(item.id, item.teamId));
        if (item.supersedes !== null) ids.add(pair(item.supersedes, item.teamId));
        if (item.key !== null) keys.push(`(${sqlLiteral(item.teamId)}, ${sqlLiteral(item.key)})`);
      }
    }
    const s = this.s;
    const byId = `SELECT ${ITEM_COLUMNS} FROM ${s}.items i
                   WHERE (i.id, i.team_id) IN (VALUES ${[...ids].join(', ')})`;
    if (keys.length === 0) return byId;
    return `${byId}
      UNION ALL SELECT ${ITEM_COLUMNS} FROM ${s}.items i
       WHERE i.item_key IS NOT NULL AND i.superseded_by IS NULL
         AND (i.team_id, i.item_key) IN (VALUES ${[...new Set(keys)].join(', ')})
         AND (i.expires_at IS NULL OR i.expires_at > ${sqlLiteral(new Date(nowMs).toISOString())}::timestamptz)`;
  }

  /** The statement writing pending rows (new items and changes, updated items) and the counter. */
  private persistSql(rows: PendingRows): string {
    const s = this.s;
    const json = (value: unknown) => `${sqlLiteral(JSON.stringify(value))}::json`;
    // Columns named: a column added by a later migration gets its default.
    const items = ITEM_INSERT_COLUMNS.join(', ');
    const changes = CHANGE_INSERT_COLUMNS.join(', ');
    const itemsJson = `E'[${rows.items.join(',')}]'::json`;
    // The updated rows' ids again as a literal array: the planner takes a JSON recordset for
    // 100 rows of unknown keys and joined it to a sequential scan of every item (measured: a
    // status item's supersede cost 26 ms per 30-event batch once 3,000 items were stored); with
    // `rid = ANY(...)` it looks each one up in the primary key.
    const rids = `'{${rows.updates.map((update) => Math.trunc(Number(update.rid))).join(',')}}'::int8[]`;
    return `WITH new_items AS (
        INSERT INTO ${s}.items (${items})
        SELECT ${items} FROM json_populate_recordset(NULL::${s}.items, ${itemsJson})
      ), new_changes AS (
        INSERT INTO ${s}.changes (${changes})
        SELECT ${changes} FROM json_populate_recordset(NULL::${s}.changes, ${json(rows.changes)})
      ), updated AS (
        UPDATE ${s}.items AS i
           SET superseded_by = u.superseded_by, consumed = u.consumed, consumed_by = u.consumed_by
          FROM json_populate_recordset(NULL::${s}.items, ${json(rows.updates)}) AS u
         WHERE i.rid = u.rid AND i.rid = ANY(${rids})
      )
      UPDATE ${s}.counter SET seq = ${Math.trunc(rows.seq)}, items = items + ${Math.trunc(rows.createdItems)}`;
  }
}
