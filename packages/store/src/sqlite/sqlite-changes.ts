import type { SQLInputValue } from 'node:sqlite';
import type { ChangeColumns } from '../rows/change-row.js';
import { changeFromRow } from '../rows/change-row.js';
import type { Change, ChangeKind, ChangeLog, ReadChangesOptions } from '../store.js';
import type { SqliteConnection } from './sqlite-connection.js';
import type { ItemRow } from './sqlite-rows.js';
import { rowToItem } from './sqlite-rows.js';

// The change feed of the embedded store: one row per change, its seq the INTEGER PRIMARY KEY
// (max + 1 in a single-writer database, so gapless and monotonic).

export class SqliteChangeLog implements ChangeLog {
  constructor(private readonly connection: SqliteConnection) {}

  /** Records a change in the current transaction. */
  insert(seq: number, kind: ChangeKind, rid: number, teamId: string, at: number): void {
    this.connection
      .statement('INSERT INTO changes (seq, kind, item_rid, team_id, at) VALUES (?, ?, ?, ?, ?)')
      .run(seq, kind, rid, teamId, at);
  }

  async readChanges(options: ReadChangesOptions): Promise<Change[]> {
    this.connection.assertOpen();
    const teamClause = options.teamId === undefined ? '' : 'AND c.team_id = ?';
    const params: SQLInputValue[] = [options.afterSeq];
    if (options.teamId !== undefined) params.push(options.teamId);
    params.push(options.limit);
    const rows = this.connection
      .statement(
        `SELECT c.seq AS change_seq, c.kind AS change_kind, i.*
           FROM changes c JOIN items i ON i.rid = c.item_rid
          WHERE c.seq > ? ${teamClause}
          ORDER BY c.seq LIMIT ?`,
      )
      .all(...params) as unknown as (ItemRow & ChangeColumns)[];
    return rows.map((row) => changeFromRow(row, rowToItem(row)));
  }

  async latestSeq(): Promise<number> {
    this.connection.assertOpen();
    return this.connection.maxSeq();
  }
}
