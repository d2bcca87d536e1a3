import { chmodSync, closeSync, existsSync, mkdirSync, openSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { CtxbusError } from '@ctxbus/core';
import type { StoreDomains } from '../composed-store.js';
import { ComposedStore } from '../composed-store.js';
import type { StoreInfo } from '../store.js';
import { SqliteAudit } from './sqlite-audit.js';
import { SqliteChangeLog } from './sqlite-changes.js';
import { damagedError, SqliteConnection, storageError } from './sqlite-connection.js';
import { quickCheck } from './sqlite-integrity.js';
import { SqliteItems } from './sqlite-items.js';
import { SqliteLifecycle } from './sqlite-lifecycle.js';
import { applySqliteMigrations, SQLITE_SCHEMA_VERSION } from './sqlite-migrations.js';
import { SqlitePresence } from './sqlite-presence.js';
import { SqliteSearch } from './sqlite-search.js';
import { SqliteSubscriptions } from './sqlite-subscriptions.js';
import { SqliteTasks } from './sqlite-tasks.js';
import { SqliteTokens } from './sqlite-tokens.js';
import { SqliteUsage } from './sqlite-usage.js';
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
  /**
   * Tasks one runtime may have waiting (SUBMITTED or AUTH_REQUIRED) per team; past it a create
   * is refused with `limit_reached` (default DEFAULT_MAX_WAITING_TASKS, 10,000).
   */
  maxWaitingTasksPerRuntime?: number;
}

/**
 * The database holds every team's items, private ones included, and push subscriptions'
 * signing secrets: only its owner may read it. A new file (and the directory made for it) is
 * created so; SQLite gives its -wal and -shm files the database file's mode, and an older
 * file that others could read is narrowed when it is ours.
 */
function ownerOnly(path: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  if (!existsSync(path)) closeSync(openSync(path, 'a', 0o600));
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    try {
      const stat = statSync(file);
      if ((stat.mode & 0o077) !== 0 && stat.uid === process.getuid?.()) chmodSync(file, 0o600);
    } catch {
      // Not there (yet), or not ours to change.
    }
  }
}

/**
 * SQLite store: the embedded default. One file, WAL, FTS5 search. A composition of one object
 * per domain of the contract (sqlite-items.ts, sqlite-changes.ts, ...) over one connection.
 */
export class SqliteStore extends ComposedStore {
  readonly info: StoreInfo;
  readonly clock: () => Date;
  protected readonly domains: StoreDomains;
  private readonly connection: SqliteConnection;
  private readonly items: SqliteItems;

  private constructor(
    connection: SqliteConnection,
    vectorMemoryMb: number,
    maxWaitingTasksPerRuntime: number | undefined,
  ) {
    super();
    this.connection = connection;
    this.clock = connection.clock;
    const search = new SqliteSearch({
      statement: (sql) => connection.statement(sql),
      exec: (sql) => connection.db.exec(sql),
    });
    const changes = new SqliteChangeLog(connection);
    this.items = new SqliteItems(connection, changes, search);
    const writes = this.items.writes;
    const audit = new SqliteAudit(connection);
    this.domains = {
      items: this.items,
      changes,
      vectors: new SqliteVectors(connection, vectorMemoryMb),
      lifecycle: new SqliteLifecycle(
        connection,
        (row) => search.remove(row),
        () => {
          if (writes.hasPending) writes.flush();
        },
      ),
      subscriptions: new SqliteSubscriptions(connection),
      tokens: new SqliteTokens(connection),
      tasks: new SqliteTasks(connection, audit, {
        maxWaitingPerRuntime: maxWaitingTasksPerRuntime,
      }),
      audit,
      presence: new SqlitePresence(connection),
      usage: new SqliteUsage(connection),
    };
    this.info = {
      backend: 'sqlite',
      schemaVersion: SQLITE_SCHEMA_VERSION,
      location: connection.location,
      vectorIndex: 'exact',
    };
  }

  explainError(error: unknown): unknown {
    return this.connection.explain(error);
  }

  damage(): CtxbusError | null {
    return this.connection.damage;
  }

  /** SQLite's quick_check, on a worker thread (an in-memory database has no file to check). */
  async checkIntegrity(): Promise<CtxbusError | null> {
    const { location } = this.connection;
    if (location === ':memory:') return null;
    const answer = await quickCheck(location);
    if ('error' in answer) {
      this.connection.explain(Object.assign(new Error(answer.error), { errcode: answer.errcode }));
    } else if (answer.problems.join() !== 'ok') {
      // One line: the first problems, without quick_check's "*** in database main ***" header.
      const lines = answer.problems.flatMap((problem) => problem.split('\n'));
      const detail = lines.filter((line) => line.trim() !== '' && !line.startsWith('***'));
      this.connection.damage ??= damagedError(location, detail.slice(0, 3).join('; '));
    }
    return this.connection.damage;
  }

  static open(options: SqliteStoreOptions): SqliteStore {
    if (options.path !== ':memory:') ownerOnly(options.path);
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
      const store = new SqliteStore(
        connection,
        options.vectorMemoryMb ?? 256,
        options.maxWaitingTasksPerRuntime,
      );
      applySqliteMigrations(connection, options.migrate ?? true);
      // Planner statistics: sampled (cheap), refreshed as the database grows (see analyzeIfGrown).
      db.exec('PRAGMA analysis_limit = 400');
      store.items.writes.analyzeIfGrown(connection.maxSeq());
      return store;
    } catch (error) {
      db.close();
      // A file that is not a database, or whose first pages are damaged, said as such.
      throw storageError(error, options.path);
    }
  }

  /** Commits queued writes, then closes the database. */
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
