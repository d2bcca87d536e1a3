import { createHash } from 'node:crypto';
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

/** SQLSTATE of the predicted write's check failing (see runPredicted). */
const DIVISION_BY_ZERO = '22012';
/** Group commits that go the two-round-trip way after a wrong prediction. */
const PAUSE_AFTER_MISS = 8;

/** SQLSTATE of EXECUTE naming a statement this connection does not have (DISCARD ALL). */
const NO_SUCH_STATEMENT = '26000';
/** SQLSTATE of PREPARE naming a statement this connection already has. */
const DUPLICATE_STATEMENT = '42P05';

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
  /**
   * Prepare the one-round-trip write's statements once per connection (default true). Not
   * through a transaction-mode pooler, which may run EXECUTE on another server connection.
   */
  prepareStatements?: boolean;
}

/** The one-round-trip write's statements, prepared once per connection. */
interface PredictedStatements {
  lock: string;
  check: string;
  persist: string;
  /** PREPARE for each, in one message. */
  prepare: string[];
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
  private statements: PredictedStatements | null;
  /** Connections holding `statements` (a pool hands out the same clients again). */
  private readonly preparedOn = new WeakSet<PoolClient>();
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
    this.statements = (options.prepareStatements ?? true) ? predictedStatements(this.s) : null;
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
    if (process.env.CTXBUS_AB_TWO_ROUND_TRIPS === '1') return null;
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
    const plan = new PostgresWritePlan(predicted, []);
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
    const rows = plan.pending();
    const prepared = rows.updates.length === 0 && (await this.prepare(client));
    const statements = [
      'BEGIN ISOLATION LEVEL READ COMMITTED',
      ...(prepared
        ? this.executePredicted(batch, rows, predicted, nowMs)
        : this.predictedSql(batch, rows, predicted, nowMs)),
      `SELECT pg_notify(${sqlLiteral(this.channel)}, '${plan.currentSeq}')`,
      'COMMIT',
    ];
    try {
      await client.query(statements.join(';\n'));
    } catch (error) {
      if (!isStatementError(error)) throw error;
      // 22012: the prediction was wrong. 26000: this connection lost its prepared statements
      // (DISCARD ALL): prepared again next time. Any other refusal: the two-round-trip way
      // sorts out which write it was (one savepoint per operation).
      await client.query('ROLLBACK');
      if (errorCode(error) === DIVISION_BY_ZERO) {
        this.knownSeq = null;
        this.predictionPause = PAUSE_AFTER_MISS;
      }
      if (errorCode(error) === NO_SUCH_STATEMENT) this.preparedOn.delete(client);
      return null;
    }
    this.termStats.add(rows.terms);
    this.observe(plan.currentSeq);
    this.onCommitted(plan.currentSeq);
    return settle;
  }

  /**
   * Prepares the one-round-trip write's statements on this connection, once. False when they
   * are not to be used: not configured, or PostgreSQL refused them (the write then goes with
   * its values inlined, and preparing is not tried again).
   */
  private async prepare(client: PoolClient): Promise<boolean> {
    const statements = this.statements;
    if (statements === null) return false;
    if (this.preparedOn.has(client)) return true;
    try {
      await client.query(statements.prepare.join(';\n'));
    } catch (error) {
      if (!isStatementError(error)) throw error;
      try {
        // Another store on this schema and pool prepared some of them: the rest one by one.
        for (const text of statements.prepare) {
          await client.query(text).catch((again: unknown) => {
            if (errorCode(again) !== DUPLICATE_STATEMENT) throw again;
          });
        }
      } catch (again) {
        if (!isStatementError(again)) throw again;
        this.target.logger.warn(
          { err: again },
          'postgres: cannot prepare the write statements; writes plan each statement instead',
        );
        this.statements = null;
        return false;
      }
    }
    this.preparedOn.add(client);
    return true;
  }

  /**
   * The one-round-trip write's lock, check and insert with their values inlined: planned by
   * PostgreSQL on every write (through a transaction-mode pooler).
   */
  private predictedSql(
    batch: readonly Operation[],
    rows: PendingRows,
    predicted: number,
    nowMs: number,
  ): string[] {
    const s = this.s;
    return [
      `SELECT seq FROM ${s}.counter FOR UPDATE`,
      `SELECT 1 / (CASE WHEN (SELECT seq FROM ${s}.counter) = ${Math.trunc(predicted)}
        AND NOT EXISTS (${this.loadSql(batch, nowMs)}) THEN 1 ELSE 0 END)`,
      this.persistSql(rows),
    ];
  }

  /** The same three as EXECUTEs of this connection's prepared statements (planned once). */
  private executePredicted(
    batch: readonly Operation[],
    rows: PendingRows,
    predicted: number,
    nowMs: number,
  ): string[] {
    const statements = this.statements as PredictedStatements;
    const ids: string[] = [];
    const idTeams: string[] = [];
    const teams: string[] = [];
    const keys: string[] = [];
    for (const operation of batch) {
      if (operation.kind !== 'write') continue;
      for (const { item } of operation.items) {
        ids.push(item.id);
        idTeams.push(item.teamId);
        if (item.key === null) continue;
        teams.push(item.teamId);
        keys.push(item.key);
      }
    }
    const array = (values: string[]) => `ARRAY[${values.map(sqlLiteral).join(', ')}]::text[]`;
    const now = sqlLiteral(new Date(nowMs).toISOString());
    return [
      `EXECUTE ${statements.lock}`,
      `EXECUTE ${statements.check}(${Math.trunc(predicted)}, ${array(ids)}, ${array(idTeams)}, ${array(teams)}, ${array(keys)}, ${now})`,
      `EXECUTE ${statements.persist}(E'[${rows.items.join(',')}]', ${sqlLiteral(JSON.stringify(rows.changes))}, ${Math.trunc(rows.seq)}, ${Math.trunc(rows.createdItems)})`,
    ];
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
         WHERE i.rid = u.rid
      )
      UPDATE ${s}.counter SET seq = ${Math.trunc(rows.seq)}, items = items + ${Math.trunc(rows.createdItems)}`;
  }
}

/**
 * The one-round-trip write's statements on schema `s`: the counter lock; the check that the
 * predicted sequence holds and that no stored item has one of the ids, nor a live item one of
 * the keys (it divides by zero otherwise); and the insert of items and changes with the new
 * counter. Named by a hash of their text, so that stores on other schemas sharing a connection
 * never reuse a name for another text.
 */
function predictedStatements(s: string): PredictedStatements {
  const items = ITEM_INSERT_COLUMNS.join(', ');
  const changes = CHANGE_INSERT_COLUMNS.join(', ');
  const texts = {
    lock: `SELECT seq FROM ${s}.counter FOR UPDATE`,
    check: `(bigint, text[], text[], text[], text[], timestamptz) AS
      SELECT 1 / (CASE WHEN (SELECT seq FROM ${s}.counter) = $1
        AND NOT EXISTS (
          SELECT 1 FROM ${s}.items i WHERE (i.id, i.team_id) IN (SELECT * FROM unnest($2, $3)))
        AND NOT EXISTS (
          SELECT 1 FROM ${s}.items i
           WHERE i.item_key IS NOT NULL AND i.superseded_by IS NULL
             AND (i.team_id, i.item_key) IN (SELECT * FROM unnest($4, $5))
             AND (i.expires_at IS NULL OR i.expires_at > $6))
        THEN 1 ELSE 0 END)`,
    persist: `(json, json, bigint, bigint) AS
      WITH new_items AS (
        INSERT INTO ${s}.items (${items})
        SELECT ${items} FROM json_populate_recordset(NULL::${s}.items, $1)
      ), new_changes AS (
        INSERT INTO ${s}.changes (${changes})
        SELECT ${changes} FROM json_populate_recordset(NULL::${s}.changes, $2)
      )
      UPDATE ${s}.counter SET seq = $3, items = items + $4`,
  };
  const named = Object.fromEntries(
    Object.entries(texts).map(([key, text]) => [
      key,
      `ctxbus_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`,
    ]),
  ) as Record<keyof typeof texts, string>;
  return {
    ...named,
    prepare: [
      `PREPARE ${named.lock} AS ${texts.lock}`,
      `PREPARE ${named.check}${texts.check}`,
      `PREPARE ${named.persist}${texts.persist}`,
    ],
  };
}
