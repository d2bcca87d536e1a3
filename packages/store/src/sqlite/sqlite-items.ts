import type { ContextItem, ListOptions, NewContextItem, Viewer } from '@ctxbus/core';
import { URGENCY_RANK } from '@ctxbus/core';
import type { ItemStore, SearchHit, SearchOptions, WriteOutcome } from '../store.js';
import type { LoadedRow, PlannedInput, PlannedRows } from '../write/write-plan.js';
import { rowsToLoad, WritePlan } from '../write/write-plan.js';
import type { SqliteChangeLog } from './sqlite-changes.js';
import type { SqliteConnection } from './sqlite-connection.js';
import { SqliteGroupCommit } from './sqlite-group-commit.js';
import type { ItemRow } from './sqlite-rows.js';
import { rowToItem } from './sqlite-rows.js';
import type { SqliteSearch } from './sqlite-search.js';
import { filterSql, withoutTagsSql } from './sqlite-sql.js';

// Items in the embedded store: writes (through the group commit) and consumptions, decided by
// the shared WritePlan and persisted here; reads and search.

export class SqliteItems implements ItemStore {
  /** Writes queued in one event-loop turn commit together (see SqliteGroupCommit). */
  readonly writes: SqliteGroupCommit;

  constructor(
    private readonly connection: SqliteConnection,
    private readonly changes: SqliteChangeLog,
    private readonly search: SqliteSearch,
  ) {
    this.writes = new SqliteGroupCommit(connection, (items, seq, nowMs) =>
      this.writeGroup(items, seq, nowMs),
    );
  }

  /**
   * Queues the write; every write queued in the same event-loop turn commits in one
   * transaction (group commit), each inside its own savepoint so that one write's conflict
   * fails only that write. Resolves after the commit.
   */
  writeItems(items: readonly NewContextItem[]): Promise<WriteOutcome[]> {
    return this.writes.write(items);
  }

  /** An item of a team by id (ids are unique within a team, not across teams). */
  private itemRow(teamId: string, id: string): ItemRow | undefined {
    return this.connection
      .statement('SELECT * FROM items WHERE team_id = ? AND id = ?')
      .get(teamId, id) as ItemRow | undefined;
  }

  private visibleRow(viewer: Viewer, id: string, nowMs: number): ItemRow | undefined {
    return this.connection
      .statement(
        `SELECT * FROM items i WHERE i.id = ? AND i.team_id = ?
         AND (i.visibility = 'team' OR i.source_runtime = ?)
         AND (i.expires_at IS NULL OR i.expires_at > ?)`,
      )
      .get(id, viewer.teamId, viewer.runtime, nowMs) as ItemRow | undefined;
  }

  /**
   * Writes one caller's items after sequence `seq`, in the current transaction: reads the rows
   * the rules need, lets the shared WritePlan decide, and persists its decisions. Returns the
   * outcomes and the new seq.
   */
  private writeGroup(
    items: readonly NewContextItem[],
    seq: number,
    nowMs: number,
  ): { outcomes: WriteOutcome[]; seq: number } {
    const plan = new WritePlan<PlannedInput>(seq, this.loadRows(items, nowMs));
    const outcomes = plan.write(
      items.map((item) => ({ item })),
      nowMs,
    );
    this.persist(plan.planned(), 'supersession');
    return { outcomes, seq: plan.currentSeq };
  }

  /** The rows WritePlan needs for `items` (see rowsToLoad). */
  private loadRows(items: readonly NewContextItem[], nowMs: number): LoadedRow[] {
    const { ids, keys } = rowsToLoad(items);
    const rows: ItemRow[] = [];
    for (const { teamId, id } of ids) {
      const row = this.itemRow(teamId, id);
      if (row) rows.push(row);
    }
    for (const { teamId, key, runtime } of keys) {
      // The newest live holder the writer sees: the key index, walked from its newest entry.
      const holder = this.connection
        .statement(
          `SELECT * FROM items i WHERE i.team_id = ? AND i.item_key = ? AND i.superseded_by IS NULL
             AND (i.visibility = 'team' OR i.source_runtime = ?)
             AND (i.expires_at IS NULL OR i.expires_at > ?)
           ORDER BY i.rid DESC LIMIT 1`,
        )
        .get(teamId, key, runtime, nowMs) as ItemRow | undefined;
      if (holder) rows.push(holder);
      if (!holder || holder.visibility === 'private') continue;
      // And the writer's own newest private value, the one a private value replaces (WritePlan).
      const own = this.connection
        .statement(
          `SELECT * FROM items i WHERE i.team_id = ? AND i.item_key = ? AND i.superseded_by IS NULL
             AND i.source_runtime = ? AND i.visibility = 'private'
             AND (i.expires_at IS NULL OR i.expires_at > ?)
           ORDER BY i.rid DESC LIMIT 1`,
        )
        .get(teamId, key, runtime, nowMs) as ItemRow | undefined;
      if (own) rows.push(own);
    }
    return rows.map((row) => ({ item: rowToItem(row), inputHash: row.input_hash }));
  }

  /**
   * Stores what a plan decided: new items, changed items, then the change rows. Writes change
   * only supersession and consumptions only consumption: the update sets just those columns
   * (the open-item indexes cover `consumed`).
   */
  private persist(
    planned: PlannedRows<PlannedInput>,
    changed: 'supersession' | 'consumption',
  ): void {
    for (const { input, item } of planned.created) this.insertItem(input.item, item);
    for (const item of planned.updated) {
      if (changed === 'supersession') {
        this.connection
          .statement('UPDATE items SET superseded_by = ? WHERE rid = ?')
          .run(item.supersededBy, item.seq);
      } else {
        this.connection
          .statement('UPDATE items SET consumed = ?, consumed_by = ? WHERE rid = ?')
          .run(item.consumed ? 1 : 0, JSON.stringify(item.consumedBy), item.seq);
      }
    }
    for (const change of planned.changes)
      this.changes.insert(change.seq, change.kind, change.itemSeq, change.teamId, change.atMs);
  }

  /** Inserts a new item as `stored` (its seq, supersedes and supersededBy as planned). */
  private insertItem(item: NewContextItem, stored: ContextItem): void {
    const seq = stored.seq;
    const nowMs = Date.parse(item.createdAt);
    const tags = JSON.stringify(item.relevanceTags);
    const runtimeOptions = JSON.stringify(item.runtimeOptions);
    this.connection
      .statement(
        `INSERT INTO items (rid, id, team_id, type, title, content, summary, tags, source_runtime,
         source_agent, source_task, source_thread, scope, scope_key, scope_kind, urgency, visibility,
         created_at, expires_at, supersedes, superseded_by, item_key, runtime_options, redactions, tokens,
         input_hash)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        seq,
        item.id,
        item.teamId,
        item.type,
        item.title,
        item.content,
        item.summary,
        tags,
        item.source.runtime,
        item.source.agentId,
        item.source.taskId,
        item.source.threadId,
        item.scope,
        item.scopeKey,
        item.scopeKey === null ? null : (item.scopeKey.split(':', 1)[0] ?? null),
        URGENCY_RANK[item.urgency],
        item.visibility,
        nowMs,
        item.expiresAt === null ? null : Date.parse(item.expiresAt),
        stored.supersedes,
        stored.supersededBy,
        item.key,
        runtimeOptions,
        JSON.stringify(item.redactions),
        item.tokens,
        item.inputHash,
      );
    for (const tag of item.relevanceTags) {
      this.connection
        .statement('INSERT OR IGNORE INTO item_tags (tag, rid) VALUES (?, ?)')
        .run(tag, seq);
    }
    this.search.add({
      rid: seq,
      team_id: item.teamId,
      visibility: item.visibility,
      source_runtime: item.source.runtime,
      title: item.title,
      content: item.content,
      summary: item.summary,
      tags,
      type: item.type,
      runtime_options: runtimeOptions,
    });
  }

  async getItem(viewer: Viewer, id: string): Promise<ContextItem | null> {
    this.connection.assertOpen();
    const row = this.visibleRow(viewer, id, this.connection.clock().getTime());
    return row ? rowToItem(row) : null;
  }

  async listItems(viewer: Viewer, options: ListOptions): Promise<ContextItem[]> {
    this.connection.assertOpen();
    const { where, params } = filterSql(viewer, options, this.connection.clock().getTime());
    if (options.latestPerScopeKey) {
      // The newest matching item of each scope key; withoutTags then drops whole keys.
      const without = options.withoutTags?.length
        ? withoutTagsSql('rid', options.withoutTags)
        : null;
      const rows = this.connection
        .statement(
          `SELECT * FROM items WHERE rid IN (SELECT max(i.rid) FROM items i WHERE ${where} GROUP BY i.scope_key)
           ${without ? `AND ${without.sql}` : ''} ORDER BY rid DESC LIMIT ?`,
        )
        .all(...params, ...(without?.values ?? []), options.limit) as unknown as ItemRow[];
      return rows.map(rowToItem);
    }
    const rows = this.connection
      .statement(`SELECT * FROM items i WHERE ${where} ORDER BY i.rid DESC LIMIT ?`)
      .all(...params, options.limit) as unknown as ItemRow[];
    return rows.map(rowToItem);
  }

  async searchItems(viewer: Viewer, options: SearchOptions): Promise<SearchHit[]> {
    this.connection.assertOpen();
    return this.search.search(
      viewer,
      options,
      filterSql(viewer, options, this.connection.clock().getTime()),
    );
  }

  async consumeItem(viewer: Viewer, id: string): Promise<ContextItem | null> {
    const nowMs = this.connection.clock().getTime();
    return this.connection.transaction(() => {
      const row = this.itemRow(viewer.teamId, id);
      const loaded = row ? [{ item: rowToItem(row), inputHash: row.input_hash }] : [];
      const plan = new WritePlan<PlannedInput>(this.connection.maxSeq(), loaded);
      const consumed = plan.consume(viewer, id, nowMs);
      this.persist(plan.planned(), 'consumption');
      return consumed;
    });
  }
}
