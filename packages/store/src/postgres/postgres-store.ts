import { createHash } from 'node:crypto';
import type { ContextItem, ListOptions, NewContextItem, Viewer } from '@ctxbus/core';
import { CtxbusError } from '@ctxbus/core';
import type { ClientConfig, PoolClient, QueryResultRow } from 'pg';
import type {
  ArchivedItem,
  Change,
  ChangeKind,
  DeadLetter,
  EmbeddingSource,
  ItemVector,
  ListSubscriptionsOptions,
  ListTokensOptions,
  ReadChangesOptions,
  SearchHit,
  SearchOptions,
  Store,
  StoreInfo,
  SubscriptionProgress,
  SubscriptionRecord,
  SweepOptions,
  SweepResult,
  TokenRecord,
  VectorHit,
  VectorSearchOptions,
  WriteOutcome,
} from '../store.js';
import type { VectorMemory } from '../vectors/vector-memory.js';
import { PostgresChangeListener } from './postgres-change-listener.js';
import type { PostgresConnectionOptions, PostgresTarget } from './postgres-connection.js';
import { connectPostgres } from './postgres-connection.js';
import { toStoreError } from './postgres-errors.js';
import { GroupCommit } from './postgres-group-commit.js';
import { listArchivedPostgres, sweepPostgres } from './postgres-lifecycle.js';
import {
  applyPostgresMigrations,
  assertSchemaCurrent,
  ensurePgvector,
  POSTGRES_SCHEMA_VERSION,
} from './postgres-migrations.js';
import type { PreparedItem } from './postgres-prepare.js';
import { prepareItemRow, sqlLiteral } from './postgres-prepare.js';
import { searchPostgres } from './postgres-search-items.js';
import type { ItemRow, TokenRow } from './postgres-sql.js';
import {
  filterSql,
  ITEM_COLUMNS,
  ROW_TYPES,
  rowToItem,
  rowToToken,
  SqlParams,
  TOKEN_COLUMNS,
  withoutTagsSql,
} from './postgres-sql.js';
import { PostgresSubscriptions } from './postgres-subscriptions.js';
import { TermStatistics } from './postgres-term-stats.js';
import type { VectorComparison } from './postgres-vectors.js';
import {
  detectVectorComparison,
  itemsToEmbedPostgres,
  postgresVectorMemory,
  saveVectorsPostgres,
  vectorSearchPostgres,
} from './postgres-vectors.js';
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
}

/** Changes before the first VACUUM ANALYZE by the store (see maintainIfGrown). */
const MAINTENANCE_FROM = 1_000;

/** The NOTIFY channel of a schema's store (schemas are validated plain names). */
export function changeChannel(schema: string): string {
  return `ctxbus_changes_${schema}`;
}

/** `application_name` of a schema's LISTEN connection (PostgreSQL keeps 63 bytes). */
export function listenerName(schema: string): string {
  return `ctxbus-listen ${schema}`.slice(0, 63);
}

/**
 * PostgreSQL store: for several hubs sharing one database. Writes go through a group commit
 * (postgres-group-commit.ts: how the sequence stays gapless and ordered across processes);
 * reads are single queries, each bounded by team, visibility and expiry (postgres-sql.ts).
 */
export class PostgresStore implements Store {
  readonly info: StoreInfo;
  /** The schema holding this store's tables. */
  readonly schema: string;
  private readonly target: PostgresTarget;
  private readonly s: string;
  private readonly clock: () => Date;
  private readonly termStats: TermStatistics;
  private readonly writes: GroupCommit;
  private readonly listener: PostgresChangeListener;
  private readonly subscriptions: PostgresSubscriptions;
  private readonly vectors: VectorComparison;
  private readonly vectorMemory: VectorMemory | null;
  private readonly statementNames = new Map<string, string>();
  /** Named prepared statements: not through a transaction-mode pooler, which may not keep them. */
  private readonly prepareStatements: boolean;
  /** The sequence at which planner statistics and the visibility map are next refreshed. */
  private nextMaintenanceAt = Number.POSITIVE_INFINITY;
  private maintenance: Promise<void> | null = null;
  private closed = false;

  private constructor(
    target: PostgresTarget,
    options: PostgresStoreOptions,
    vectors: VectorComparison,
  ) {
    this.target = target;
    this.s = target.quotedSchema;
    this.schema = target.schema;
    this.clock = options.clock ?? (() => new Date());
    this.vectors = vectors;
    const memoryMb = options.vectorMemoryMb ?? 256;
    this.vectorMemory =
      memoryMb > 0
        ? postgresVectorMemory(
            (action, text, values) => this.query(action, text, values),
            target.quotedSchema,
            this.clock,
            memoryMb * 1024 * 1024,
            (model, bytes) =>
              target.logger.warn(
                { model, loadedMb: Math.round(bytes / 1048576), budgetMb: memoryMb },
                vectors.index === 'pgvector'
                  ? 'postgres: the vectors of this model exceed the memory budget: pgvector compares them in the database'
                  : 'postgres: the vectors of this model exceed the memory budget: vector search scans them in SQL (slow); install pgvector, or raise the budget (ctxbus serve --vector-memory-mb)',
              ),
          )
        : null;
    this.subscriptions = new PostgresSubscriptions(
      target.quotedSchema,
      (action, text, values) => this.query(action, text, values),
      (action, work) => this.transaction(action, work),
    );
    this.termStats = new TermStatistics(target.pool, target.quotedSchema, target.logger);
    const config = (target.pool as unknown as { options: ClientConfig }).options;
    const poolerWarning = transactionPoolerWarning(config);
    this.prepareStatements = poolerWarning === null;
    if (poolerWarning)
      target.logger.warn({ location: target.location }, `postgres: ${poolerWarning}`);
    this.writes = new GroupCommit({
      target,
      clock: this.clock,
      maxGroupItems: options.maxGroupItems ?? 2_000,
      termStats: this.termStats,
      onCommitted: (seq) => this.maintainIfGrown(seq),
      channel: changeChannel(target.schema),
      prepareStatements: this.prepareStatements,
    });
    this.listener = new PostgresChangeListener({
      config,
      channel: changeChannel(target.schema),
      applicationName: listenerName(target.schema),
      ...options.listen,
      logger: target.logger,
      latestSeq: () => this.latestSeq(),
    });
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
      return store;
    } catch (error) {
      if (target.ownsPool) await target.pool.end().catch(() => {});
      throw error;
    }
  }

  /**
   * Refreshes planner statistics and the visibility map (VACUUM ANALYZE, in the background)
   * each time the change log has doubled, from 1,000 changes on. Autovacuum gets there too,
   * but after a bulk load it may take a minute, and until then the planner guesses: listings
   * took 40-85 ms at 100k items instead of under 1 ms, and the index-only scans of
   * items_scope_heads need the visibility map.
   */
  private maintainIfGrown(seq: number): void {
    if (seq < this.nextMaintenanceAt || this.maintenance !== null || this.closed) return;
    this.nextMaintenanceAt = Math.max(MAINTENANCE_FROM, seq * 2);
    const started = performance.now();
    this.maintenance = this.target.pool
      .query(`VACUUM (ANALYZE) ${this.s}.items, ${this.s}.changes`)
      .then(
        () => {
          this.target.logger.debug(
            { seq, ms: Math.round(performance.now() - started) },
            'postgres: refreshed planner statistics',
          );
        },
        (error: unknown) => {
          this.target.logger.warn({ err: error }, 'postgres: VACUUM ANALYZE failed');
        },
      )
      .finally(() => {
        this.maintenance = null;
      });
  }

  /** Sets when maintenance is next due from what the planner knows now (runs it if overdue). */
  private async scheduleMaintenance(): Promise<void> {
    const [row] = await this.query<{ seq: number; estimate: number }>(
      'read the sequence',
      `SELECT c.seq, greatest(cl.reltuples, 0)::float8 AS estimate
         FROM ${this.s}.counter c, pg_class cl
        WHERE cl.oid = to_regclass(${sqlLiteral(`${this.s}.items`)})`,
    );
    this.nextMaintenanceAt = Math.max(MAINTENANCE_FROM, 2 * (row?.estimate ?? 0));
    this.maintainIfGrown(row?.seq ?? 0);
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

  /** Runs `work` in one READ COMMITTED transaction on one pooled connection. */
  private async transaction<T>(
    action: string,
    work: (client: PoolClient) => Promise<T>,
  ): Promise<T> {
    const client = await this.target.pool.connect().catch((error: unknown) => {
      throw toStoreError(error, action, this.target.location);
    });
    try {
      await client.query('BEGIN ISOLATION LEVEL READ COMMITTED');
      const result = await work(client);
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

  // ---------------------------------------------------------------- writes

  writeItems(items: readonly NewContextItem[]): Promise<WriteOutcome[]> {
    this.assertOpen();
    let prepared: PreparedItem[];
    try {
      // Before the group commit takes its lock: see postgres-prepare.ts.
      prepared = items.map(prepareItemRow);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.writes.write(prepared);
  }

  consumeItem(viewer: Viewer, id: string): Promise<ContextItem | null> {
    this.assertOpen();
    return this.writes.consume(viewer, id);
  }

  // ---------------------------------------------------------------- reads

  async getItem(viewer: Viewer, id: string): Promise<ContextItem | null> {
    this.assertOpen();
    const p = new SqlParams();
    const where = filterSql(viewer, { includeSuperseded: true }, this.clock().getTime(), p);
    const rows = await this.query<ItemRow>(
      'read an item',
      `SELECT ${ITEM_COLUMNS} FROM ${this.s}.items i WHERE i.id = ${p.add(id)} AND ${where}`,
      p.values,
    );
    return rows[0] ? rowToItem(rows[0]) : null;
  }

  async listItems(viewer: Viewer, options: ListOptions): Promise<ContextItem[]> {
    this.assertOpen();
    const p = new SqlParams();
    const where = filterSql(viewer, options, this.clock().getTime(), p);
    const s = this.s;
    let text: string;
    if (options.latestPerScopeKey) {
      // The newest matching item of each scope key (an index-only scan of items_scope_heads);
      // withoutTags then drops whole keys.
      const without = options.withoutTags?.length
        ? `AND ${withoutTagsSql('i', options.withoutTags, p)}`
        : '';
      text = `SELECT ${ITEM_COLUMNS} FROM ${s}.items i
               WHERE i.rid IN (SELECT max(i.rid) FROM ${s}.items i WHERE ${where} GROUP BY i.scope_key)
                 ${without}
               ORDER BY i.rid DESC LIMIT ${p.add(options.limit)}`;
    } else {
      text = `SELECT ${ITEM_COLUMNS} FROM ${s}.items i WHERE ${where}
               ORDER BY i.rid DESC LIMIT ${p.add(options.limit)}`;
    }
    const rows = await this.query<ItemRow>('list items', text, p.values);
    return rows.map(rowToItem);
  }

  searchItems(viewer: Viewer, options: SearchOptions): Promise<SearchHit[]> {
    this.assertOpen();
    const context = {
      s: this.s,
      location: this.target.location,
      termStats: this.termStats,
      query: <R extends QueryResultRow>(action: string, text: string, values: unknown[]) =>
        this.query<R>(action, text, values),
    };
    return searchPostgres(context, viewer, options, this.clock().getTime());
  }

  itemsToEmbed(
    model: string,
    options: { afterSeq: number; limit: number },
  ): Promise<EmbeddingSource[]> {
    this.assertOpen();
    return itemsToEmbedPostgres(
      (action, text, values) => this.query(action, text, values),
      this.s,
      model,
      options,
      this.clock().getTime(),
    );
  }

  async saveVectors(model: string, vectors: readonly ItemVector[]): Promise<void> {
    this.assertOpen();
    await saveVectorsPostgres(
      (action, text, values) => this.query(action, text, values),
      this.s,
      model,
      vectors,
    );
  }

  vectorSearch(viewer: Viewer, options: VectorSearchOptions): Promise<VectorHit[]> {
    this.assertOpen();
    return vectorSearchPostgres(
      (action, text, values) => this.query(action, text, values),
      this.s,
      this.vectors,
      this.vectorMemory,
      viewer,
      options,
      this.clock().getTime(),
    );
  }

  async readChanges(options: ReadChangesOptions): Promise<Change[]> {
    this.assertOpen();
    const p = new SqlParams();
    const team = options.teamId === undefined ? '' : `AND c.team_id = ${p.add(options.teamId)}`;
    const rows = await this.query<ItemRow & { change_seq: number; change_kind: ChangeKind }>(
      'read changes',
      `SELECT c.seq AS change_seq, c.kind AS change_kind, ${ITEM_COLUMNS}
         FROM ${this.s}.changes c JOIN ${this.s}.items i ON i.rid = c.item_rid
        WHERE c.seq > ${p.add(options.afterSeq)} ${team}
        ORDER BY c.seq LIMIT ${p.add(options.limit)}`,
      p.values,
      // The hottest read (every commit, on every hub): planned once per connection.
      true,
    );
    return rows.map((row) => ({
      seq: row.change_seq,
      kind: row.change_kind,
      teamId: row.team_id,
      item: rowToItem(row),
    }));
  }

  async latestSeq(): Promise<number> {
    this.assertOpen();
    const rows = await this.query<{ seq: number }>(
      'read the sequence',
      `SELECT seq FROM ${this.s}.counter`,
    );
    return rows[0]?.seq ?? 0;
  }

  // ---------------------------------------------------------------- lifecycle

  async sweepItems(options: SweepOptions): Promise<SweepResult> {
    this.assertOpen();
    return sweepPostgres(this.target, this.termStats, options);
  }

  async listArchivedItems(
    viewer: Viewer,
    options: { limit: number; beforeArchiveId?: number },
  ): Promise<ArchivedItem[]> {
    this.assertOpen();
    return listArchivedPostgres(this.target, viewer, options);
  }

  // ---------------------------------------------------------------- subscriptions

  async createSubscription(record: SubscriptionRecord, maxPerRuntime?: number): Promise<void> {
    this.assertOpen();
    await this.subscriptions.create(record, maxPerRuntime);
  }

  async getSubscription(id: string): Promise<SubscriptionRecord | null> {
    this.assertOpen();
    return this.subscriptions.get(id);
  }

  async listSubscriptions(options: ListSubscriptionsOptions = {}): Promise<SubscriptionRecord[]> {
    this.assertOpen();
    return this.subscriptions.list(options);
  }

  async deleteSubscription(id: string): Promise<boolean> {
    this.assertOpen();
    return this.subscriptions.delete(id);
  }

  async leaseSubscription(
    id: string,
    holder: string,
    now: string,
    until: string,
  ): Promise<boolean> {
    this.assertOpen();
    return this.subscriptions.lease(id, holder, now, until);
  }

  async saveSubscriptionProgress(
    id: string,
    holder: string | null,
    progress: SubscriptionProgress,
    now: string,
  ): Promise<boolean> {
    this.assertOpen();
    return this.subscriptions.saveProgress(id, holder, progress, now);
  }

  async listDeadLetters(
    subscriptionId: string,
    options: { afterSeq?: number; limit: number },
  ): Promise<DeadLetter[]> {
    this.assertOpen();
    return this.subscriptions.deadLetters(subscriptionId, options.afterSeq ?? 0, options.limit);
  }

  // ---------------------------------------------------------------- tokens

  async createToken(record: TokenRecord): Promise<void> {
    this.assertOpen();
    await this.query(
      'create a token',
      `INSERT INTO ${this.s}.tokens (id, hash, role, team_id, runtime, label, created_at, revoked_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7::timestamptz, $8::timestamptz)`,
      [
        record.id,
        record.hash,
        record.role,
        record.teamId,
        record.runtime,
        record.label,
        new Date(record.createdAt).toISOString(),
        record.revokedAt === null ? null : new Date(record.revokedAt).toISOString(),
      ],
    );
  }

  async findTokenByHash(hash: string): Promise<TokenRecord | null> {
    this.assertOpen();
    const rows = await this.query<TokenRow>(
      'find a token',
      `SELECT ${TOKEN_COLUMNS} FROM ${this.s}.tokens WHERE hash = $1`,
      [hash],
    );
    return rows[0] ? rowToToken(rows[0]) : null;
  }

  async listTokens(options: ListTokensOptions = {}): Promise<TokenRecord[]> {
    this.assertOpen();
    const p = new SqlParams();
    const clauses: string[] = [];
    if (options.teamId !== undefined) clauses.push(`team_id = ${p.add(options.teamId)}`);
    if (!options.includeRevoked) clauses.push('revoked_at IS NULL');
    const where = clauses.length > 0 ? `WHERE ${clauses.join(' AND ')}` : '';
    const rows = await this.query<TokenRow>(
      'list tokens',
      `SELECT ${TOKEN_COLUMNS} FROM ${this.s}.tokens ${where} ORDER BY created_at, id`,
      p.values,
    );
    return rows.map(rowToToken);
  }

  async revokeToken(id: string): Promise<TokenRecord | null> {
    this.assertOpen();
    await this.query(
      'revoke a token',
      `UPDATE ${this.s}.tokens SET revoked_at = $2::timestamptz WHERE id = $1 AND revoked_at IS NULL`,
      [id, this.clock().toISOString()],
    );
    const rows = await this.query<TokenRow>(
      'revoke a token',
      `SELECT ${TOKEN_COLUMNS} FROM ${this.s}.tokens WHERE id = $1`,
      [id],
    );
    return rows[0] ? rowToToken(rows[0]) : null;
  }

  /**
   * One LISTEN connection per store (so per hub process), whatever the number of watchers: see
   * PostgresChangeListener for reconnection, keepalive and the catch-up hint.
   */
  watchChanges(listener: (seq: number) => void): { close(): void } {
    return this.listener.watch((seq) => {
      // Other processes' commits: the next write here can predict its sequence numbers.
      this.writes.observe(seq);
      listener(seq);
    });
  }

  /** How group commits went: in one round trip (predicted) or two (tests, benchmarks). */
  get groupCommits(): { oneRoundTrip: number; twoRoundTrips: number } {
    return { ...this.writes.stats };
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
    await this.writes.drained();
    await this.maintenance;
    await this.termStats.close();
    if (this.target.ownsPool) await this.target.pool.end();
  }
}

/** Opens (creating and migrating when needed) a PostgreSQL store. */
export function openPostgresStore(options: PostgresStoreOptions): Promise<PostgresStore> {
  return PostgresStore.open(options);
}
