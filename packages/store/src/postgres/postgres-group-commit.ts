import type { ContextItem, Viewer } from '@ctxbus/core';
import type { PoolClient } from 'pg';
import type { WriteOutcome } from '../store.js';
import type { PostgresTarget } from './postgres-connection.js';
import { errorCode, isStatementError, toStoreError } from './postgres-errors.js';
import type { PreparedItem } from './postgres-prepare.js';
import { CHANGE_INSERT_COLUMNS, ITEM_INSERT_COLUMNS, sqlLiteral } from './postgres-prepare.js';
import type { ItemRow } from './postgres-sql.js';
import { ITEM_COLUMNS, ROW_TYPES, rowToItem } from './postgres-sql.js';
import type { TermStatistics } from './postgres-term-stats.js';
import type { PendingRows } from './postgres-write-plan.js';
import { WritePlan } from './postgres-write-plan.js';

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

/** SQLSTATE of the predicted write's check failing (see runPredicted). */
const DIVISION_BY_ZERO = '22012';
/** Group commits that go the two-round-trip way after a wrong prediction. */
const PAUSE_AFTER_MISS = 8;

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
  /** The newest sequence this process knows was committed (its own, or heard of). */
  private knownSeq: number | null = null;
  /**
   * Group commits left before predicting again, after a wrong prediction: with other
   * processes writing at the same time, a miss costs a round trip, so misses stay rare.
   */
  private predictionPause = 0;
  /** How group commits went: in one round trip, or in two (tests, benchmarks). */
  readonly stats = { oneRoundTrip: 0, twoRoundTrips: 0 };

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

  /** Another process committed up to `seq` (a NOTIFY): the next write can predict its numbers. */
  observe(seq: number): void {
    if (this.knownSeq === null || seq > this.knownSeq) this.knownSeq = seq;
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
      let settle = await this.runPredicted(client, batch);
      if (settle === null) {
        settle = await this.runGroup(client, batch, false);
        this.stats.twoRoundTrips += 1;
      } else {
        this.stats.oneRoundTrip += 1;
      }
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
    const plan = new WritePlan(seq, loaded);
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
          const persist = this.persistSql(plan);
          await client.query(`${persist.sql}; RELEASE SAVEPOINT operation; SAVEPOINT operation`);
          plan.markPersisted();
          terms.push(...persist.terms);
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
      const persist = this.persistSql(plan);
      try {
        await client.query(`${persist.sql};\n${notify}COMMIT`);
      } catch (error) {
        if (!isStatementError(error)) throw error;
        await client.query('ROLLBACK');
        return null;
      }
      terms.push(...persist.terms);
    }
    this.termStats.add(terms);
    this.observe(plan.currentSeq);
    this.onCommitted(plan.currentSeq);
    return settle;
  }

  /**
   * The common write in one round trip instead of two: when every operation writes new items
   * that supersede nothing by name, and this process knows the newest sequence, the plan is
   * made up front on the prediction that the sequence is still that and that the read would
   * find nothing (no stored item with one of these ids, no live holder of one of these keys).
   * The transaction checks both under the counter lock before writing, and divides by zero
   * when either is wrong: then it rolls back, having written nothing, and the batch goes the
   * two-round-trip way (null). Null too when the prediction cannot be made.
   */
  private async runPredicted(
    client: PoolClient,
    batch: readonly Operation[],
  ): Promise<(() => void)[] | null> {
    const predicted = this.knownSeq;
    if (this.predictionPause > 0) {
      this.predictionPause -= 1;
      return null;
    }
    if (predicted === null) return null;
    for (const operation of batch) {
      if (operation.kind !== 'write') return null;
      if (operation.items.some(({ item }) => item.supersedes !== null)) return null;
    }
    const nowMs = this.clock().getTime();
    const plan = new WritePlan(predicted, []);
    const settle: (() => void)[] = [];
    for (const operation of batch) {
      if (operation.kind !== 'write') return null;
      try {
        const outcomes = plan.write(operation.items, nowMs);
        settle.push(() => operation.resolve(outcomes));
      } catch (error) {
        settle.push(() => operation.reject(error));
      }
    }
    if (!plan.hasPending) return null;
    const s = this.s;
    const persist = this.persistSql(plan);
    const check = `SELECT 1 / (CASE WHEN (SELECT seq FROM ${s}.counter) = ${Math.trunc(predicted)}
        AND NOT EXISTS (${this.loadSql(batch, nowMs)}) THEN 1 ELSE 0 END)`;
    const statements = [
      'BEGIN ISOLATION LEVEL READ COMMITTED',
      `SELECT seq FROM ${s}.counter FOR UPDATE`,
      check,
      persist.sql,
      `SELECT pg_notify(${sqlLiteral(this.channel)}, '${plan.currentSeq}')`,
      'COMMIT',
    ];
    try {
      await client.query(statements.join(';\n'));
    } catch (error) {
      if (!isStatementError(error)) throw error;
      // 22012: the prediction was wrong. Any other refusal: the two-round-trip way sorts out
      // which write it was (one savepoint per operation).
      await client.query('ROLLBACK');
      if (errorCode(error) === DIVISION_BY_ZERO) {
        this.knownSeq = null;
        this.predictionPause = PAUSE_AFTER_MISS;
      }
      return null;
    }
    this.termStats.add(persist.terms);
    this.observe(plan.currentSeq);
    this.onCommitted(plan.currentSeq);
    return settle;
  }

  /**
   * The read of a batch, run under the counter lock: rows with the ids it writes, supersedes
   * or consumes (any team: a reused id is a conflict), and the live rows holding the keys it
   * writes.
   */
  private loadSql(batch: readonly Operation[], nowMs: number): string {
    const ids = new Set<string>();
    const keys: string[] = [];
    for (const operation of batch) {
      if (operation.kind === 'consume') {
        ids.add(operation.id);
        continue;
      }
      for (const { item } of operation.items) {
        ids.add(item.id);
        if (item.supersedes !== null) ids.add(item.supersedes);
        if (item.key !== null) keys.push(`(${sqlLiteral(item.teamId)}, ${sqlLiteral(item.key)})`);
      }
    }
    const s = this.s;
    const byId = `SELECT ${ITEM_COLUMNS} FROM ${s}.items i
                   WHERE i.id IN (${[...ids].map(sqlLiteral).join(', ')})`;
    if (keys.length === 0) return byId;
    return `${byId}
      UNION ALL SELECT ${ITEM_COLUMNS} FROM ${s}.items i
       WHERE i.item_key IS NOT NULL AND i.superseded_by IS NULL
         AND (i.team_id, i.item_key) IN (VALUES ${[...new Set(keys)].join(', ')})
         AND (i.expires_at IS NULL OR i.expires_at > ${sqlLiteral(new Date(nowMs).toISOString())}::timestamptz)`;
  }

  /**
   * The statement writing what the plan changed since its last statement, and the counter;
   * with the term counts of the new items, for the statistics once committed.
   */
  private persistSql(plan: WritePlan): { sql: string; terms: PendingRows['terms'] } {
    const s = this.s;
    const rows = plan.pending();
    const json = (value: unknown) => `${sqlLiteral(JSON.stringify(value))}::json`;
    // Columns named: a column added by a later migration gets its default.
    const items = ITEM_INSERT_COLUMNS.join(', ');
    const changes = CHANGE_INSERT_COLUMNS.join(', ');
    const itemsJson = `E'[${rows.items.join(',')}]'::json`;
    const sql = `WITH new_items AS (
        INSERT INTO ${s}.items (${items})
        SELECT ${items} FROM json_populate_recordset(NULL::${s}.items, ${itemsJson})
      ), new_changes AS (
        INSERT INTO ${s}.changes (${changes})
        SELECT ${changes} FROM json_populate_recordset(NULL::${s}.changes, ${json(rows.changes)})
      ), updated AS (
        UPDATE ${s}.items AS i
           SET superseded_by = u.superseded_by, consumed = u.consumed, consumed_by = u.consumed_by
          FROM json_populate_recordset(NULL::${s}.items, ${json(rows.updates)}) AS u
         WHERE i.rid = u.rid
      )
      UPDATE ${s}.counter SET seq = ${Math.trunc(rows.seq)}, items = items + ${Math.trunc(rows.createdItems)}`;
    return { sql, terms: rows.terms };
  }
}
