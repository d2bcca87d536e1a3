import type { Pool } from 'pg';
import type { PostgresLogger } from './postgres-connection.js';
import { ROW_TYPES } from './postgres-sql.js';

/** How long committed term counts may wait before they are added to the table. */
export const TERM_STATS_DELAY_MS = 100;

export interface DocumentFrequencies {
  /** Items stored, all teams. */
  totalDocuments: number;
  /** Items containing each stem asked for (0 when none). */
  documentFrequency: (stem: string) => number;
}

/**
 * Document frequencies by stem (the `search_terms` table), which let a search leave very
 * common terms out of its match and weigh the rest (idf).
 *
 * They are statistics, so they are not kept in the write transaction: upserting a few hundred
 * term rows there cost 15-20% of the throughput of 16 concurrent writers, on the one path
 * every writer of every hub waits for. Committed writes add their counts here; they reach the
 * table in one upsert per TERM_STATS_DELAY_MS (a common term once, however many writes used
 * it), outside any write transaction. A reader adds the counts this process has not written
 * yet, so a search sees its own process's writes at once; another hub's within about the
 * delay. A process that dies loses at most its last moments of counts: the numbers drift low
 * by that much, which ranking and pruning do not notice.
 */
export class TermStatistics {
  private readonly pool: Pool;
  private readonly schema: string;
  private readonly logger: PostgresLogger;
  private pending = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;
  /** Reads and upserts take turns, so that no count is seen twice (table and pending). */
  private tail: Promise<unknown> = Promise.resolve();

  constructor(pool: Pool, quotedSchema: string, logger: PostgresLogger) {
    this.pool = pool;
    this.schema = quotedSchema;
    this.logger = logger;
  }

  /** Counts of committed new items (each stem once per item). */
  add(terms: readonly { term: string; docs: number }[]): void {
    for (const { term, docs } of terms)
      this.pending.set(term, (this.pending.get(term) ?? 0) + docs);
    if (this.pending.size > 0 && this.timer === null) {
      this.timer = setTimeout(() => {
        this.timer = null;
        void this.flush();
      }, TERM_STATS_DELAY_MS);
      this.timer.unref();
    }
  }

  async read(stems: readonly string[]): Promise<DocumentFrequencies> {
    return this.serially(async () => {
      const result = await this.pool.query<{ total: number; docs: Record<string, number> }>({
        text: `SELECT (SELECT items FROM ${this.schema}.counter) AS total,
                      coalesce((SELECT json_object_agg(term, docs) FROM ${this.schema}.search_terms
                                 WHERE term = ANY($1::text[])), '{}'::json) AS docs`,
        values: [stems],
        types: ROW_TYPES,
      });
      const row = result.rows[0];
      const docs = new Map<string, number>();
      // A Map, not the object: a stem may well be "constructor".
      for (const [term, count] of Object.entries(row?.docs ?? {})) docs.set(term, count);
      for (const stem of stems) {
        const unwritten = this.pending.get(stem);
        if (unwritten) docs.set(stem, (docs.get(stem) ?? 0) + unwritten);
      }
      return {
        totalDocuments: row?.total ?? 0,
        documentFrequency: (stem: string) => docs.get(stem) ?? 0,
      };
    });
  }

  /** Adds the pending counts to the table; on failure they stay pending for the next try. */
  flush(): Promise<void> {
    return this.serially(async () => {
      if (this.pending.size === 0) return;
      const batch = this.pending;
      this.pending = new Map();
      // Sorted: two hubs upserting the same terms lock their rows in the same order.
      const rows = [...batch]
        .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
        .map(([term, docs]) => ({ term, docs }));
      try {
        await this.pool.query({
          text: `INSERT INTO ${this.schema}.search_terms AS t (term, docs)
                 SELECT term, docs FROM json_to_recordset($1::json) AS x(term text, docs bigint)
                 ON CONFLICT (term) DO UPDATE SET docs = t.docs + excluded.docs`,
          values: [JSON.stringify(rows)],
        });
      } catch (error) {
        for (const [term, docs] of batch)
          this.pending.set(term, (this.pending.get(term) ?? 0) + docs);
        this.logger.warn(
          { err: error, terms: rows.length },
          'postgres: term statistics not saved yet',
        );
        if (this.timer === null) {
          this.timer = setTimeout(() => {
            this.timer = null;
            void this.flush();
          }, TERM_STATS_DELAY_MS * 10);
          this.timer.unref();
        }
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

  private serially<T>(work: () => Promise<T>): Promise<T> {
    const result = this.tail.then(work, work);
    this.tail = result.catch(() => {});
    return result;
  }
}
