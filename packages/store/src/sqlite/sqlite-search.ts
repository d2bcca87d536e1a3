import type { DatabaseSync, SQLInputValue, StatementSync } from 'node:sqlite';
import type { ContextItem, Viewer } from '@ctxbus/core';
import { taskStatusOf } from '@ctxbus/core';
import { searchHits } from '../search/search-hits.js';
import { partitionRuntime, visiblePartitionRuntimes } from '../search/search-partition.js';
import {
  buildSearchQuery,
  CANDIDATE_LIMIT,
  THREAD_CONTEXT_CANDIDATES,
} from '../search/search-query.js';
import type { RerankCandidate } from '../search/search-rerank.js';
import { NEIGHBOUR_WINDOW, rerankCandidates } from '../search/search-rerank.js';
import type { SearchHit, SearchOptions } from '../store.js';
import type { ItemRow } from './sqlite-rows.js';
import { rowToItem } from './sqlite-rows.js';

// Full-text search in the embedded store, with one FTS5 index per visibility partition: a
// team's shared items, and each (team, runtime)'s private items. FTS5 ranks with statistics
// of the whole index it searches (row count, document frequencies, mean length); with one
// index for the hub, a team could read from its own scores which words other teams' items,
// and other runtimes' private items, contain. Per partition, a search reads only indexes
// whose every item the caller may see, and its scores and results depend on nothing else.

/** The columns of an item that the index and its partition need. */
export type IndexedRow = Pick<
  ItemRow,
  | 'rid'
  | 'team_id'
  | 'visibility'
  | 'source_runtime'
  | 'title'
  | 'content'
  | 'summary'
  | 'tags'
  | 'type'
  | 'runtime_options'
>;

/**
 * Whether an item has a full-text entry. A task's status item is bookkeeping (the task itself
 * is in the task store): none, as on PostgreSQL, so its writes (three per task) and its sweep
 * touch no index. Add and remove decide alike, so an index never holds, or is told to drop, an
 * entry the other did not.
 */
export function fullTextIndexed(row: Pick<IndexedRow, 'type' | 'tags' | 'runtime_options'>) {
  if (row.type !== 'status') return true;
  const item = {
    type: 'status' as const,
    relevanceTags: JSON.parse(row.tags) as string[],
    runtimeOptions: JSON.parse(row.runtime_options) as ContextItem['runtimeOptions'],
  };
  return taskStatusOf(item) === null;
}

/**
 * Migration 17: task status items written before the rule above leave their partitions'
 * indexes (inside the migration's transaction), so that removing them later stays exact.
 */
export function unindexTaskStatusItems(db: DatabaseSync): void {
  const search = new SqliteSearch({
    statement: (sql) => db.prepare(sql),
    exec: (sql) => db.exec(sql),
  });
  const rows = db
    .prepare(
      `SELECT rid, team_id, visibility, source_runtime, title, content, summary, tags, type,
              runtime_options
         FROM items WHERE type = 'status'`,
    )
    .all() as unknown as IndexedRow[];
  for (const row of rows) if (!fullTextIndexed(row)) search.drop(row);
}

interface Partition {
  pid: number;
  items: number;
}

/** The FTS5 table of partition `pid` (and `<name>_vocab`, its document frequencies). */
const ftsTable = (pid: number) => `search_fts_${Math.trunc(pid)}`;

/** Creates partition `pid`'s index; the row in `search_partitions` is the caller's. */
function createPartitionIndex(db: Pick<DatabaseSync, 'exec'>, pid: number): void {
  const table = ftsTable(pid);
  db.exec(
    `CREATE VIRTUAL TABLE ${table} USING fts5 (
       title, content, summary, tags,
       content = 'items', content_rowid = 'rid',
       tokenize = 'porter unicode61 remove_diacritics 2'
     );
     CREATE VIRTUAL TABLE ${table}_vocab USING fts5vocab(${table}, 'row');`,
  );
}

/**
 * Migration 7: the hub-wide index becomes one index per partition, filled from the items
 * table (inside the migration's transaction).
 */
export function splitSearchIndex(db: DatabaseSync): void {
  const partitions = db
    .prepare(
      `SELECT team_id, CASE visibility WHEN 'private' THEN source_runtime ELSE '' END AS runtime,
              count(*) AS items
         FROM items GROUP BY 1, 2 ORDER BY 1, 2`,
    )
    .all() as { team_id: string; runtime: string; items: number }[];
  const insert = db.prepare(
    'INSERT INTO search_partitions (team_id, runtime, items) VALUES (?, ?, ?) RETURNING pid',
  );
  for (const partition of partitions) {
    const { pid } = insert.get(partition.team_id, partition.runtime, partition.items) as {
      pid: number;
    };
    createPartitionIndex(db, pid);
    db.prepare(
      `INSERT INTO ${ftsTable(pid)} (rowid, title, content, summary, tags)
       SELECT rid, title, content, summary, tags FROM items
        WHERE team_id = ? AND CASE visibility WHEN 'private' THEN source_runtime ELSE '' END = ?
        ORDER BY rid`,
    ).run(partition.team_id, partition.runtime);
  }
  db.exec('DROP TABLE items_fts_vocab; DROP TABLE items_fts;');
}

export interface SqliteSearchContext {
  statement(sql: string): StatementSync;
  exec(sql: string): void;
}

export class SqliteSearch {
  constructor(private readonly db: SqliteSearchContext) {}

  /** Indexes a new item, creating its partition on first use (inside a write transaction). */
  add(row: IndexedRow): void {
    if (!fullTextIndexed(row)) return;
    const runtime = partitionRuntime(row.visibility, row.source_runtime);
    let partition = this.partition(row.team_id, runtime);
    if (!partition) {
      const { pid } = this.db
        .statement(
          'INSERT INTO search_partitions (team_id, runtime, items) VALUES (?, ?, 0) RETURNING pid',
        )
        .get(row.team_id, runtime) as { pid: number };
      createPartitionIndex(this.db, pid);
      partition = { pid, items: 0 };
    }
    const table = ftsTable(partition.pid);
    this.db
      .statement(
        `INSERT INTO ${table} (rowid, title, content, summary, tags) VALUES (?, ?, ?, ?, ?)`,
      )
      .run(row.rid, row.title, row.content, row.summary, row.tags);
    this.db
      .statement('UPDATE search_partitions SET items = items + 1 WHERE pid = ?')
      .run(partition.pid);
  }

  /** Takes an item out of its partition's index (inside the sweep's transaction). */
  remove(row: IndexedRow): void {
    if (fullTextIndexed(row)) this.drop(row);
  }

  /** Deletes the item's entry, which must be in its partition's index. */
  drop(row: IndexedRow): void {
    const partition = this.partition(
      row.team_id,
      partitionRuntime(row.visibility, row.source_runtime),
    );
    if (!partition) return;
    const table = ftsTable(partition.pid);
    this.db
      .statement(
        `INSERT INTO ${table} (${table}, rowid, title, content, summary, tags)
         VALUES ('delete', ?, ?, ?, ?, ?)`,
      )
      .run(row.rid, row.title, row.content, row.summary, row.tags);
    this.db
      .statement('UPDATE search_partitions SET items = items - 1 WHERE pid = ?')
      .run(partition.pid);
  }

  /**
   * Two passes over the partitions the viewer sees: each index finds its CANDIDATE_LIMIT best
   * items by bm25 for an OR query of the question's terms (very common terms left out, by the
   * viewer's document frequencies, see buildSearchQuery); each candidate brings its
   * NEIGHBOUR_WINDOW neighbours on either side in its thread; the re-ranker orders them all
   * (BM25F with coordination, plus thread context). Every row passes the same filters.
   */
  search(
    viewer: Viewer,
    options: SearchOptions,
    filter: { where: string; params: SQLInputValue[] },
  ): SearchHit[] {
    const partitions = visiblePartitionRuntimes(viewer.runtime)
      .map((runtime) => this.partition(viewer.teamId, runtime))
      .filter((partition): partition is Partition => partition !== undefined);
    if (partitions.length === 0) return [];
    const totalDocuments = partitions.reduce((sum, partition) => sum + partition.items, 0);
    const vocabularies = partitions.map((partition) =>
      this.db.statement(`SELECT doc FROM ${ftsTable(partition.pid)}_vocab WHERE term = ?`),
    );
    const query = buildSearchQuery(options.query, {
      documentFrequency: (term) =>
        vocabularies.reduce(
          (sum, vocabulary) =>
            sum + ((vocabulary.get(term) as { doc: number } | undefined)?.doc ?? 0),
          0,
        ),
      totalDocuments,
    });
    if (query === null) return [];
    const { where, params } = filter;
    type CandidateRow = ItemRow & { rank: number };
    const overfetch = CANDIDATE_LIMIT * 4;
    // Fast path: rank in FTS5 alone (over-fetching), then keep the rows the filter passes
    // (not expired, of the types, tags and scopes asked for). When that leaves too few and
    // the FTS result was cut short (a narrow filter), the exact path ranks only matching
    // rows, joined in SQL.
    const findIn = (pid: number, match: string): CandidateRow[] => {
      const table = ftsTable(pid);
      const ranked = this.db
        .statement(
          `SELECT rowid AS rid, bm25(${table}, 2, 1, 1, 1) AS rank FROM ${table}
            WHERE ${table} MATCH ? ORDER BY rank LIMIT ?`,
        )
        .all(match, overfetch) as { rid: number; rank: number }[];
      if (ranked.length === 0) return [];
      const visible = new Map(
        (
          this.db
            .statement(
              `SELECT * FROM items i WHERE ${where} AND i.rid IN (${ranked.map(() => '?').join(', ')})`,
            )
            .all(...params, ...ranked.map((entry) => entry.rid)) as unknown as ItemRow[]
        ).map((row) => [row.rid, row]),
      );
      const kept = ranked.flatMap((entry) => {
        const row = visible.get(entry.rid);
        return row ? [{ ...row, rank: entry.rank }] : [];
      });
      if (kept.length >= CANDIDATE_LIMIT || ranked.length < overfetch)
        return kept.slice(0, CANDIDATE_LIMIT);
      return this.db
        .statement(
          `SELECT i.*, bm25(${table}, 2, 1, 1, 1) AS rank
             FROM ${table} JOIN items i ON i.rid = ${table}.rowid
            WHERE ${table} MATCH ? AND ${where}
            ORDER BY rank LIMIT ?`,
        )
        .all(match, ...params, CANDIDATE_LIMIT) as unknown as CandidateRow[];
    };
    const findCandidates = (match: string) =>
      partitions.flatMap((partition) => findIn(partition.pid, match));
    let candidates = findCandidates(query.match);
    // Pruning common terms is for big corpora; when it leaves too few, use every term.
    if (candidates.length < CANDIDATE_LIMIT && query.fullMatch !== query.match) {
      candidates = findCandidates(query.fullMatch);
    }

    // Thread context for the lexically best candidates: rid-only look-ups through the thread
    // index, then one read of the rows not seen yet.
    const rows = new Map<number, ItemRow>(candidates.map((row) => [row.rid, row]));
    const inputs: RerankCandidate[] = candidates.map((row) => ({ ...row, ftsScore: row.rank }));
    const stats = { totalDocuments };
    const lexical = rerankCandidates(query, inputs, stats, { neighbourKernel: [] });
    const earlier = this.db.statement(
      `SELECT i.rid FROM items i WHERE ${where} AND i.source_thread = ? AND i.rid < ? ORDER BY i.rid DESC LIMIT ?`,
    );
    const later = this.db.statement(
      `SELECT i.rid FROM items i WHERE ${where} AND i.source_thread = ? AND i.rid > ? ORDER BY i.rid ASC LIMIT ?`,
    );
    const byRid = new Map(inputs.map((input) => [input.rid, input]));
    const missing = new Set<number>();
    for (const { rid } of lexical.slice(0, THREAD_CONTEXT_CANDIDATES)) {
      const thread = rows.get(rid)?.source_thread ?? null;
      const input = byRid.get(rid);
      if (thread === null || !input) continue;
      const ridsOf = (statement: StatementSync) =>
        (statement.all(...params, thread, rid, NEIGHBOUR_WINDOW) as { rid: number }[]).map(
          (row) => row.rid,
        );
      input.before = ridsOf(earlier);
      input.after = ridsOf(later);
      for (const neighbour of [...input.before, ...input.after])
        if (!rows.has(neighbour)) missing.add(neighbour);
    }
    if (missing.size > 0) {
      const list = [...missing];
      const fetched = this.db
        .statement(`SELECT * FROM items WHERE rid IN (${list.map(() => '?').join(', ')})`)
        .all(...list) as unknown as ItemRow[];
      for (const row of fetched) {
        rows.set(row.rid, row);
        inputs.push({ ...row, ftsScore: null });
      }
    }

    return searchHits(query, inputs, stats, rows, options.limit, rowToItem);
  }

  private partition(teamId: string, runtime: string): Partition | undefined {
    return this.db
      .statement('SELECT pid, items FROM search_partitions WHERE team_id = ? AND runtime = ?')
      .get(teamId, runtime) as Partition | undefined;
  }
}
