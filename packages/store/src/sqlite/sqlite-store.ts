import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { SQLInputValue, StatementSync } from 'node:sqlite';
import { DatabaseSync } from 'node:sqlite';
import type { ContextItem, ItemFilter, ListOptions, NewContextItem, Viewer } from '@ctxbus/core';
import { CtxbusError, URGENCY_RANK } from '@ctxbus/core';
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
import {
  bytesToVector,
  dotProduct,
  normalizeVector,
  vectorToBytes,
} from '../vectors/vector-math.js';
import { VectorMemory } from '../vectors/vector-memory.js';
import { SqliteLifecycle } from './sqlite-lifecycle.js';
import { SQLITE_MIGRATIONS, SQLITE_SCHEMA_VERSION } from './sqlite-migrations.js';
import type { ItemRow } from './sqlite-rows.js';
import { rowToItem } from './sqlite-rows.js';
import { SqliteSearch } from './sqlite-search.js';
import { SqliteSubscriptions } from './sqlite-subscriptions.js';

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

interface TokenRow {
  id: string;
  hash: string;
  role: 'admin' | 'runtime';
  team_id: string | null;
  runtime: string | null;
  label: string | null;
  created_at: number;
  revoked_at: number | null;
}

const iso = (ms: number): string => new Date(ms).toISOString();

function rowToToken(row: TokenRow): TokenRecord {
  return {
    id: row.id,
    hash: row.hash,
    role: row.role,
    teamId: row.team_id,
    runtime: row.runtime,
    label: row.label,
    createdAt: iso(row.created_at),
    revokedAt: row.revoked_at === null ? null : iso(row.revoked_at),
  };
}

/** The smallest string greater than every string starting with `prefix`. */
function prefixUpperBound(prefix: string): string {
  return `${prefix}\u{10FFFF}`;
}

const SCOPE_KINDS = new Set(['task', 'thread', 'user', 'team']);

interface Sql {
  where: string;
  params: SQLInputValue[];
}

/** WHERE clause (for table alias `i`) for a viewer and a filter; always bounded by team. */
function filterSql(viewer: Viewer, filter: ItemFilter, nowMs: number): Sql {
  const clauses = [
    'i.team_id = ?',
    "(i.visibility = 'team' OR i.source_runtime = ?)",
    '(i.expires_at IS NULL OR i.expires_at > ?)',
  ];
  const params: SQLInputValue[] = [viewer.teamId, viewer.runtime, nowMs];
  const inList = (column: string, values: readonly SQLInputValue[]) => {
    clauses.push(`${column} IN (${values.map(() => '?').join(', ')})`);
    params.push(...values);
  };
  if (!filter.includeSuperseded) clauses.push('i.superseded_by IS NULL');
  if (filter.scopes?.length) inList('i.scope', filter.scopes);
  if (filter.scopeKey !== undefined) {
    clauses.push('i.scope_key = ?');
    params.push(filter.scopeKey);
  }
  if (filter.scopeKeyPrefix !== undefined) {
    const kind = filter.scopeKeyPrefix.endsWith(':') ? filter.scopeKeyPrefix.slice(0, -1) : null;
    if (kind !== null && SCOPE_KINDS.has(kind)) {
      clauses.push('i.scope_kind = ?');
      params.push(kind);
    } else {
      clauses.push('i.scope_key >= ? AND i.scope_key < ?');
      params.push(filter.scopeKeyPrefix, prefixUpperBound(filter.scopeKeyPrefix));
    }
  }
  if (filter.types?.length) inList('i.type', filter.types);
  if (filter.tags?.length) {
    clauses.push(
      `i.rid IN (SELECT rid FROM item_tags WHERE tag IN (${filter.tags.map(() => '?').join(', ')}))`,
    );
    params.push(...filter.tags.map((tag) => tag.toLowerCase()));
  }
  if (filter.urgencies?.length)
    inList(
      'i.urgency',
      filter.urgencies.map((u) => URGENCY_RANK[u]),
    );
  if (filter.minUrgency !== undefined && filter.minUrgency !== 'background') {
    clauses.push('i.urgency >= ?');
    params.push(URGENCY_RANK[filter.minUrgency]);
  }
  if (filter.sourceRuntime !== undefined) {
    clauses.push('i.source_runtime = ?');
    params.push(filter.sourceRuntime);
  }
  if (filter.sinceSeq !== undefined) {
    clauses.push('i.rid > ?');
    params.push(filter.sinceSeq);
  }
  if (filter.beforeSeq !== undefined) {
    clauses.push('i.rid < ?');
    params.push(filter.beforeSeq);
  }
  if (filter.createdAfter !== undefined) {
    clauses.push('i.created_at > ?');
    params.push(Date.parse(filter.createdAfter));
  }
  if (filter.key !== undefined) {
    clauses.push('i.item_key = ?');
    params.push(filter.key);
  }
  if (filter.keyPrefix !== undefined) {
    // A range the key index can use, then the exact rule: the key itself or a key under it.
    const prefix = filter.keyPrefix.replace(/\/+$/, '');
    clauses.push(
      'i.item_key IS NOT NULL AND i.item_key >= ? AND i.item_key < ? AND (i.item_key = ? OR substr(i.item_key, 1, ?) = ?)',
    );
    params.push(prefix, prefixUpperBound(`${prefix}/`), prefix, prefix.length + 1, `${prefix}/`);
  }
  if (filter.hasKey === true) clauses.push('i.item_key IS NOT NULL');
  if (filter.hasKey === false) clauses.push('i.item_key IS NULL');
  if (filter.unconsumed) clauses.push('i.consumed = 0');
  if (filter.scopeKinds?.length) {
    const kinds = filter.scopeKinds.filter((kind) => kind !== 'none');
    const alternatives: string[] = [];
    if (kinds.length > 0) {
      alternatives.push(`i.scope_kind IN (${kinds.map(() => '?').join(', ')})`);
      params.push(...kinds);
    }
    if (filter.scopeKinds.includes('none')) alternatives.push('i.scope_kind IS NULL');
    clauses.push(`(${alternatives.join(' OR ')})`);
  }
  if (filter.latestPerScopeKey) clauses.push('i.scope_key IS NOT NULL');
  else if (filter.withoutTags?.length) {
    const { sql, values } = withoutTagsSql('i.rid', filter.withoutTags);
    clauses.push(sql);
    params.push(...values);
  }
  return { where: clauses.join(' AND '), params };
}

function withoutTagsSql(
  column: string,
  tags: readonly string[],
): { sql: string; values: string[] } {
  return {
    sql: `${column} NOT IN (SELECT rid FROM item_tags WHERE tag IN (${tags.map(() => '?').join(', ')}))`,
    values: tags.map((tag) => tag.toLowerCase()),
  };
}

interface PendingWrite {
  items: readonly NewContextItem[];
  resolve: (outcomes: WriteOutcome[]) => void;
  reject: (error: unknown) => void;
}

/** SQLite store: the embedded default. One file, WAL, FTS5 search. */
export class SqliteStore implements Store {
  readonly info: StoreInfo;
  private readonly db: DatabaseSync;
  private readonly clock: () => Date;
  private readonly statements = new Map<string, StatementSync>();
  private pendingWrites: PendingWrite[] = [];
  /** The sequence at which planner statistics are next refreshed. */
  private nextAnalyzeAt = 0;
  private flushScheduled = false;
  private closed = false;
  /** The query vector `ctxbus_query_cosine` compares with, set around each vector search. */
  private queryVector: Float32Array | null = null;
  private readonly vectorMemory: VectorMemory | null;
  private readonly subscriptions: SqliteSubscriptions;
  private readonly lifecycle: SqliteLifecycle;
  private readonly search: SqliteSearch;

  private constructor(
    db: DatabaseSync,
    location: string,
    clock: () => Date,
    vectorMemoryMb: number,
  ) {
    this.db = db;
    this.clock = clock;
    this.subscriptions = new SqliteSubscriptions(
      (sql) => this.statement(sql),
      (work) => this.transaction(work),
    );
    this.search = new SqliteSearch({
      statement: (sql) => this.statement(sql),
      exec: (sql) => this.db.exec(sql),
    });
    this.lifecycle = new SqliteLifecycle(
      (sql) => this.statement(sql),
      (work) => this.transaction(work),
      () => this.maxSeq(),
      (row) => this.search.remove(row),
    );
    this.info = {
      backend: 'sqlite',
      schemaVersion: SQLITE_SCHEMA_VERSION,
      location,
      vectorIndex: 'exact',
    };
    this.vectorMemory =
      vectorMemoryMb > 0 ? this.createVectorMemory(vectorMemoryMb * 1024 * 1024) : null;
    // Exact cosine in the scan itself (when the vectors are not held in memory), so vector
    // search reuses the SQL filters of every read.
    db.function('ctxbus_query_cosine', { deterministic: false }, (stored) => {
      const query = this.queryVector;
      if (!query || !(stored instanceof Uint8Array) || stored.byteLength !== query.byteLength)
        return null;
      return dotProduct(bytesToVector(stored), query);
    });
  }

  static open(options: SqliteStoreOptions): SqliteStore {
    if (options.path !== ':memory:') mkdirSync(dirname(options.path), { recursive: true });
    const db = new DatabaseSync(options.path, { timeout: options.busyTimeoutMs ?? 5000 });
    try {
      db.exec('PRAGMA journal_mode = WAL');
      db.exec(`PRAGMA synchronous = ${options.durability === 'full' ? 'FULL' : 'NORMAL'}`);
      db.exec('PRAGMA foreign_keys = ON');
      const store = new SqliteStore(
        db,
        options.path,
        options.clock ?? (() => new Date()),
        options.vectorMemoryMb ?? 256,
      );
      store.applyMigrations(options.migrate ?? true);
      // Planner statistics: sampled (cheap), refreshed as the database grows (see analyzeIfGrown).
      db.exec('PRAGMA analysis_limit = 400');
      store.analyzeIfGrown(store.maxSeq());
      return store;
    } catch (error) {
      db.close();
      throw error;
    }
  }

  /** Applies pending migrations; refuses a database written by a newer ctxbus. */
  private applyMigrations(apply: boolean): void {
    this.db.exec(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)',
    );
    const current = this.schemaVersion();
    if (current > SQLITE_SCHEMA_VERSION) {
      throw new CtxbusError(
        'schema_too_new',
        `the database at ${this.info.location} has schema version ${current}, newer than this ctxbus knows (${SQLITE_SCHEMA_VERSION}); upgrade ctxbus`,
        { details: { current, known: SQLITE_SCHEMA_VERSION } },
      );
    }
    if (!apply) return;
    for (const migration of SQLITE_MIGRATIONS) {
      if (migration.version <= current) continue;
      // A rebuilt table loses its indexes: keep their definitions to create them again.
      const indexes = migration.rebuilds
        ? (
            this.db
              .prepare(
                "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL",
              )
              .all(migration.rebuilds) as { sql: string }[]
          ).map((row) => row.sql)
        : [];
      if (migration.rebuilds) this.db.exec('PRAGMA foreign_keys = OFF');
      try {
        this.transaction(() => {
          this.db.exec(migration.sql);
          migration.run?.(this.db);
          for (const index of indexes) this.db.exec(index);
          if (migration.rebuilds) {
            const broken = this.db.prepare('PRAGMA foreign_key_check').all();
            if (broken.length > 0) {
              throw new CtxbusError(
                'internal',
                `migration ${migration.version} (${migration.name}) would break ${broken.length} foreign key(s); nothing was changed`,
              );
            }
          }
          this.db
            .prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)')
            .run(migration.version, migration.name, Date.now());
        });
      } finally {
        if (migration.rebuilds) this.db.exec('PRAGMA foreign_keys = ON');
      }
    }
  }

  private schemaVersion(): number {
    const row = this.db.prepare('SELECT max(version) AS version FROM schema_migrations').get() as
      | { version: number | null }
      | undefined;
    return row?.version ?? 0;
  }

  private statement(sql: string): StatementSync {
    let statement = this.statements.get(sql);
    if (!statement) {
      if (this.statements.size > 500) this.statements.clear();
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  private transaction<T>(work: () => T): T {
    this.assertOpen();
    this.db.exec('BEGIN IMMEDIATE');
    try {
      const result = work();
      this.db.exec('COMMIT');
      return result;
    } catch (error) {
      this.db.exec('ROLLBACK');
      throw error;
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new CtxbusError('unavailable', 'the store is closed');
  }

  /** An item of a team by id (ids are unique within a team, not across teams). */
  private itemRow(teamId: string, id: string): ItemRow | undefined {
    return this.statement('SELECT * FROM items WHERE team_id = ? AND id = ?').get(teamId, id) as
      | ItemRow
      | undefined;
  }

  private visibleRow(viewer: Viewer, id: string, nowMs: number): ItemRow | undefined {
    return this.statement(
      `SELECT * FROM items i WHERE i.id = ? AND i.team_id = ?
         AND (i.visibility = 'team' OR i.source_runtime = ?)
         AND (i.expires_at IS NULL OR i.expires_at > ?)`,
    ).get(id, viewer.teamId, viewer.runtime, nowMs) as ItemRow | undefined;
  }

  /**
   * Queues the write; every write queued in the same event-loop turn commits in one
   * transaction (group commit), each inside its own savepoint so that one write's conflict
   * fails only that write. Resolves after the commit.
   */
  writeItems(items: readonly NewContextItem[]): Promise<WriteOutcome[]> {
    this.assertOpen();
    return new Promise((resolve, reject) => {
      this.pendingWrites.push({ items, resolve, reject });
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => this.flushWrites());
      }
    });
  }

  private flushWrites(): void {
    this.flushScheduled = false;
    const batch = this.pendingWrites;
    this.pendingWrites = [];
    if (batch.length === 0) return;
    if (this.closed) {
      for (const write of batch)
        write.reject(new CtxbusError('unavailable', 'the store is closed'));
      return;
    }
    const nowMs = this.clock().getTime();
    const settle: (() => void)[] = [];
    try {
      this.transaction(() => {
        let seq = this.maxSeq();
        for (const write of batch) {
          this.db.exec('SAVEPOINT write_group');
          try {
            const written = this.writeGroup(write.items, seq, nowMs);
            this.db.exec('RELEASE write_group');
            seq = written.seq;
            settle.push(() => write.resolve(written.outcomes));
          } catch (error) {
            this.db.exec('ROLLBACK TO write_group');
            this.db.exec('RELEASE write_group');
            settle.push(() => write.reject(error));
          }
        }
      });
    } catch (error) {
      for (const write of batch) write.reject(error);
      return;
    }
    for (const done of settle) done();
    this.analyzeIfGrown(this.maxSeq());
  }

  /**
   * Refreshes the query planner's statistics each time the change log has doubled (from 1,000
   * changes on). Without them SQLite may walk the newest-first index for a rare filter (a
   * `hasKey` list took 12 ms at 30k items; 0.04 ms with statistics).
   */
  private analyzeIfGrown(seq: number): void {
    if (seq < this.nextAnalyzeAt) return;
    if (seq >= 1_000) this.db.exec('ANALYZE');
    this.nextAnalyzeAt = Math.max(1_000, seq * 2);
  }

  /** Writes one caller's items after sequence `seq`; returns the outcomes and the new seq. */
  private writeGroup(
    items: readonly NewContextItem[],
    startSeq: number,
    nowMs: number,
  ): { outcomes: WriteOutcome[]; seq: number } {
    let seq = startSeq;
    const outcomes: WriteOutcome[] = [];
    // Items created earlier in this group, with the input hash they were written with.
    const created = new Map<string, { item: ContextItem; inputHash: string }>();
    const conflict = (id: string) =>
      new CtxbusError(
        'conflict',
        `item ${id} already exists with different content; use a new id`,
        {
          details: { id },
        },
      );
    for (const item of items) {
      const earlier = created.get(item.id);
      if (earlier) {
        if (earlier.inputHash !== item.inputHash) throw conflict(item.id);
        outcomes.push({ item: earlier.item, status: 'existing' });
        continue;
      }
      const existing = this.itemRow(item.teamId, item.id);
      if (existing) {
        if (existing.input_hash !== item.inputHash) throw conflict(item.id);
        outcomes.push({ item: rowToItem(existing), status: 'existing' });
        continue;
      }
      const writer = { teamId: item.teamId, runtime: item.source.runtime };
      const supersedes = this.resolveSupersedes(item, writer, nowMs);
      seq += 1;
      this.insertItem(item, seq, supersedes);
      const { inputHash, ...fields } = item;
      const stored: ContextItem = {
        ...fields,
        seq,
        supersedes: supersedes?.id ?? null,
        supersededBy: null,
        consumed: false,
        consumedBy: [],
      };
      created.set(item.id, { item: stored, inputHash });
      outcomes.push({ item: stored, status: 'created' });
      if (supersedes !== null) {
        seq += 1;
        this.statement('UPDATE items SET superseded_by = ? WHERE rid = ?').run(
          item.id,
          supersedes.rid,
        );
        this.insertChange(seq, 'superseded', supersedes.rid, item.teamId, nowMs);
        const replaced = created.get(supersedes.id);
        if (replaced) replaced.item.supersededBy = item.id;
      }
    }
    return { outcomes, seq };
  }

  /** The item a new item replaces: named by `supersedes`, or the live holder of its key. */
  private resolveSupersedes(item: NewContextItem, writer: Viewer, nowMs: number): ItemRow | null {
    let target: ItemRow | undefined;
    if (item.supersedes !== null) {
      target = this.visibleRow(writer, item.supersedes, nowMs);
      if (!target) {
        throw new CtxbusError(
          'invalid_reference',
          `supersedes names item ${item.supersedes}, which does not exist (or is not visible to ${writer.runtime} in team ${writer.teamId})`,
          { details: { field: 'supersedes', id: item.supersedes } },
        );
      }
    }
    if (item.key !== null) {
      const holder = this.statement(
        `SELECT * FROM items i WHERE i.team_id = ? AND i.item_key = ? AND i.superseded_by IS NULL
           AND (i.visibility = 'team' OR i.source_runtime = ?)
           AND (i.expires_at IS NULL OR i.expires_at > ?)
         ORDER BY i.rid DESC LIMIT 1`,
      ).get(writer.teamId, item.key, writer.runtime, nowMs) as ItemRow | undefined;
      if (holder && target && holder.rid !== target.rid) {
        throw new CtxbusError(
          'conflict',
          `key ${item.key} is held by item ${holder.id}, but supersedes names ${target.id}`,
          { details: { key: item.key, holder: holder.id, supersedes: target.id } },
        );
      }
      target ??= holder;
    }
    if (!target) return null;
    if (target.superseded_by !== null) {
      throw new CtxbusError(
        'conflict',
        `item ${target.id} was already superseded by ${target.superseded_by}; supersede that one instead`,
        { details: { id: target.id, supersededBy: target.superseded_by } },
      );
    }
    return target;
  }

  private insertItem(item: NewContextItem, seq: number, supersedes: ItemRow | null): void {
    const nowMs = Date.parse(item.createdAt);
    this.insertChange(seq, 'added', seq, item.teamId, nowMs);
    const tags = JSON.stringify(item.relevanceTags);
    this.statement(
      `INSERT INTO items (rid, id, team_id, type, title, content, summary, tags, source_runtime,
         source_agent, source_task, source_thread, scope, scope_key, scope_kind, urgency, visibility,
         created_at, expires_at, supersedes, item_key, runtime_options, redactions, tokens, input_hash)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      seq,
      item.id,
      item.teamId,
      item.type,
      item.title,
      item.content,
      item.summary,
      tags,
      item.source.runtime,
      item.source.agentId,
      item.source.taskId,
      item.source.threadId,
      item.scope,
      item.scopeKey,
      item.scopeKey === null ? null : (item.scopeKey.split(':', 1)[0] ?? null),
      URGENCY_RANK[item.urgency],
      item.visibility,
      nowMs,
      item.expiresAt === null ? null : Date.parse(item.expiresAt),
      supersedes?.id ?? null,
      item.key,
      JSON.stringify(item.runtimeOptions),
      JSON.stringify(item.redactions),
      item.tokens,
      item.inputHash,
    );
    for (const tag of item.relevanceTags) {
      this.statement('INSERT OR IGNORE INTO item_tags (tag, rid) VALUES (?, ?)').run(tag, seq);
    }
    this.search.add({
      rid: seq,
      team_id: item.teamId,
      visibility: item.visibility,
      source_runtime: item.source.runtime,
      title: item.title,
      content: item.content,
      summary: item.summary,
      tags,
    });
  }

  private insertChange(seq: number, kind: ChangeKind, rid: number, teamId: string, at: number) {
    this.statement(
      'INSERT INTO changes (seq, kind, item_rid, team_id, at) VALUES (?, ?, ?, ?, ?)',
    ).run(seq, kind, rid, teamId, at);
  }

  private maxSeq(): number {
    const row = this.statement('SELECT coalesce(max(seq), 0) AS seq FROM changes').get() as {
      seq: number;
    };
    return row.seq;
  }

  async getItem(viewer: Viewer, id: string): Promise<ContextItem | null> {
    this.assertOpen();
    const row = this.visibleRow(viewer, id, this.clock().getTime());
    return row ? rowToItem(row) : null;
  }

  async listItems(viewer: Viewer, options: ListOptions): Promise<ContextItem[]> {
    this.assertOpen();
    const { where, params } = filterSql(viewer, options, this.clock().getTime());
    if (options.latestPerScopeKey) {
      // The newest matching item of each scope key; withoutTags then drops whole keys.
      const without = options.withoutTags?.length
        ? withoutTagsSql('rid', options.withoutTags)
        : null;
      const rows = this.statement(
        `SELECT * FROM items WHERE rid IN (SELECT max(i.rid) FROM items i WHERE ${where} GROUP BY i.scope_key)
           ${without ? `AND ${without.sql}` : ''} ORDER BY rid DESC LIMIT ?`,
      ).all(...params, ...(without?.values ?? []), options.limit) as unknown as ItemRow[];
      return rows.map(rowToItem);
    }
    const rows = this.statement(
      `SELECT * FROM items i WHERE ${where} ORDER BY i.rid DESC LIMIT ?`,
    ).all(...params, options.limit) as unknown as ItemRow[];
    return rows.map(rowToItem);
  }

  async searchItems(viewer: Viewer, options: SearchOptions): Promise<SearchHit[]> {
    this.assertOpen();
    return this.search.search(viewer, options, filterSql(viewer, options, this.clock().getTime()));
  }

  async itemsToEmbed(
    model: string,
    options: { afterSeq: number; limit: number },
  ): Promise<EmbeddingSource[]> {
    this.assertOpen();
    const rows = this.statement(
      `SELECT i.* FROM items i
        WHERE i.rid > ? AND i.visibility = 'team' AND (i.expires_at IS NULL OR i.expires_at > ?)
          AND NOT EXISTS (SELECT 1 FROM item_vectors v WHERE v.model = ? AND v.rid = i.rid)
        ORDER BY i.rid LIMIT ?`,
    ).all(options.afterSeq, this.clock().getTime(), model, options.limit) as unknown as ItemRow[];
    return rows.map((row) => ({
      seq: row.rid,
      id: row.id,
      title: row.title,
      summary: row.summary,
      content: row.content,
      tags: JSON.parse(row.tags) as string[],
    }));
  }

  async saveVectors(model: string, vectors: readonly ItemVector[]): Promise<void> {
    this.assertOpen();
    const insert = this.statement(
      `INSERT INTO item_vectors (model, rid, vector)
       SELECT ?, rid, ? FROM items WHERE rid = ?
       ON CONFLICT (model, rid) DO NOTHING`,
    );
    this.transaction(() => {
      for (const { seq, vector } of vectors) {
        const unit = vector.length === 0 ? new Float32Array(0) : normalizeVector(vector);
        if (unit === null) continue;
        insert.run(model, vectorToBytes(unit), seq);
      }
    });
  }

  /** The in-memory exact scan over this database's vectors (see VectorMemory). */
  private createVectorMemory(maxBytes: number): VectorMemory {
    return new VectorMemory(
      {
        loadSince: async (model, afterVid, limit) => {
          const rows = this.statement(
            `SELECT v.vid, v.rid, i.team_id, v.vector
               FROM item_vectors v JOIN items i ON i.rid = v.rid
              WHERE v.model = ? AND v.vid > ? AND length(v.vector) > 0
              ORDER BY v.vid LIMIT ?`,
          ).all(model, afterVid, limit) as {
            vid: number;
            rid: number;
            team_id: string;
            vector: Uint8Array;
          }[];
          return rows.map((row) => ({
            vid: row.vid,
            rid: row.rid,
            teamId: row.team_id,
            // A copy: the row's bytes may be a view of a reused buffer.
            vector: bytesToVector(row.vector.slice()),
          }));
        },
        visible: async (viewer, options, rids) => {
          const { where, params } = filterSql(viewer, options, this.clock().getTime());
          const rows = this.statement(
            `SELECT i.* FROM items i WHERE i.rid IN (${rids.map(() => '?').join(', ')}) AND ${where}`,
          ).all(...rids, ...params) as unknown as ItemRow[];
          return rows.map((row) => ({ rid: row.rid, item: rowToItem(row) }));
        },
        stored: async (model, rids) =>
          (
            this.statement(
              `SELECT rid FROM item_vectors WHERE model = ? AND rid IN (${rids.map(() => '?').join(', ')})`,
            ).all(model, ...rids) as { rid: number }[]
          ).map((row) => row.rid),
      },
      maxBytes,
    );
  }

  async vectorSearch(viewer: Viewer, options: VectorSearchOptions): Promise<VectorHit[]> {
    this.assertOpen();
    const query = normalizeVector(options.vector);
    if (query === null) return [];
    if (this.vectorMemory) {
      const hits = await this.vectorMemory.search(viewer, options, query);
      if (hits) return hits;
    }
    const { where, params } = filterSql(viewer, options, this.clock().getTime());
    const search = this.statement(
      // Only (rid, score) go through the sort; the rows of the winners are read after it.
      `SELECT i.*, best.score FROM (
         SELECT v.rid, ctxbus_query_cosine(v.vector) AS score
           FROM item_vectors v JOIN items i ON i.rid = v.rid
          WHERE v.model = ? AND length(v.vector) = ? AND ${where}
          ORDER BY score DESC, v.rid DESC LIMIT ?) best
       JOIN items i ON i.rid = best.rid
       ORDER BY best.score DESC, best.rid DESC`,
    );
    this.queryVector = query;
    try {
      const rows = search.all(
        options.model,
        query.byteLength,
        ...params,
        options.limit,
      ) as unknown as (ItemRow & { score: number })[];
      return rows.map((row) => ({ item: rowToItem(row), score: row.score }));
    } finally {
      this.queryVector = null;
    }
  }

  async consumeItem(viewer: Viewer, id: string): Promise<ContextItem | null> {
    const nowMs = this.clock().getTime();
    const found = this.transaction(() => {
      const row = this.visibleRow(viewer, id, nowMs);
      if (!row) return false;
      const consumedBy = JSON.parse(row.consumed_by) as ContextItem['consumedBy'];
      if (consumedBy.some((entry) => entry.runtime === viewer.runtime)) return true;
      consumedBy.push({ runtime: viewer.runtime, at: iso(nowMs) });
      this.statement('UPDATE items SET consumed = 1, consumed_by = ? WHERE rid = ?').run(
        JSON.stringify(consumedBy),
        row.rid,
      );
      this.insertChange(this.maxSeq() + 1, 'consumed', row.rid, row.team_id, nowMs);
      return true;
    });
    if (!found) return null;
    const row = this.itemRow(viewer.teamId, id);
    return row ? rowToItem(row) : null;
  }

  async readChanges(options: ReadChangesOptions): Promise<Change[]> {
    this.assertOpen();
    const teamClause = options.teamId === undefined ? '' : 'AND c.team_id = ?';
    const params: SQLInputValue[] = [options.afterSeq];
    if (options.teamId !== undefined) params.push(options.teamId);
    params.push(options.limit);
    const rows = this.statement(
      `SELECT c.seq AS change_seq, c.kind AS change_kind, i.*
         FROM changes c JOIN items i ON i.rid = c.item_rid
        WHERE c.seq > ? ${teamClause}
        ORDER BY c.seq LIMIT ?`,
    ).all(...params) as unknown as (ItemRow & { change_seq: number; change_kind: ChangeKind })[];
    return rows.map((row) => ({
      seq: row.change_seq,
      kind: row.change_kind,
      teamId: row.team_id,
      item: rowToItem(row),
    }));
  }

  async latestSeq(): Promise<number> {
    this.assertOpen();
    return this.maxSeq();
  }

  // ---------------------------------------------------------------- lifecycle

  async sweepItems(options: SweepOptions): Promise<SweepResult> {
    this.assertOpen();
    // Queued writes first: a sweep never runs between a write's read and its commit.
    if (this.pendingWrites.length > 0) this.flushWrites();
    return this.lifecycle.sweep(options);
  }

  async listArchivedItems(
    viewer: Viewer,
    options: { limit: number; beforeArchiveId?: number },
  ): Promise<ArchivedItem[]> {
    this.assertOpen();
    return this.lifecycle.listArchived(viewer, options);
  }

  // ---------------------------------------------------------------- subscriptions

  async createSubscription(record: SubscriptionRecord, maxPerRuntime?: number): Promise<void> {
    this.assertOpen();
    this.subscriptions.create(record, maxPerRuntime);
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
    return this.subscriptions.lease(id, holder, Date.parse(now), Date.parse(until));
  }

  async saveSubscriptionProgress(
    id: string,
    holder: string | null,
    progress: SubscriptionProgress,
    now: string,
  ): Promise<boolean> {
    this.assertOpen();
    return this.subscriptions.saveProgress(id, holder, progress, Date.parse(now));
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
    this.statement(
      'INSERT INTO tokens (id, hash, role, team_id, runtime, label, created_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    ).run(
      record.id,
      record.hash,
      record.role,
      record.teamId,
      record.runtime,
      record.label,
      Date.parse(record.createdAt),
      record.revokedAt === null ? null : Date.parse(record.revokedAt),
    );
  }

  async findTokenByHash(hash: string): Promise<TokenRecord | null> {
    this.assertOpen();
    const row = this.statement('SELECT * FROM tokens WHERE hash = ?').get(hash) as
      | TokenRow
      | undefined;
    return row ? rowToToken(row) : null;
  }

  async listTokens(options: ListTokensOptions = {}): Promise<TokenRecord[]> {
    this.assertOpen();
    const clauses: string[] = [];
    const params: SQLInputValue[] = [];
    if (options.teamId !== undefined) {
      clauses.push('team_id = ?');
      params.push(options.teamId);
    }
    if (!options.includeRevoked) clauses.push('revoked_at IS NULL');
    const where = clauses.length > 0 ? `WHERE ${clauses.join(' AND ')}` : '';
    const rows = this.statement(`SELECT * FROM tokens ${where} ORDER BY created_at, id`).all(
      ...params,
    ) as unknown as TokenRow[];
    return rows.map(rowToToken);
  }

  async revokeToken(id: string): Promise<TokenRecord | null> {
    this.assertOpen();
    this.statement('UPDATE tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL').run(
      this.clock().getTime(),
      id,
    );
    const row = this.statement('SELECT * FROM tokens WHERE id = ?').get(id) as TokenRow | undefined;
    return row ? rowToToken(row) : null;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    if (this.pendingWrites.length > 0) this.flushWrites();
    this.closed = true;
    this.statements.clear();
    this.db.close();
  }
}

/** Opens (creating and migrating when needed) the embedded SQLite store. */
export function openSqliteStore(options: SqliteStoreOptions): SqliteStore {
  return SqliteStore.open(options);
}
