import type { Viewer } from '@ctxbus/core';
import type { Pool } from 'pg';
import { visiblePartitionRuntimes } from '../search/search-partition.js';
import type { PostgresLogger } from './postgres-connection.js';
import { ROW_TYPES } from './postgres-sql.js';

/** How long committed term counts may wait before they are added to the table. */
export const TERM_STATS_DELAY_MS = 100;

export interface DocumentFrequencies {
  /** Items the viewer's partitions hold. */
  totalDocuments: number;
  /** Items of those partitions containing each stem asked for (0 when none). */
  documentFrequency: (stem: string) => number;
}

/** Items containing `term` in one partition, or (term '') the partition's items. */
export interface TermCount {
  teamId: string;
  /** The runtime of a private item's partition; '' for the team's shared items. */
  runtime: string;
  term: string;
  /** Added (new items) or, when negative, taken away (swept items). */
  docs: number;
}

/** The counts of items (each stem once per item, and the empty term once), by partition. */
export function countTerms(
  items: Iterable<{ teamId: string; runtime: string; stems: readonly string[] }>,
): TermCount[] {
  const counts = new Map<string, TermCount>();
  const add = (teamId: string, runtime: string, term: string) => {
    const key = keyOf({ teamId, runtime, term });
    const count = counts.get(key);
    if (count) count.docs += 1;
    else counts.set(key, { teamId, runtime, term, docs: 1 });
  };
  for (const item of items) {
    add(item.teamId, item.runtime, '');
    for (const stem of item.stems) add(item.teamId, item.runtime, stem);
  }
  return [...counts.values()];
}

/** Sorted (team, runtime, term): two hubs upserting the same rows lock them in one order. */
function byKey(a: TermCount, b: TermCount): number {
  for (const field of ['teamId', 'runtime', 'term'] as const) {
    if (a[field] !== b[field]) return a[field] < b[field] ? -1 : 1;
  }
  return 0;
}

/**
 * Document frequencies by partition and stem (the `search_terms` table), which let a search
 * leave very common terms out of its match and weigh the rest (idf). A partition is a team's
 * shared items, or one runtime's private items in a team; a search reads the two its caller
 * sees, so that no score depends on an item the caller cannot see.
 *
 * They are statistics, so they are not kept in the write transaction: upserting a few hundred
 * term rows there cost 15-20% of the throughput of 16 concurrent writers, on the one path
 * every writer of every hub waits for. Committed writes and sweeps add their counts here
 * (sweeps negative ones); they reach the table in one upsert per TERM_STATS_DELAY_MS (a
 * common term once, however many writes used it), outside any write transaction. A reader
 * adds the counts this process has not written yet, so a search sees its own process's writes
 * and sweeps at once; another hub's within about the delay. Additions and subtractions meet
 * in the table in any order, so a sweep of items whose counts are still pending (here or on
 * another hub) leaves the right sum. A process that dies loses at most its last moments of
 * counts: the numbers drift by that much, which ranking and pruning do not notice.
 */
export class TermStatistics {
  private readonly pool: Pool;
  private readonly schema: string;
  private readonly logger: PostgresLogger;
  private pending = new Map<string, TermCount>();
  private timer: NodeJS.Timeout | null = null;
  /** Reads and upserts take turns, so that no count is seen twice (table and pending). */
  private tail: Promise<unknown> = Promise.resolve();

  constructor(pool: Pool, quotedSchema: string, logger: PostgresLogger) {
    this.pool = pool;
    this.schema = quotedSchema;
    this.logger = logger;
  }

  /** Counts of committed new items, or (negative) of swept ones. */
  add(counts: readonly TermCount[]): void {
    for (const count of counts) this.merge(this.pending, count);
    if (this.pending.size > 0 && this.timer === null) this.schedule(TERM_STATS_DELAY_MS);
  }

  /** The statistics of the partitions `viewer` sees, for `stems`. */
  async read(viewer: Viewer, stems: readonly string[]): Promise<DocumentFrequencies> {
    return this.serially(async () => {
      const runtimes = visiblePartitionRuntimes(viewer.runtime);
      const result = await this.pool.query<{ term: string; docs: number }>({
        text: `SELECT term, sum(docs)::float8 AS docs FROM ${this.schema}.search_terms
                WHERE team_id = $1 AND runtime = ANY($2::text[]) AND term = ANY($3::text[])
                GROUP BY term`,
        values: [viewer.teamId, runtimes, ['', ...stems]],
        types: ROW_TYPES,
      });
      const docs = new Map<string, number>();
      // A Map, not an object: a stem may well be "constructor".
      for (const row of result.rows) docs.set(row.term, Number(row.docs));
      for (const runtime of runtimes) {
        for (const term of ['', ...stems]) {
          const unwritten = this.pending.get(keyOf({ teamId: viewer.teamId, runtime, term }));
          if (unwritten) docs.set(term, (docs.get(term) ?? 0) + unwritten.docs);
        }
      }
      const count = (term: string) => Math.max(0, docs.get(term) ?? 0);
      return { totalDocuments: count(''), documentFrequency: (stem: string) => count(stem) };
    });
  }

  /** Adds the pending counts to the table; on failure they stay pending for the next try. */
  flush(): Promise<void> {
    return this.serially(async () => {
      if (this.pending.size === 0) return;
      const batch = this.pending;
      this.pending = new Map();
      const rows = [...batch.values()].filter((count) => count.docs !== 0).sort(byKey);
      try {
        await this.pool.query({
          text: `INSERT INTO ${this.schema}.search_terms AS t (team_id, runtime, term, docs)
                 SELECT team_id, runtime, term, docs
                   FROM json_to_recordset($1::json)
                     AS x(team_id text, runtime text, term text, docs bigint)
                 ON CONFLICT (team_id, runtime, term) DO UPDATE SET docs = t.docs + excluded.docs`,
          values: [
            JSON.stringify(
              rows.map(({ teamId, runtime, term, docs }) => ({
                team_id: teamId,
                runtime,
                term,
                docs,
              })),
            ),
          ],
        });
      } catch (error) {
        for (const count of batch.values()) this.merge(this.pending, count);
        this.logger.warn(
          { err: error, terms: rows.length },
          'postgres: term statistics not saved yet',
        );
        if (this.timer === null) this.schedule(TERM_STATS_DELAY_MS * 10);
      }
    });
  }

  /** Writes what is pending (best effort) and stops the timer. */
  async close(): Promise<void> {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    await this.flush();
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  private schedule(delayMs: number): void {
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.flush();
    }, delayMs);
    this.timer.unref();
  }

  private merge(into: Map<string, TermCount>, count: TermCount): void {
    const key = keyOf(count);
    const known = into.get(key);
    if (known) known.docs += count.docs;
    else into.set(key, { ...count });
  }

  private serially<T>(work: () => Promise<T>): Promise<T> {
    const result = this.tail.then(work, work);
    this.tail = result.catch(() => {});
    return result;
  }
}

function keyOf(count: Pick<TermCount, 'teamId' | 'runtime' | 'term'>): string {
  return JSON.stringify([count.teamId, count.runtime, count.term]);
}
