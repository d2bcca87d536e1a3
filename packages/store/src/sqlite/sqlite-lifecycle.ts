import type { SQLInputValue, StatementSync } from 'node:sqlite';
import type { Viewer } from '@ctxbus/core';
import type {
  ArchivedItem,
  ExpireKeyOptions,
  ItemLifecycle,
  SweepOptions,
  SweepResult,
} from '../store.js';
import type { SqliteConnection } from './sqlite-connection.js';
import type { ItemRow } from './sqlite-rows.js';
import { rowToItem } from './sqlite-rows.js';

// The item lifecycle in the embedded store: sweeping expired and aged items out of the live
// tables (into the archive, or for good), and reading the archive.

/** Current knowledge, kept until superseded whatever its age. */
const KEPT = `(superseded_by IS NULL AND (type = 'decision' OR item_key IS NOT NULL))`;

interface ArchiveRow {
  archive_id: number;
  item: string;
  reason: 'expired' | 'retention';
  archived_at: number;
}

export class SqliteLifecycle implements ItemLifecycle {
  constructor(
    private readonly connection: SqliteConnection,
    /** Takes a swept item out of the full-text index. */
    private readonly unindex: (row: ItemRow) => void,
    /** Commits queued writes: a sweep never runs between a write's read and its commit. */
    private readonly flushWrites: () => void,
  ) {}

  private statement(sql: string): StatementSync {
    return this.connection.statement(sql);
  }

  async sweepItems(options: SweepOptions): Promise<SweepResult> {
    this.connection.assertOpen();
    this.flushWrites();
    return this.sweep(options);
  }

  async expireKey(viewer: Viewer, key: string, options: ExpireKeyOptions): Promise<number> {
    this.connection.assertOpen();
    this.flushWrites();
    const at = Date.parse(options.at);
    const result = this.statement(
      `UPDATE items SET expires_at = ?
        WHERE team_id = ? AND item_key = ? AND rid <= ?
          AND (visibility = 'team' OR source_runtime = ?)
          AND (expires_at IS NULL OR expires_at > ?)`,
    ).run(at, viewer.teamId, key, options.throughSeq, viewer.runtime, at);
    return Number(result.changes);
  }

  async listArchivedItems(
    viewer: Viewer,
    options: { limit: number; beforeArchiveId?: number },
  ): Promise<ArchivedItem[]> {
    this.connection.assertOpen();
    return this.listArchived(viewer, options);
  }

  /** One sweep, in one transaction. */
  private sweep(options: SweepOptions): SweepResult {
    const expiredBefore = Date.parse(options.expiredBefore);
    const aged = Object.entries(options.createdBefore ?? {});
    const clauses = ['(expires_at IS NOT NULL AND expires_at <= ?)'];
    const params: SQLInputValue[] = [expiredBefore];
    for (const [type, cutoff] of aged) {
      clauses.push(`(type = ? AND created_at < ? AND NOT ${KEPT})`);
      params.push(type, Date.parse(cutoff));
    }
    return this.connection.transaction(() => {
      const rows = this.statement(
        `SELECT * FROM items WHERE ${clauses.join(' OR ')} ORDER BY rid LIMIT ?`,
      ).all(...params, options.limit) as unknown as ItemRow[];
      const result = { expired: 0, aged: 0, archived: 0, more: rows.length === options.limit };
      // The newest change keeps the sequence's high-water mark: it is never deleted.
      const top = this.connection.maxSeq();
      const archivedAt = Date.parse(options.now);
      for (const row of rows) {
        const expired = row.expires_at !== null && row.expires_at <= expiredBefore;
        if (expired) result.expired += 1;
        else result.aged += 1;
        if (options.mode === 'archive') {
          this.statement(
            `INSERT INTO archived_items (id, team_id, source_runtime, visibility, item, reason, archived_at)
             VALUES (?, ?, ?, ?, ?, ?, ?)`,
          ).run(
            row.id,
            row.team_id,
            row.source_runtime,
            row.visibility,
            JSON.stringify(rowToItem(row)),
            expired ? 'expired' : 'retention',
            archivedAt,
          );
          result.archived += 1;
        }
        this.unindex(row);
        this.statement('DELETE FROM item_tags WHERE rid = ?').run(row.rid);
        this.statement('DELETE FROM changes WHERE item_rid = ? AND seq < ?').run(row.rid, top);
        this.statement('DELETE FROM items WHERE rid = ?').run(row.rid);
      }
      return result;
    });
  }

  private listArchived(
    viewer: Viewer,
    options: { limit: number; beforeArchiveId?: number },
  ): ArchivedItem[] {
    const rows = this.statement(
      `SELECT archive_id, item, reason, archived_at FROM archived_items
        WHERE team_id = ? AND (visibility = 'team' OR source_runtime = ?) AND archive_id < ?
        ORDER BY archive_id DESC LIMIT ?`,
    ).all(
      viewer.teamId,
      viewer.runtime,
      options.beforeArchiveId ?? Number.MAX_SAFE_INTEGER,
      options.limit,
    ) as unknown as ArchiveRow[];
    return rows.map((row) => ({
      archiveId: row.archive_id,
      item: JSON.parse(row.item) as ArchivedItem['item'],
      reason: row.reason,
      archivedAt: new Date(row.archived_at).toISOString(),
    }));
  }
}
