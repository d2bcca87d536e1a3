import type { Viewer } from '@ctxbus/core';
import type { Pool } from 'pg';
import { partitionRuntime } from '../search/search-partition.js';
import type {
  ArchivedItem,
  ExpireKeyOptions,
  ItemLifecycle,
  SweepOptions,
  SweepResult,
} from '../store.js';
import type { PostgresTarget } from './postgres-connection.js';
import { toStoreError } from './postgres-errors.js';
import type { ItemRow } from './postgres-sql.js';
import { ITEM_COLUMNS, ROW_TYPES, rowToItem } from './postgres-sql.js';
import type { TermStatistics } from './postgres-term-stats.js';
import { countTerms } from './postgres-term-stats.js';

// The item lifecycle in PostgreSQL: sweeping expired and aged items out of the live tables
// (into the archive, or for good), and reading the archive.

/** Current knowledge, kept until superseded whatever its age. */
const KEPT = `(i.superseded_by IS NULL AND (i.type = 'decision' OR i.item_key IS NOT NULL))`;

/**
 * One sweep in one transaction. It takes the counter lock first, as every write does: sweeps
 * and writes (of any hub) take turns, and a write never supersedes an item being swept.
 */
export async function sweepPostgres(
  target: PostgresTarget,
  termStats: TermStatistics,
  options: SweepOptions,
): Promise<SweepResult> {
  const s = target.quotedSchema;
  const pool: Pool = target.pool;
  const client = await pool.connect().catch((error: unknown) => {
    throw toStoreError(error, 'sweep items', target.location);
  });
  try {
    await client.query('BEGIN');
    await client.query(`SELECT seq FROM ${s}.counter FOR UPDATE`);
    const values: unknown[] = [options.expiredBefore];
    const clauses = ['(i.expires_at IS NOT NULL AND i.expires_at <= $1::timestamptz)'];
    for (const [type, cutoff] of Object.entries(options.createdBefore ?? {})) {
      values.push(type, cutoff);
      clauses.push(
        `(i.type = $${values.length - 1} AND i.created_at < $${values.length}::timestamptz AND NOT ${KEPT})`,
      );
    }
    values.push(options.limit);
    const { rows } = await client.query<ItemRow & { lexemes: string[]; expired: boolean }>({
      text: `SELECT ${ITEM_COLUMNS}, to_json(tsvector_to_array(i.search)) AS lexemes,
                    (i.expires_at IS NOT NULL AND i.expires_at <= $1::timestamptz) AS expired
               FROM ${s}.items i WHERE ${clauses.join(' OR ')}
              ORDER BY i.rid LIMIT $${values.length}`,
      values,
      types: ROW_TYPES,
    });
    const result: SweepResult = {
      expired: rows.filter((row) => row.expired).length,
      aged: rows.filter((row) => !row.expired).length,
      archived: 0,
      more: rows.length === options.limit,
    };
    if (rows.length > 0) {
      const rids = rows.map((row) => row.rid);
      if (options.mode === 'archive') {
        const archived = rows.map((row) => ({
          id: row.id,
          team_id: row.team_id,
          source_runtime: row.source_runtime,
          visibility: row.visibility,
          item: rowToItem(row),
          reason: row.expired ? 'expired' : 'retention',
        }));
        await client.query(
          `INSERT INTO ${s}.archived_items
             (id, team_id, source_runtime, visibility, item, reason, archived_at)
           SELECT id, team_id, source_runtime, visibility, item, reason, $2::timestamptz
             FROM jsonb_to_recordset($1::jsonb) AS x(id text, team_id text,
               source_runtime text, visibility text, item jsonb, reason text)`,
          [JSON.stringify(archived), options.now],
        );
        result.archived = rows.length;
      }
      await client.query(`DELETE FROM ${s}.changes WHERE item_rid = ANY($1::bigint[])`, [rids]);
      await client.query(`DELETE FROM ${s}.items WHERE rid = ANY($1::bigint[])`, [rids]);
      await client.query(`UPDATE ${s}.counter SET items = items - $1`, [rows.length]);
    }
    await client.query('COMMIT');
    // The search statistics count each stem once per item: take the swept items out, as the
    // writes put them in (after the commit, through the same batches).
    termStats.add(
      countTerms(
        rows.map((row) => ({
          teamId: row.team_id,
          runtime: partitionRuntime(row.visibility, row.source_runtime),
          stems: row.lexemes,
        })),
      ).map((count) => ({ ...count, docs: -count.docs })),
    );
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw toStoreError(error, 'sweep items', target.location);
  } finally {
    client.release();
  }
}

interface ArchiveRow {
  archive_id: number;
  item: ArchivedItem['item'];
  reason: 'expired' | 'retention';
  archived_ms: number;
}

export async function listArchivedPostgres(
  target: PostgresTarget,
  viewer: Viewer,
  options: { limit: number; beforeArchiveId?: number },
): Promise<ArchivedItem[]> {
  try {
    const { rows } = await target.pool.query<ArchiveRow>({
      text: `SELECT archive_id, item, reason,
                    (extract(epoch FROM archived_at) * 1000)::int8 AS archived_ms
               FROM ${target.quotedSchema}.archived_items
              WHERE team_id = $1 AND (visibility = 'team' OR source_runtime = $2)
                AND ($3::bigint IS NULL OR archive_id < $3)
              ORDER BY archive_id DESC LIMIT $4`,
      values: [viewer.teamId, viewer.runtime, options.beforeArchiveId ?? null, options.limit],
      types: ROW_TYPES,
    });
    return rows.map((row) => ({
      archiveId: row.archive_id,
      item: row.item,
      reason: row.reason,
      archivedAt: new Date(row.archived_ms).toISOString(),
    }));
  } catch (error) {
    throw toStoreError(error, 'list archived items', target.location);
  }
}

/** See `ItemLifecycle.expireKey`: one statement over the key index. */
export async function expireKeyPostgres(
  target: PostgresTarget,
  viewer: Viewer,
  key: string,
  options: ExpireKeyOptions,
): Promise<number> {
  try {
    const result = await target.pool.query({
      text: `UPDATE ${target.quotedSchema}.items SET expires_at = $5::timestamptz
              WHERE team_id = $1 AND item_key = $2 AND rid <= $3
                AND (visibility = 'team' OR source_runtime = $4)
                AND (expires_at IS NULL OR expires_at > $5::timestamptz)`,
      values: [viewer.teamId, key, options.throughSeq, viewer.runtime, options.at],
    });
    return result.rowCount ?? 0;
  } catch (error) {
    throw toStoreError(error, 'expire a key', target.location);
  }
}

/** The item lifecycle over one schema: the functions above, once the store is checked open. */
export class PostgresLifecycle implements ItemLifecycle {
  constructor(
    private readonly target: PostgresTarget,
    private readonly termStats: TermStatistics,
    private readonly assertOpen: () => void,
  ) {}

  async sweepItems(options: SweepOptions): Promise<SweepResult> {
    this.assertOpen();
    return sweepPostgres(this.target, this.termStats, options);
  }

  async expireKey(viewer: Viewer, key: string, options: ExpireKeyOptions): Promise<number> {
    this.assertOpen();
    return expireKeyPostgres(this.target, viewer, key, options);
  }

  async listArchivedItems(
    viewer: Viewer,
    options: { limit: number; beforeArchiveId?: number },
  ): Promise<ArchivedItem[]> {
    this.assertOpen();
    return listArchivedPostgres(this.target, viewer, options);
  }
}
