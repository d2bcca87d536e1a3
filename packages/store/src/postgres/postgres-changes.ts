import type { ChangeColumns } from '../rows/change-row.js';
import { changeFromRow } from '../rows/change-row.js';
import type { Change, ChangeLog, ReadChangesOptions } from '../store.js';
import type { PostgresChangeListener } from './postgres-change-listener.js';
import type { PostgresContext } from './postgres-connection.js';
import type { ItemRow } from './postgres-sql.js';
import { ITEM_COLUMNS, rowToItem, SqlParams } from './postgres-sql.js';

// The change feed in PostgreSQL: `changes` rows numbered under the counter lock (gapless,
// visible in order), and the NOTIFY hints of every process's commits.

export class PostgresChangeLog implements ChangeLog {
  constructor(
    private readonly context: PostgresContext,
    private readonly listener: PostgresChangeListener,
  ) {}

  async readChanges(options: ReadChangesOptions): Promise<Change[]> {
    this.context.assertOpen();
    const p = new SqlParams();
    const team = options.teamId === undefined ? '' : `AND c.team_id = ${p.add(options.teamId)}`;
    const rows = await this.context.query<ItemRow & ChangeColumns>(
      'read changes',
      `SELECT c.seq AS change_seq, c.kind AS change_kind, ${ITEM_COLUMNS}
         FROM ${this.context.s}.changes c JOIN ${this.context.s}.items i ON i.rid = c.item_rid
        WHERE c.seq > ${p.add(options.afterSeq)} ${team}
        ORDER BY c.seq LIMIT ${p.add(options.limit)}`,
      p.values,
      // The hottest read (every commit, on every hub): planned once per connection.
      true,
    );
    return rows.map((row) => changeFromRow(row, rowToItem(row)));
  }

  async latestSeq(): Promise<number> {
    this.context.assertOpen();
    const rows = await this.context.query<{ seq: number }>(
      'read the sequence',
      `SELECT seq FROM ${this.context.s}.counter`,
    );
    return rows[0]?.seq ?? 0;
  }

  /**
   * One LISTEN connection per store (so per hub process), whatever the number of watchers: see
   * PostgresChangeListener for reconnection, keepalive and the catch-up hint.
   */
  watchChanges(listener: (seq: number) => void): { close(): void } {
    return this.listener.watch(listener);
  }
}
