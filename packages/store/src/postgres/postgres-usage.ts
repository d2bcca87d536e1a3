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
import type { PostgresContext } from './postgres-connection.js';
import type { ItemRow } from './postgres-sql.js';
import { filterSql, ITEM_COLUMNS, rowToItem, SqlParams } from './postgres-sql.js';
import type { Transaction } from './postgres-subscriptions.js';

// Item usage in PostgreSQL, shared by every hub on the database: item_usage_days holds the
// counts per team, day, runtime and item; item_usage each item's totals and last uses per
// runtime. One flush of a hub's buffer is two multi-row upserts in one transaction, rows in
// key order (two hubs flushing the same rows take their locks in the same order).

const iso = (ms: number) => new Date(ms).toISOString();
const later = (a: string | null, b: string | null) =>
  a === null ? b : b === null ? a : Date.parse(a) >= Date.parse(b) ? a : b;

interface Total {
  teamId: string;
  itemId: string;
  runtime: string;
  injected: number;
  consumed: number;
  searched: number;
  lastInjectedAt: string | null;
  lastConsumedAt: string | null;
  lastSearchedAt: string | null;
}

/** The deltas summed per item and runtime (a flush may span two days). */
function totalsOf(deltas: readonly ItemUsageDelta[]): Total[] {
  const totals = new Map<string, Total>();
  for (const delta of deltas) {
    const key = `${delta.teamId}\0${delta.itemId}\0${delta.runtime}`;
    const total = totals.get(key);
    if (!total) {
      const { day: _day, ...rest } = delta;
      totals.set(key, { ...rest });
      continue;
    }
    total.injected += delta.injected;
    total.consumed += delta.consumed;
    total.searched += delta.searched;
    total.lastInjectedAt = later(total.lastInjectedAt, delta.lastInjectedAt);
    total.lastConsumedAt = later(total.lastConsumedAt, delta.lastConsumedAt);
    total.lastSearchedAt = later(total.lastSearchedAt, delta.lastSearchedAt);
  }
  return [...totals.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, t]) => t);
}

const SUMS = `sum(u.injected)::int8 AS injected, sum(u.consumed)::int8 AS consumed,
  sum(u.searched)::int8 AS searched`;

/** The last use of any kind of a totals row (alias `t`), in ms (0: none). */
const LAST_USE = `(extract(epoch FROM greatest(t.last_injected_at, t.last_consumed_at,
  t.last_searched_at)) * 1000)::int8`;

export class PostgresUsage implements ItemUsageStore {
  private readonly s: string;

  constructor(
    private readonly context: PostgresContext,
    private readonly transaction: Transaction,
  ) {
    this.s = context.s;
  }

  async recordItemUsage(deltas: readonly ItemUsageDelta[]): Promise<void> {
    this.context.assertOpen();
    if (deltas.length === 0) return;
    const days = [...deltas].sort((a, b) => {
      const left = `${a.teamId}\0${a.day}\0${a.runtime}\0${a.itemId}`;
      const right = `${b.teamId}\0${b.day}\0${b.runtime}\0${b.itemId}`;
      return left < right ? -1 : left > right ? 1 : 0;
    });
    const totals = totalsOf(deltas);
    const { s } = this;
    await this.transaction('record item usage', async (client) => {
      await client.query(
        `INSERT INTO ${s}.item_usage_days (team_id, day, runtime, item_id, injected, consumed, searched)
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int8[],
           $6::int8[], $7::int8[])
         ON CONFLICT (team_id, day, runtime, item_id) DO UPDATE SET
           injected = item_usage_days.injected + excluded.injected,
           consumed = item_usage_days.consumed + excluded.consumed,
           searched = item_usage_days.searched + excluded.searched`,
        [
          days.map((d) => d.teamId),
          days.map((d) => d.day),
          days.map((d) => d.runtime),
          days.map((d) => d.itemId),
          days.map((d) => d.injected),
          days.map((d) => d.consumed),
          days.map((d) => d.searched),
        ],
      );
      await client.query(
        `INSERT INTO ${s}.item_usage (team_id, item_id, runtime, injected, consumed, searched,
           last_injected_at, last_consumed_at, last_searched_at)
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int8[], $5::int8[],
           $6::int8[], $7::timestamptz[], $8::timestamptz[], $9::timestamptz[])
         ON CONFLICT (team_id, item_id, runtime) DO UPDATE SET
           injected = item_usage.injected + excluded.injected,
           consumed = item_usage.consumed + excluded.consumed,
           searched = item_usage.searched + excluded.searched,
           last_injected_at = greatest(item_usage.last_injected_at, excluded.last_injected_at),
           last_consumed_at = greatest(item_usage.last_consumed_at, excluded.last_consumed_at),
           last_searched_at = greatest(item_usage.last_searched_at, excluded.last_searched_at)`,
        [
          totals.map((t) => t.teamId),
          totals.map((t) => t.itemId),
          totals.map((t) => t.runtime),
          totals.map((t) => t.injected),
          totals.map((t) => t.consumed),
          totals.map((t) => t.searched),
          totals.map((t) => t.lastInjectedAt),
          totals.map((t) => t.lastConsumedAt),
          totals.map((t) => t.lastSearchedAt),
        ],
      );
    });
  }

  /** FROM and WHERE of a window read: the viewer's team, the days, readable items only. */
  private windowFrom(viewer: Viewer, window: UsageWindow, p: SqlParams): string {
    const runtime = window.runtime !== undefined ? ` AND u.runtime = ${p.add(window.runtime)}` : '';
    return `FROM ${this.s}.item_usage_days u
      JOIN ${this.s}.items i ON i.team_id = u.team_id AND i.id = u.item_id
        AND (i.visibility = 'team' OR i.source_runtime = ${p.add(viewer.runtime)})
      WHERE u.team_id = ${p.add(viewer.teamId)} AND u.day >= ${p.add(window.fromDay)}
        AND u.day <= ${p.add(window.toDay)}${runtime}`;
  }

  async dailyUsage(viewer: Viewer, window: UsageWindow): Promise<DailyUsageRow[]> {
    this.context.assertOpen();
    const p = new SqlParams();
    return this.context.query<DailyUsageRow>(
      'read daily usage',
      `SELECT u.day, u.runtime, ${SUMS} ${this.windowFrom(viewer, window, p)}
       GROUP BY u.day, u.runtime ORDER BY u.day, u.runtime COLLATE "C"`,
      p.values,
    );
  }

  async runtimeUsage(viewer: Viewer, window: UsageWindow): Promise<RuntimeUsageRow[]> {
    this.context.assertOpen();
    const p = new SqlParams();
    return this.context.query<RuntimeUsageRow>(
      'read runtime usage',
      `SELECT u.runtime, count(DISTINCT u.item_id)::int8 AS items, ${SUMS}
       ${this.windowFrom(viewer, window, p)} GROUP BY u.runtime ORDER BY u.runtime COLLATE "C"`,
      p.values,
    );
  }

  async topUsedItems(
    viewer: Viewer,
    window: UsageWindow & { limit: number },
  ): Promise<ItemUsageRow[]> {
    this.context.assertOpen();
    const p = new SqlParams();
    const from = this.windowFrom(viewer, window, p);
    const limit = p.add(window.limit);
    const runtime = window.runtime !== undefined ? ` AND t.runtime = ${p.add(window.runtime)}` : '';
    const rows = await this.context.query<
      ItemRow & DailyUsageRow & { runtimes: string[]; last_use: number }
    >(
      'read the most used items',
      `WITH top AS (
         SELECT u.item_id, ${SUMS}, array_agg(DISTINCT u.runtime) AS runtimes,
           sum(u.injected + u.consumed + u.searched) AS uses
         ${from} GROUP BY u.item_id ORDER BY uses DESC, u.item_id COLLATE "C" LIMIT ${limit}
       )
       SELECT ${ITEM_COLUMNS}, top.injected, top.consumed, top.searched,
         to_json(top.runtimes) AS runtimes,
         (SELECT max(${LAST_USE}) FROM ${this.s}.item_usage t
           WHERE t.team_id = i.team_id AND t.item_id = i.id${runtime}) AS last_use
       FROM top JOIN ${this.s}.items i ON i.team_id = ${p.add(viewer.teamId)} AND i.id = top.item_id
       ORDER BY top.uses DESC, top.item_id COLLATE "C"`,
      p.values,
    );
    return rows.map((row) => ({
      item: rowToItem(row),
      injected: row.injected,
      consumed: row.consumed,
      searched: row.searched,
      runtimes: [...row.runtimes].sort(),
      lastUsedAt: iso(row.last_use),
    }));
  }

  async mostUsedItems(viewer: Viewer, options: MostUsedOptions): Promise<UsedItemRow[]> {
    this.context.assertOpen();
    if (options.filters.length === 0 || options.kinds.length === 0) return [];
    const { s } = this;
    const p = new SqlParams();
    const uses = usesSql(options.kinds);
    const nowMs = Date.parse(options.now);
    const team = p.add(viewer.teamId);
    const perItem = `SELECT u.item_id, sum(${uses})::int8 AS uses FROM ${s}.item_usage_days u
      WHERE u.team_id = ${team} AND u.day >= ${p.add(options.fromDay)}
        AND u.day <= ${p.add(options.toDay)} AND ${uses} > 0
      GROUP BY u.item_id`;
    const versions = versionHint(options.filters);
    const hint =
      versions === null
        ? ''
        : versions.tags.length === 0
          ? ' AND v.item_key IS NOT NULL'
          : ` AND (v.item_key IS NOT NULL OR v.tags && ${p.add(versions.tags)}::text[])`;
    const used = `SELECT v.item_key AS k, CASE WHEN v.item_key IS NULL THEN v.id END AS vid,
        sum(per_item.uses)::int8 AS uses
      FROM per_item JOIN ${s}.items v ON v.team_id = ${team} AND v.id = per_item.item_id
        AND (v.visibility = 'team' OR v.source_runtime = ${p.add(viewer.runtime)})${hint}
      GROUP BY 1, 2`;
    const match = () =>
      `(${options.filters.map((filter) => `(${filterSql(viewer, filter, nowMs, p)})`).join(' OR ')})`;
    // The uses per item (the days with consumptions or searches: item_usage_days_active),
    // then per document (a key, or an unkeyed item's id), then the live items holding it.
    const rows = await this.context.query<ItemRow & { uses: number }>(
      'read the most used items of a kind',
      `WITH per_item AS MATERIALIZED (${perItem}), used AS MATERIALIZED (${used}), ranked AS (
         SELECT i.rid, i.id, used.uses FROM used
           JOIN ${s}.items i ON i.team_id = ${team} AND i.item_key = used.k
         WHERE used.k IS NOT NULL AND ${match()}
         UNION ALL
         SELECT i.rid, i.id, used.uses FROM used
           JOIN ${s}.items i ON i.team_id = ${team} AND i.id = used.vid
         WHERE used.k IS NULL AND ${match()}
       )
       SELECT ${ITEM_COLUMNS}, ranked.uses FROM ranked JOIN ${s}.items i ON i.rid = ranked.rid
       ORDER BY ranked.uses DESC, ranked.id COLLATE "C" LIMIT ${p.add(options.limit)}`,
      p.values,
    );
    return rows.map((row) => ({ item: rowToItem(row), uses: Number(row.uses) }));
  }

  async unusedItems(
    viewer: Viewer,
    options: UnusedItemsOptions,
  ): Promise<{ total: number; items: UnusedItemRow[] }> {
    this.context.assertOpen();
    const p = new SqlParams();
    // Each item's last use, aggregated once and joined (not a subquery per item and clause).
    const runtime =
      options.runtime !== undefined ? ` AND t.runtime = ${p.add(options.runtime)}` : '';
    const used = `LEFT JOIN (SELECT t.item_id, max(${LAST_USE}) AS last_use
      FROM ${this.s}.item_usage t WHERE t.team_id = ${p.add(viewer.teamId)}${runtime}
      GROUP BY t.item_id) u ON u.item_id = i.id`;
    const clauses = [filterSql(viewer, {}, Date.parse(options.now), p)];
    if (options.idleBefore === undefined) {
      clauses.push('u.item_id IS NULL');
      // Consumptions from before usage was recorded (every runtime's only).
      if (options.runtime === undefined) clauses.push('NOT i.consumed');
    } else {
      const cutoff = p.add(options.idleBefore);
      clauses.push(
        `i.created_at < ${cutoff}::timestamptz`,
        `coalesce(u.last_use, 0) < (extract(epoch FROM ${cutoff}::timestamptz) * 1000)::int8`,
      );
    }
    const order =
      options.idleBefore === undefined
        ? 'i.rid'
        : 'coalesce(u.last_use, (extract(epoch FROM i.created_at) * 1000)::int8), i.rid';
    const limit = p.add(options.limit);
    // The page by rid first (the window count is taken before its LIMIT; no rows: none
    // match), then only its rows read whole: not every matching item's content.
    const rows = await this.context.query<ItemRow & { last_use: number | null; total: number }>(
      'read unused items',
      `WITH page AS (
         SELECT i.rid, u.last_use, row_number() OVER (ORDER BY ${order}) AS position,
           count(*) OVER () AS total
         FROM ${this.s}.items i ${used} WHERE ${clauses.join(' AND ')}
         ORDER BY position LIMIT ${limit}
       )
       SELECT ${ITEM_COLUMNS}, page.last_use, page.total::int8 AS total
       FROM page JOIN ${this.s}.items i ON i.rid = page.rid ORDER BY page.position`,
      p.values,
    );
    return {
      total: rows[0]?.total ?? 0,
      items: rows.map((row) => ({
        item: rowToItem(row),
        lastUsedAt: row.last_use ? iso(row.last_use) : null,
      })),
    };
  }

  async pruneItemUsage(beforeDay: string): Promise<number> {
    this.context.assertOpen();
    const { s } = this;
    return this.transaction('prune item usage', async (client) => {
      const days = await client.query(`DELETE FROM ${s}.item_usage_days WHERE day < $1`, [
        beforeDay,
      ]);
      const gone = await client.query(
        `DELETE FROM ${s}.item_usage t WHERE NOT EXISTS
           (SELECT 1 FROM ${s}.items i WHERE i.team_id = t.team_id AND i.id = t.item_id)`,
      );
      return (days.rowCount ?? 0) + (gone.rowCount ?? 0);
    });
  }
}
