import type { ContextItem, ListOptions, NewContextItem, Viewer } from '@ctxbus/core';
import type { ItemStore, SearchHit, SearchOptions, WriteOutcome } from '../store.js';
import type { PostgresContext } from './postgres-connection.js';
import type { GroupCommit } from './postgres-group-commit.js';
import type { PreparedItem } from './postgres-prepare.js';
import { prepareItemRow } from './postgres-prepare.js';
import { searchPostgres } from './postgres-search-items.js';
import type { ItemRow } from './postgres-sql.js';
import { filterSql, ITEM_COLUMNS, rowToItem, SqlParams, withoutTagsSql } from './postgres-sql.js';
import type { TermStatistics } from './postgres-term-stats.js';

// Items in PostgreSQL: writes and consumptions go through the group commit; reads are single
// queries, each bounded by team, visibility and expiry (postgres-sql.ts).

export class PostgresItems implements ItemStore {
  constructor(
    private readonly context: PostgresContext,
    private readonly writes: GroupCommit,
    private readonly termStats: TermStatistics,
  ) {}

  writeItems(items: readonly NewContextItem[]): Promise<WriteOutcome[]> {
    this.context.assertOpen();
    let prepared: PreparedItem[];
    try {
      // Before the group commit takes its lock: see postgres-prepare.ts.
      prepared = items.map(prepareItemRow);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.writes.write(prepared);
  }

  consumeItem(viewer: Viewer, id: string): Promise<ContextItem | null> {
    this.context.assertOpen();
    return this.writes.consume(viewer, id);
  }

  async getItem(viewer: Viewer, id: string): Promise<ContextItem | null> {
    this.context.assertOpen();
    const p = new SqlParams();
    const where = filterSql(viewer, { includeSuperseded: true }, this.context.clock().getTime(), p);
    const rows = await this.context.query<ItemRow>(
      'read an item',
      `SELECT ${ITEM_COLUMNS} FROM ${this.context.s}.items i WHERE i.id = ${p.add(id)} AND ${where}`,
      p.values,
    );
    return rows[0] ? rowToItem(rows[0]) : null;
  }

  async listItems(viewer: Viewer, options: ListOptions): Promise<ContextItem[]> {
    this.context.assertOpen();
    const p = new SqlParams();
    const where = filterSql(viewer, options, this.context.clock().getTime(), p);
    const { s } = this.context;
    let text: string;
    if (options.latestPerScopeKey) {
      // The newest matching item of each scope key (an index-only scan of items_scope_heads);
      // withoutTags then drops whole keys.
      const without = options.withoutTags?.length
        ? `AND ${withoutTagsSql('i', options.withoutTags, p)}`
        : '';
      text = `SELECT ${ITEM_COLUMNS} FROM ${s}.items i
               WHERE i.rid IN (SELECT max(i.rid) FROM ${s}.items i WHERE ${where} GROUP BY i.scope_key)
                 ${without}
               ORDER BY i.rid DESC LIMIT ${p.add(options.limit)}`;
    } else {
      text = `SELECT ${ITEM_COLUMNS} FROM ${s}.items i WHERE ${where}
               ORDER BY i.rid DESC LIMIT ${p.add(options.limit)}`;
    }
    const rows = await this.context.query<ItemRow>('list items', text, p.values);
    return rows.map(rowToItem);
  }

  searchItems(viewer: Viewer, options: SearchOptions): Promise<SearchHit[]> {
    this.context.assertOpen();
    return searchPostgres(
      { ...this.context, termStats: this.termStats },
      viewer,
      options,
      this.context.clock().getTime(),
    );
  }
}
