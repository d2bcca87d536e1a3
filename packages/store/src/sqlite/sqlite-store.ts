import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { ContextItem, ListOptions, NewContextItem, Viewer } from '@ctxbus/core';
import type {
  ArchivedItem,
  Change,
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
import { SqliteChangeLog } from './sqlite-changes.js';
import { SqliteConnection } from './sqlite-connection.js';
import { SqliteItems } from './sqlite-items.js';
import { SqliteLifecycle } from './sqlite-lifecycle.js';
import { applySqliteMigrations, SQLITE_SCHEMA_VERSION } from './sqlite-migrations.js';
import { SqliteSearch } from './sqlite-search.js';
import { SqliteSubscriptions } from './sqlite-subscriptions.js';
import { SqliteTokens } from './sqlite-tokens.js';
import { SqliteVectors } from './sqlite-vectors.js';

export interface SqliteStoreOptions {
  /** Database file, or ':memory:'. Its directory is created when missing. */
  path: string;
  /** Source of "now" for expiry and consumption times. */
  clock?: () => Date;
  /**
   * `normal` (default): WAL with synchronous=NORMAL; a crashed process loses nothing
   * committed, a power cut may lose the last commits. `full`: fsync on every commit.
   */
  durability?: 'normal' | 'full';
  /** Apply pending migrations on open (default true). */
  migrate?: boolean;
  /** How long a writer waits for another process's lock, in ms (default 5000). */
  busyTimeoutMs?: number;
  /**
   * Memory (MB) for each embedding model's vectors, compared exactly in JavaScript (default
   * 256); past it, or with 0, vector search scans in SQL (slower).
   */
  vectorMemoryMb?: number;
}

/**
 * SQLite store: the embedded default. One file, WAL, FTS5 search. A composition of one object
 * per domain of the contract (sqlite-items.ts, sqlite-changes.ts, ...) over one connection.
 */
export class SqliteStore implements Store {
  readonly info: StoreInfo;
  private readonly connection: SqliteConnection;
  private readonly items: SqliteItems;
  private readonly changes: SqliteChangeLog;
  private readonly vectors: SqliteVectors;
  private readonly lifecycle: SqliteLifecycle;
  private readonly subscriptions: SqliteSubscriptions;
  private readonly tokens: SqliteTokens;

  private constructor(connection: SqliteConnection, vectorMemoryMb: number) {
    this.connection = connection;
    const statement = (sql: string) => connection.statement(sql);
    const transaction = <T>(work: () => T) => connection.transaction(work);
    const search = new SqliteSearch({ statement, exec: (sql) => connection.db.exec(sql) });
    this.changes = new SqliteChangeLog(connection);
    this.items = new SqliteItems(connection, this.changes, search);
    this.vectors = new SqliteVectors(connection, vectorMemoryMb);
    this.lifecycle = new SqliteLifecycle(
      statement,
      transaction,
      () => connection.maxSeq(),
      (row) => search.remove(row),
    );
    this.subscriptions = new SqliteSubscriptions(statement, transaction);
    this.tokens = new SqliteTokens(connection);
    this.info = {
      backend: 'sqlite',
      schemaVersion: SQLITE_SCHEMA_VERSION,
      location: connection.location,
      vectorIndex: 'exact',
    };
  }

  static open(options: SqliteStoreOptions): SqliteStore {
    if (options.path !== ':memory:') mkdirSync(dirname(options.path), { recursive: true });
    const db = new DatabaseSync(options.path, { timeout: options.busyTimeoutMs ?? 5000 });
    try {
      db.exec('PRAGMA journal_mode = WAL');
      db.exec(`PRAGMA synchronous = ${options.durability === 'full' ? 'FULL' : 'NORMAL'}`);
      db.exec('PRAGMA foreign_keys = ON');
      const connection = new SqliteConnection(
        db,
        options.path,
        options.clock ?? (() => new Date()),
      );
      const store = new SqliteStore(connection, options.vectorMemoryMb ?? 256);
      applySqliteMigrations(connection, options.migrate ?? true);
      // Planner statistics: sampled (cheap), refreshed as the database grows (see analyzeIfGrown).
      db.exec('PRAGMA analysis_limit = 400');
      store.items.writes.analyzeIfGrown(connection.maxSeq());
      return store;
    } catch (error) {
      db.close();
      throw error;
    }
  }

  // ---------------------------------------------------------------- items

  /**
   * Queues the write; every write queued in the same event-loop turn commits in one
   * transaction (group commit), each inside its own savepoint so that one write's conflict
   * fails only that write. Resolves after the commit.
   */
  writeItems(items: readonly NewContextItem[]): Promise<WriteOutcome[]> {
    return this.items.writeItems(items);
  }

  getItem(viewer: Viewer, id: string): Promise<ContextItem | null> {
    return this.items.getItem(viewer, id);
  }

  listItems(viewer: Viewer, options: ListOptions): Promise<ContextItem[]> {
    return this.items.listItems(viewer, options);
  }

  searchItems(viewer: Viewer, options: SearchOptions): Promise<SearchHit[]> {
    return this.items.searchItems(viewer, options);
  }

  consumeItem(viewer: Viewer, id: string): Promise<ContextItem | null> {
    return this.items.consumeItem(viewer, id);
  }

  // ---------------------------------------------------------------- changes

  readChanges(options: ReadChangesOptions): Promise<Change[]> {
    return this.changes.readChanges(options);
  }

  latestSeq(): Promise<number> {
    return this.changes.latestSeq();
  }

  // ---------------------------------------------------------------- vectors

  itemsToEmbed(
    model: string,
    options: { afterSeq: number; limit: number },
  ): Promise<EmbeddingSource[]> {
    return this.vectors.itemsToEmbed(model, options);
  }

  saveVectors(model: string, vectors: readonly ItemVector[]): Promise<void> {
    return this.vectors.saveVectors(model, vectors);
  }

  vectorSearch(viewer: Viewer, options: VectorSearchOptions): Promise<VectorHit[]> {
    return this.vectors.vectorSearch(viewer, options);
  }

  // ---------------------------------------------------------------- lifecycle

  async sweepItems(options: SweepOptions): Promise<SweepResult> {
    this.connection.assertOpen();
    // Queued writes first: a sweep never runs between a write's read and its commit.
    if (this.items.writes.hasPending) this.items.writes.flush();
    return this.lifecycle.sweep(options);
  }

  async listArchivedItems(
    viewer: Viewer,
    options: { limit: number; beforeArchiveId?: number },
  ): Promise<ArchivedItem[]> {
    this.connection.assertOpen();
    return this.lifecycle.listArchived(viewer, options);
  }

  // ---------------------------------------------------------------- subscriptions

  async createSubscription(record: SubscriptionRecord, maxPerRuntime?: number): Promise<void> {
    this.connection.assertOpen();
    this.subscriptions.create(record, maxPerRuntime);
  }

  async getSubscription(id: string): Promise<SubscriptionRecord | null> {
    this.connection.assertOpen();
    return this.subscriptions.get(id);
  }

  async listSubscriptions(options: ListSubscriptionsOptions = {}): Promise<SubscriptionRecord[]> {
    this.connection.assertOpen();
    return this.subscriptions.list(options);
  }

  async deleteSubscription(id: string): Promise<boolean> {
    this.connection.assertOpen();
    return this.subscriptions.delete(id);
  }

  async leaseSubscription(
    id: string,
    holder: string,
    now: string,
    until: string,
  ): Promise<boolean> {
    this.connection.assertOpen();
    return this.subscriptions.lease(id, holder, Date.parse(now), Date.parse(until));
  }

  async saveSubscriptionProgress(
    id: string,
    holder: string | null,
    progress: SubscriptionProgress,
    now: string,
  ): Promise<boolean> {
    this.connection.assertOpen();
    return this.subscriptions.saveProgress(id, holder, progress, Date.parse(now));
  }

  async listDeadLetters(
    subscriptionId: string,
    options: { afterSeq?: number; limit: number },
  ): Promise<DeadLetter[]> {
    this.connection.assertOpen();
    return this.subscriptions.deadLetters(subscriptionId, options.afterSeq ?? 0, options.limit);
  }

  // ---------------------------------------------------------------- tokens

  createToken(record: TokenRecord): Promise<void> {
    return this.tokens.createToken(record);
  }

  findTokenByHash(hash: string): Promise<TokenRecord | null> {
    return this.tokens.findTokenByHash(hash);
  }

  listTokens(options?: ListTokensOptions): Promise<TokenRecord[]> {
    return this.tokens.listTokens(options);
  }

  revokeToken(id: string): Promise<TokenRecord | null> {
    return this.tokens.revokeToken(id);
  }

  async close(): Promise<void> {
    if (this.connection.isClosed) return;
    if (this.items.writes.hasPending) this.items.writes.flush();
    this.connection.close();
  }
}

/** Opens (creating and migrating when needed) the embedded SQLite store. */
export function openSqliteStore(options: SqliteStoreOptions): SqliteStore {
  return SqliteStore.open(options);
}
