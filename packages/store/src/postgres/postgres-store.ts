import { createHash } from 'node:crypto';
import { CtxbusError } from '@ctxbus/core';
import type { ClientConfig, PoolClient, QueryResult, QueryResultRow } from 'pg';
import type { StoreDomains } from '../composed-store.js';
import { ComposedStore } from '../composed-store.js';
import type { StoreInfo } from '../store.js';
import { PostgresAudit } from './postgres-audit.js';
import { PostgresChangeListener } from './postgres-change-listener.js';
import { PostgresChangeLog } from './postgres-changes.js';
import type {
  PostgresConnectionOptions,
  PostgresContext,
  PostgresTarget,
} from './postgres-connection.js';
import { connectPostgres } from './postgres-connection.js';
import { toStoreError } from './postgres-errors.js';
import { GroupCommit } from './postgres-group-commit.js';
import { PostgresItems } from './postgres-items.js';
import { PostgresLifecycle } from './postgres-lifecycle.js';
import { GrowthMaintenance } from './postgres-maintenance.js';
import {
  applyPostgresMigrations,
  assertSchemaCurrent,
  ensurePgvector,
  POSTGRES_SCHEMA_VERSION,
} from './postgres-migrations.js';
import { sqlLiteral } from './postgres-prepare.js';
import { PostgresPresence } from './postgres-presence.js';
import { ROW_TYPES } from './postgres-sql.js';
import type { Transaction } from './postgres-subscriptions.js';
import { PostgresSubscriptions } from './postgres-subscriptions.js';
import { PostgresTasks } from './postgres-tasks.js';
import { TermStatistics } from './postgres-term-stats.js';
import { PostgresTokens } from './postgres-tokens.js';
import { PostgresUsage } from './postgres-usage.js';
import type { VectorComparison } from './postgres-vectors.js';
import { detectVectorComparison, PostgresVectors } from './postgres-vectors.js';
import { transactionPoolerWarning } from './supabase-pooler.js';

export interface PostgresStoreOptions extends PostgresConnectionOptions {
  /** Source of "now" for expiry and consumption times. */
  clock?: () => Date;
  /**
   * Apply pending migrations on open (default true). With false, a schema older than the code
   * is refused (`unavailable`: run `ctxbus migrate`); a newer one is always refused.
   */
  migrate?: boolean;
  /**
   * The LISTEN connection's keepalive: a `SELECT 1` every `keepaliveMs` (default 10 s); one
   * that takes over `probeTimeoutMs` (default 5 s) counts the connection as dead (half-open)
   * and it is reopened.
   */
  listen?: { keepaliveMs?: number; probeTimeoutMs?: number };
  /** Most items one group commit takes (default 2,000); the rest wait for the next. */
  maxGroupItems?: number;
  /**
   * Vector comparison: `auto` (default) uses pgvector when the extension is installed in the
   * database (migrating, on open or with `ctxbus migrate`, installs it when the server has
   * it); `exact` never does.
   */
  vectors?: 'auto' | 'exact';
  /**
   * The most memory (MB) this process may hold each embedding model's vectors in, for an
   * exact scan in JavaScript, the fastest (default 256). Past it, or with 0, the database
   * compares: with pgvector's operator, or an exact scan in SQL (slow) without it.
   */
  vectorMemoryMb?: number;
  /**
   * Tasks one runtime may have waiting (SUBMITTED or AUTH_REQUIRED) per team; past it a create
   * is refused with `limit_reached` (default DEFAULT_MAX_WAITING_TASKS, 10,000).
   */
  maxWaitingTasksPerRuntime?: number;
}

/**
 * Changes before the store's first VACUUM ANALYZE of items and changes, then again at each
 * doubling (postgres-maintenance.ts). Autovacuum gets there too, but after a bulk load it may
 * take a minute, and until then the planner guesses: listings took 40-85 ms at 100k items
 * instead of under 1 ms, and the index-only scans of items_scope_heads need the visibility map.
 */
const MAINTENANCE_FROM = 1_000;

/** Tasks created before the first VACUUM ANALYZE of tasks and task_events, then at each doubling. */
const TASK_MAINTENANCE_FROM = 100;

/** Past this difference between a hub's clock and PostgreSQL's, the store says so at open. */
export const CLOCK_SKEW_WARN_MS = 2_000;

/** How often the offset to the database's clock is measured again. */
const CLOCK_OFFSET_REFRESH_MS = 10 * 60_000;

/**
 * The database's clock less this machine's, in ms: one `clock_timestamp()`, taken as read at
 * the middle of its round trip. Null when it could not be read.
 */
async function measureClockOffset(target: PostgresTarget): Promise<number | null> {
  try {
    const sent = Date.now();
    const { rows } = await target.pool.query<{ ms: string }>(
      `SELECT (extract(epoch FROM clock_timestamp()) * 1000)::int8::text AS ms`,
    );
    const received = Date.now();
    return Number(rows[0]?.ms) - (sent + received) / 2;
  } catch (error) {
    target.logger.debug({ err: error }, 'postgres: could not read the database clock');
    return null;
  }
}

/** The NOTIFY channel of a schema's store (schemas are validated plain names). */
export function changeChannel(schema: string): string {
  return `ctxbus_changes_${schema}`;
}

/** `application_name` of a schema's LISTEN connection (PostgreSQL keeps 63 bytes). */
export function listenerName(schema: string): string {
  return `ctxbus-listen ${schema}`.slice(0, 63);
}

/**
 * PostgreSQL store: for several hubs sharing one database. A composition of one object per
 * domain of the contract (postgres-items.ts, postgres-changes.ts, ...) over one pool. Writes go
 * through a group commit (postgres-group-commit.ts: how the sequence stays gapless and ordered
 * across processes); reads are single queries, each bounded by team, visibility and expiry
 * (postgres-sql.ts).
 */
export class PostgresStore extends ComposedStore {
  readonly info: StoreInfo;
  /** The schema holding this store's tables. */
  readonly schema: string;
  protected readonly domains: StoreDomains;
  private readonly target: PostgresTarget;
  private readonly s: string;
  private readonly termStats: TermStatistics;
  private readonly writes: GroupCommit;
  private readonly listener: PostgresChangeListener;
  private readonly changes: PostgresChangeLog;
  private readonly statementNames = new Map<string, string>();
  /** Named prepared statements: not through a transaction-mode pooler, which may not keep them. */
  private readonly prepareStatements: boolean;
  /** Planner statistics and the visibility map of items and changes, refreshed as they grow. */
  private readonly itemsMaintenance: GrowthMaintenance;
  /** The same for tasks and their events. */
  private readonly tasksMaintenance: GrowthMaintenance;
  private closed = false;
  readonly clock: () => Date;
  /** The database's clock less this machine's (see measureClockOffset); 0 with a given clock. */
  private clockOffsetMs = 0;
  private clockTimer: NodeJS.Timeout | null = null;

  private constructor(
    target: PostgresTarget,
    options: PostgresStoreOptions,
    vectors: VectorComparison,
  ) {
    super();
    this.target = target;
    this.s = target.quotedSchema;
    this.schema = target.schema;
    // Leases, expiries and sweeps go by one time for every hub on the database: its server's.
    this.clock = options.clock ?? (() => new Date(Date.now() + this.clockOffsetMs));
    const clock = this.clock;
    const context: PostgresContext = {
      s: target.quotedSchema,
      location: target.location,
      clock,
      query: (action, text, values, prepared) => this.query(action, text, values, prepared),
      assertOpen: () => this.assertOpen(),
    };
    this.termStats = new TermStatistics(target.pool, target.quotedSchema, target.logger);
    const closed = () => this.closed;
    this.itemsMaintenance = new GrowthMaintenance({
      target,
      tables: `${this.s}.items, ${this.s}.changes`,
      from: MAINTENANCE_FROM,
      closed,
    });
    this.tasksMaintenance = new GrowthMaintenance({
      target,
      tables: `${this.s}.tasks, ${this.s}.task_events`,
      from: TASK_MAINTENANCE_FROM,
      closed,
    });
    const config = (target.pool as unknown as { options: ClientConfig }).options;
    const poolerWarning = transactionPoolerWarning(config);
    this.prepareStatements = poolerWarning === null;
    if (poolerWarning)
      target.logger.warn({ location: target.location }, `postgres: ${poolerWarning}`);
    this.writes = new GroupCommit({
      target,
      clock,
      maxGroupItems: options.maxGroupItems ?? 2_000,
      termStats: this.termStats,
      onCommitted: (seq) => this.itemsMaintenance.grown(seq),
      channel: changeChannel(target.schema),
    });
    this.listener = new PostgresChangeListener({
      config,
      channel: changeChannel(target.schema),
      applicationName: listenerName(target.schema),
      ...options.listen,
      logger: target.logger,
      latestSeq: () => this.latestSeq(),
    });
    this.changes = new PostgresChangeLog(context, this.listener);
    const transaction: Transaction = (action, work, opening) =>
      this.transaction(action, work, opening);
    const audit = new PostgresAudit(context, transaction);
    this.domains = {
      items: new PostgresItems(context, this.writes, this.termStats),
      changes: this.changes,
      vectors: new PostgresVectors(context, vectors, options.vectorMemoryMb ?? 256, target.logger),
      lifecycle: new PostgresLifecycle(target, this.termStats, () => this.assertOpen()),
      subscriptions: new PostgresSubscriptions(context, transaction),
      tokens: new PostgresTokens(context),
      tasks: new PostgresTasks(context, transaction, audit, {
        maxWaitingPerRuntime: options.maxWaitingTasksPerRuntime,
        onCreated: (rid) => this.tasksMaintenance.grown(rid),
      }),
      audit,
      presence: new PostgresPresence(context, transaction),
      usage: new PostgresUsage(context, transaction),
    };
    this.info = {
      backend: 'postgres',
      schemaVersion: POSTGRES_SCHEMA_VERSION,
      location: target.location,
      vectorIndex: vectors.index,
    };
  }

  /** Connects, migrates (or checks) the schema, and returns the store. */
  static async open(options: PostgresStoreOptions): Promise<PostgresStore> {
    const target = await connectPostgres(options);
    try {
      const migrate = options.migrate ?? true;
      if (migrate) await applyPostgresMigrations(target);
      if (migrate && (options.vectors ?? 'auto') === 'auto') {
        await ensurePgvector(target).catch((error: unknown) => {
          throw toStoreError(error, 'detect pgvector', target.location);
        });
      }
      const client = await target.pool.connect().catch((error: unknown) => {
        throw toStoreError(error, 'connect', target.location);
      });
      try {
        await assertSchemaCurrent(client, target);
      } catch (error) {
        throw toStoreError(error, 'check the schema version', target.location);
      } finally {
        client.release();
      }
      const vectors = await detectVectorComparison(async (action, text, values) => {
        try {
          return (await target.pool.query({ text, values: values ?? [] })).rows;
        } catch (error) {
          throw toStoreError(error, action, target.location);
        }
      }, options.vectors ?? 'auto');
      const store = new PostgresStore(target, options, vectors);
      await store.scheduleMaintenance();
      if (!options.clock) await store.keepDatabaseTime();
      return store;
    } catch (error) {
      if (target.ownsPool) await target.pool.end().catch(() => {});
      throw error;
    }
  }

  /**
   * Takes the database's time (this machine's clock plus the measured offset), measured now
   * and every CLOCK_OFFSET_REFRESH_MS; says so when this machine's clock is off by more than
   * CLOCK_SKEW_WARN_MS, since everything else on this machine keeps its own time.
   */
  private async keepDatabaseTime(): Promise<void> {
    const measure = async () => {
      const offset = await measureClockOffset(this.target);
      if (offset !== null && !this.closed) this.clockOffsetMs = offset;
      return offset;
    };
    const offset = await measure();
    if (offset !== null && Math.abs(offset) > CLOCK_SKEW_WARN_MS) {
      const by = `${(Math.abs(offset) / 1000).toFixed(1)} s ${offset < 0 ? 'ahead of' : 'behind'}`;
      this.target.logger.warn(
        { offsetMs: Math.round(offset) },
        `this machine's clock is ${by} PostgreSQL's: the store keeps the database's time (leases, expiries), but keep the clocks in agreement (NTP)`,
      );
    }
    this.clockTimer = setInterval(() => void measure(), CLOCK_OFFSET_REFRESH_MS);
    this.clockTimer.unref();
  }

  /** Sets when maintenance is next due from what the planner knows now (runs it if overdue). */
  private async scheduleMaintenance(): Promise<void> {
    const estimate = (table: string) =>
      `(SELECT greatest(reltuples, 0)::float8 FROM pg_class
         WHERE oid = to_regclass(${sqlLiteral(`${this.s}.${table}`)}))`;
    const [row] = await this.query<{
      seq: number;
      items: number | null;
      tasks: number | null;
      rid: number;
    }>(
      'read the sequence',
      `SELECT (SELECT seq FROM ${this.s}.counter) AS seq, ${estimate('items')} AS items,
              ${estimate('tasks')} AS tasks,
              (SELECT coalesce(max(rid), 0) FROM ${this.s}.tasks)::float8 AS rid`,
    );
    this.itemsMaintenance.schedule(row?.items ?? 0, Number(row?.seq ?? 0));
    this.tasksMaintenance.schedule(row?.tasks ?? 0, row?.rid ?? 0);
  }

  private assertOpen(): void {
    if (this.closed) throw new CtxbusError('unavailable', 'the store is closed');
  }

  /**
   * A prepared statement's name: a hash of its text, so that stores on other schemas sharing
   * a pool (and so a connection) never reuse one name for another text.
   */
  private statementName(text: string): string {
    let name = this.statementNames.get(text);
    if (name === undefined) {
      name = `ctxbus_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
      this.statementNames.set(text, name);
    }
    return name;
  }

  private async query<R extends QueryResultRow>(
    action: string,
    text: string,
    values: unknown[] = [],
    prepared = false,
  ): Promise<R[]> {
    try {
      const result = await this.target.pool.query<R>({
        text,
        values,
        types: ROW_TYPES,
        ...(prepared && this.prepareStatements && { name: this.statementName(text) }),
      });
      return result.rows;
    } catch (error) {
      throw toStoreError(error, action, this.target.location);
    }
  }

  /**
   * Runs `work` in one READ COMMITTED transaction on one pooled connection; `opening` (values
   * inlined) goes in one message with BEGIN, and work gets its results.
   */
  private async transaction<T>(
    action: string,
    work: (client: PoolClient, opening: QueryResult[]) => Promise<T>,
    opening?: string,
  ): Promise<T> {
    const client = await this.target.pool.connect().catch((error: unknown) => {
      throw toStoreError(error, action, this.target.location);
    });
    try {
      const begin = 'BEGIN ISOLATION LEVEL READ COMMITTED';
      const results =
        opening === undefined
          ? []
          : (
              (await client.query({
                text: `${begin};\n${opening}`,
                types: ROW_TYPES,
              })) as unknown as QueryResult[]
            ).slice(1);
      if (opening === undefined) await client.query(begin);
      const result = await work(client, results);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw CtxbusError.isInstance(error)
        ? error
        : toStoreError(error, action, this.target.location);
    } finally {
      client.release();
    }
  }

  watchChanges(listener: (seq: number) => void): { close(): void } {
    return this.changes.watchChanges(listener);
  }

  /** How many times the LISTEN connection was established (tests, metrics). */
  get listenConnections(): number {
    return this.listener.connections;
  }

  /** Waits for queued writes to commit, then ends the pool (when the store created it). */
  async close(): Promise<void> {
    await this.listener.close();
    if (this.closed) return;
    this.closed = true;
    if (this.clockTimer) clearInterval(this.clockTimer);
    await this.writes.drained();
    await Promise.all([this.itemsMaintenance.pending, this.tasksMaintenance.pending]);
    await this.termStats.close();
    if (this.target.ownsPool) await this.target.pool.end();
  }
}

/** Opens (creating and migrating when needed) a PostgreSQL store. */
export function openPostgresStore(options: PostgresStoreOptions): Promise<PostgresStore> {
  return PostgresStore.open(options);
}
