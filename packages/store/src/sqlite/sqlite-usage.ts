import type { SQLInputValue } from 'node:sqlite';
import type { Viewer } from '@ctxbus/core';
import type {
  DailyUsageRow,
  ItemUsageDelta,
  ItemUsageRow,
  ItemUsageStore,
  MostUsedOptions,
  RuntimeUsageRow,
  UnusedItemRow,
  UnusedItemsOptions,
  UsageWindow,
  UsedItemRow,
} from '../item-usage.js';
import { usesSql, versionHint } from '../item-usage.js';
import type { SqliteConnection } from './sqlite-connection.js';
import type { ItemRow } from './sqlite-rows.js';
import { rowToItem } from './sqlite-rows.js';
import { filterSql } from './sqlite-sql.js';

// Item usage in the embedded store (times as epoch milliseconds): item_usage_days holds the
// counts per team, day, runtime and item; item_usage each item's totals and last uses per
// runtime. One flush of the hub's buffer is one transaction of upserts.

const iso = (ms: number) => new Date(ms).toISOString();
const msOrNull = (at: string | null) => (at === null ? null : Date.parse(at));

/** What the items a viewer may read add to a usage query: the join and its bounds. */
function visibleItems(viewer: Viewer): { join: string; params: SQLInputValue[] } {
  return {
    join: `JOIN items i ON i.team_id = u.team_id AND i.id = u.item_id
      AND (i.visibility = 'team' OR i.source_runtime = ?)`,
    params: [viewer.runtime],
  };
}

function windowSql(
  viewer: Viewer,
  window: UsageWindow,
): { where: string; params: SQLInputValue[] } {
  const clauses = ['u.team_id = ?', 'u.day >= ?', 'u.day <= ?'];
  const params: SQLInputValue[] = [viewer.teamId, window.fromDay, window.toDay];
  if (window.runtime !== undefined) {
    clauses.push('u.runtime = ?');
    params.push(window.runtime);
  }
  return { where: clauses.join(' AND '), params };
}

const SUMS =
  'sum(u.injected) AS injected, sum(u.consumed) AS consumed, sum(u.searched) AS searched';

/** The last use of any kind of a totals row (alias `t`), in ms. */
const LAST_USE = `max(coalesce(t.last_injected_at, 0), coalesce(t.last_consumed_at, 0),
  coalesce(t.last_searched_at, 0))`;

/** The versions that can count (`versionHint`), as a condition on `v`. */
function hintSql(filters: MostUsedOptions['filters']): { sql: string; params: SQLInputValue[] } {
  const hint = versionHint(filters);
  if (hint === null) return { sql: '', params: [] };
  if (hint.tags.length === 0) return { sql: ' AND v.item_key IS NOT NULL', params: [] };
  const tags = hint.tags.map(() => '?').join(', ');
  return {
    sql: ` AND (v.item_key IS NOT NULL OR v.rid IN (SELECT rid FROM item_tags WHERE tag IN (${tags})))`,
    params: hint.tags,
  };
}

export class SqliteUsage implements ItemUsageStore {
  constructor(private readonly connection: SqliteConnection) {}

  async recordItemUsage(deltas: readonly ItemUsageDelta[]): Promise<void> {
    this.connection.assertOpen();
    if (deltas.length === 0) return;
    const day = this.connection.statement(
      `INSERT INTO item_usage_days (team_id, day, runtime, item_id, injected, consumed, searched)
       VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (team_id, day, runtime, item_id) DO UPDATE SET
         injected = injected + excluded.injected, consumed = consumed + excluded.consumed,
         searched = searched + excluded.searched`,
    );
    const total = this.connection.statement(
      `INSERT INTO item_usage (team_id, item_id, runtime, injected, consumed, searched,
         last_injected_at, last_consumed_at, last_searched_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (team_id, item_id, runtime) DO UPDATE SET
         injected = injected + excluded.injected, consumed = consumed + excluded.consumed,
         searched = searched + excluded.searched,
         last_injected_at = max(coalesce(last_injected_at, 0), coalesce(excluded.last_injected_at, 0)),
         last_consumed_at = max(coalesce(last_consumed_at, 0), coalesce(excluded.last_consumed_at, 0)),
         last_searched_at = max(coalesce(last_searched_at, 0), coalesce(excluded.last_searched_at, 0))`,
    );
    this.connection.transaction(() => {
      for (const delta of deltas) {
        const counts = [delta.injected, delta.consumed, delta.searched];
        day.run(delta.teamId, delta.day, delta.runtime, delta.itemId, ...counts);
        total.run(
          delta.teamId,
          delta.itemId,
          delta.runtime,
          ...counts,
          msOrNull(delta.lastInjectedAt),
          msOrNull(delta.lastConsumedAt),
          msOrNull(delta.lastSearchedAt),
        );
      }
    });
  }

  async dailyUsage(viewer: Viewer, window: UsageWindow): Promise<DailyUsageRow[]> {
    this.connection.assertOpen();
    const items = visibleItems(viewer);
    const bounds = windowSql(viewer, window);
    return this.connection
      .statement(
        `SELECT u.day AS day, u.runtime AS runtime, ${SUMS} FROM item_usage_days u ${items.join}
         WHERE ${bounds.where} GROUP BY u.day, u.runtime ORDER BY u.day, u.runtime`,
      )
      .all(...items.params, ...bounds.params) as unknown as DailyUsageRow[];
  }

  async runtimeUsage(viewer: Viewer, window: UsageWindow): Promise<RuntimeUsageRow[]> {
    this.connection.assertOpen();
    const items = visibleItems(viewer);
    const bounds = windowSql(viewer, window);
    return this.connection
      .statement(
        `SELECT u.runtime AS runtime, count(DISTINCT u.item_id) AS items, ${SUMS}
         FROM item_usage_days u ${items.join}
         WHERE ${bounds.where} GROUP BY u.runtime ORDER BY u.runtime`,
      )
      .all(...items.params, ...bounds.params) as unknown as RuntimeUsageRow[];
  }

  async topUsedItems(
    viewer: Viewer,
    window: UsageWindow & { limit: number },
  ): Promise<ItemUsageRow[]> {
    this.connection.assertOpen();
    const items = visibleItems(viewer);
    const bounds = windowSql(viewer, window);
    const top = this.connection
      .statement(
        `SELECT u.item_id AS item_id, ${SUMS}, group_concat(DISTINCT u.runtime) AS runtimes,
           sum(u.injected + u.consumed + u.searched) AS uses
         FROM item_usage_days u ${items.join}
         WHERE ${bounds.where} GROUP BY u.item_id ORDER BY uses DESC, u.item_id LIMIT ?`,
      )
      .all(...items.params, ...bounds.params, window.limit) as unknown as (DailyUsageRow & {
      item_id: string;
      runtimes: string;
    })[];
    const rows: ItemUsageRow[] = [];
    for (const entry of top) {
      const row = this.connection
        .statement('SELECT * FROM items WHERE team_id = ? AND id = ?')
        .get(viewer.teamId, entry.item_id) as ItemRow | undefined;
      if (!row) continue;
      const last = this.connection
        .statement(
          `SELECT max(${LAST_USE}) AS last FROM item_usage t
           WHERE t.team_id = ? AND t.item_id = ?${window.runtime !== undefined ? ' AND t.runtime = ?' : ''}`,
        )
        .get(
          viewer.teamId,
          entry.item_id,
          ...(window.runtime !== undefined ? [window.runtime] : []),
        ) as { last: number };
      rows.push({
        item: rowToItem(row),
        injected: entry.injected,
        consumed: entry.consumed,
        searched: entry.searched,
        runtimes: entry.runtimes.split(',').sort(),
        lastUsedAt: iso(last.last),
      });
    }
    return rows;
  }

  async mostUsedItems(viewer: Viewer, options: MostUsedOptions): Promise<UsedItemRow[]> {
    this.connection.assertOpen();
    if (options.filters.length === 0 || options.kinds.length === 0) return [];
    const uses = usesSql(options.kinds);
    const nowMs = Date.parse(options.now);
    const matches = options.filters.map((filter) => filterSql(viewer, filter, nowMs));
    const match = `(${matches.map((m) => `(${m.where})`).join(' OR ')})`;
    const matchParams = matches.flatMap((m) => m.params);
    const hint = hintSql(options.filters);
    // The uses per item (the days with consumptions or searches: item_usage_days_active),
    // then per document (a key, or an unkeyed item's id), then the live items holding it.
    const rows = this.connection
      .statement(
        `WITH per_item AS MATERIALIZED (
           SELECT u.item_id AS item_id, sum(${uses}) AS uses FROM item_usage_days u
           WHERE u.team_id = ? AND u.day >= ? AND u.day <= ? AND ${uses} > 0
           GROUP BY u.item_id
         ), used AS MATERIALIZED (
           SELECT v.item_key AS k, CASE WHEN v.item_key IS NULL THEN v.id END AS vid,
             sum(p.uses) AS uses
           FROM per_item p JOIN items v ON v.team_id = ? AND v.id = p.item_id
             AND (v.visibility = 'team' OR v.source_runtime = ?)${hint.sql}
           GROUP BY k, vid
         ), ranked AS (
           SELECT i.rid AS rid, i.id AS id, used.uses AS uses FROM used
             JOIN items i ON i.team_id = ? AND i.item_key = used.k
           WHERE used.k IS NOT NULL AND ${match}
           UNION ALL
           SELECT i.rid, i.id, used.uses FROM used JOIN items i ON i.team_id = ? AND i.id = used.vid
           WHERE used.k IS NULL AND ${match}
         )
         SELECT i.*, ranked.uses AS uses FROM ranked JOIN items i ON i.rid = ranked.rid
         ORDER BY ranked.uses DESC, ranked.id LIMIT ?`,
      )
      .all(
        viewer.teamId,
        options.fromDay,
        options.toDay,
        viewer.teamId,
        viewer.runtime,
        ...hint.params,
        viewer.teamId,
        ...matchParams,
        viewer.teamId,
        ...matchParams,
        options.limit,
      ) as unknown as (ItemRow & { uses: number })[];
    return rows.map((row) => ({ item: rowToItem(row), uses: Number(row.uses) }));
  }

  async unusedItems(
    viewer: Viewer,
    options: UnusedItemsOptions,
  ): Promise<{ total: number; items: UnusedItemRow[] }> {
    this.connection.assertOpen();
    const filter = filterSql(viewer, {}, Date.parse(options.now));
    // Each item's last use, aggregated once and joined (not a subquery per item and clause).
    const byRuntime = options.runtime !== undefined ? ' AND t.runtime = ?' : '';
    const used = `LEFT JOIN (SELECT t.item_id, max(${LAST_USE}) AS last_use FROM item_usage t
      WHERE t.team_id = ?${byRuntime} GROUP BY t.item_id) u ON u.item_id = i.id`;
    const params: SQLInputValue[] = [
      viewer.teamId,
      ...(options.runtime !== undefined ? [options.runtime] : []),
      ...filter.params,
    ];
    const clauses = [filter.where];
    if (options.idleBefore === undefined) {
      clauses.push('u.item_id IS NULL');
      // Consumptions from before usage was recorded (every runtime's only).
      if (options.runtime === undefined) clauses.push('i.consumed = 0');
    } else {
      const cutoff = Date.parse(options.idleBefore);
      clauses.push('i.created_at < ?', 'coalesce(u.last_use, 0) < ?');
      params.push(cutoff, cutoff);
    }
    const order =
      options.idleBefore === undefined ? 'i.rid' : 'coalesce(u.last_use, i.created_at), i.rid';
    // The page by rid first (the window count is taken before its LIMIT; no rows: none
    // match), then only its rows read whole: not every matching item's content.
    const rows = this.connection
      .statement(
        `WITH page AS (
           SELECT i.rid, u.last_use, row_number() OVER (ORDER BY ${order}) AS position,
             count(*) OVER () AS total
           FROM items i ${used} WHERE ${clauses.join(' AND ')} ORDER BY position LIMIT ?
         )
         SELECT i.*, page.last_use AS last_use, page.total AS total
         FROM page JOIN items i ON i.rid = page.rid ORDER BY page.position`,
      )
      .all(...params, options.limit) as unknown as (ItemRow & {
      last_use: number | null;
      total: number;
    })[];
    return {
      total: rows[0]?.total ?? 0,
      items: rows.map((row) => ({
        item: rowToItem(row),
        lastUsedAt: row.last_use ? iso(row.last_use) : null,
      })),
    };
  }

  async pruneItemUsage(beforeDay: string): Promise<number> {
    this.connection.assertOpen();
    return this.connection.transaction(() => {
      const days = this.connection
        .statement('DELETE FROM item_usage_days WHERE day < ?')
        .run(beforeDay);
      const gone = this.connection
        .statement(
          `DELETE FROM item_usage WHERE NOT EXISTS
             (SELECT 1 FROM items i WHERE i.team_id = item_usage.team_id AND i.id = item_usage.item_id)`,
        )
        .run();
      return Number(days.changes) + Number(gone.changes);
    });
  }
}
