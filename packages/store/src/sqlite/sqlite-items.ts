import type { ContextItem, ListOptions, NewContextItem, Viewer } from '@ctxbus/core';
import { CtxbusError, URGENCY_RANK } from '@ctxbus/core';
import type { ItemStore, SearchHit, SearchOptions, WriteOutcome } from '../store.js';
import type { SqliteChangeLog } from './sqlite-changes.js';
import type { SqliteConnection } from './sqlite-connection.js';
import { SqliteGroupCommit } from './sqlite-group-commit.js';
import type { ItemRow } from './sqlite-rows.js';
import { rowToItem } from './sqlite-rows.js';
import type { SqliteSearch } from './sqlite-search.js';
import { filterSql, withoutTagsSql } from './sqlite-sql.js';

// Items in the embedded store: writes (through the group commit), reads, search and
// consumption.

const iso = (ms: number): string => new Date(ms).toISOString();

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

  /** Writes one caller's items after sequence `seq`; returns the outcomes and the new seq. */
  private writeGroup(
    items: readonly NewContextItem[],
    startSeq: number,
    nowMs: number,
  ): { outcomes: WriteOutcome[]; seq: number } {
    let seq = startSeq;
    const outcomes: WriteOutcome[] = [];
    // Items created earlier in this group, with the input hash they were written with.
    const created = new Map<string, { item: ContextItem; inputHash: string }>();
    const conflict = (id: string) =>
      new CtxbusError(
        'conflict',
        `item ${id} already exists with different content; use a new id`,
        {
          details: { id },
        },
      );
    for (const item of items) {
      const earlier = created.get(item.id);
      if (earlier) {
        if (earlier.inputHash !== item.inputHash) throw conflict(item.id);
        outcomes.push({ item: earlier.item, status: 'existing' });
        continue;
      }
      const existing = this.itemRow(item.teamId, item.id);
      if (existing) {
        if (existing.input_hash !== item.inputHash) throw conflict(item.id);
        outcomes.push({ item: rowToItem(existing), status: 'existing' });
        continue;
      }
      const writer = { teamId: item.teamId, runtime: item.source.runtime };
      const supersedes = this.resolveSupersedes(item, writer, nowMs);
      seq += 1;
      this.insertItem(item, seq, supersedes);
      const { inputHash, ...fields } = item;
      const stored: ContextItem = {
        ...fields,
        seq,
        supersedes: supersedes?.id ?? null,
        supersededBy: null,
        consumed: false,
        consumedBy: [],
      };
      created.set(item.id, { item: stored, inputHash });
      outcomes.push({ item: stored, status: 'created' });
      if (supersedes !== null) {
        seq += 1;
        this.connection
          .statement('UPDATE items SET superseded_by = ? WHERE rid = ?')
          .run(item.id, supersedes.rid);
        this.changes.insert(seq, 'superseded', supersedes.rid, item.teamId, nowMs);
        const replaced = created.get(supersedes.id);
        if (replaced) replaced.item.supersededBy = item.id;
      }
    }
    return { outcomes, seq };
  }

  /** The item a new item replaces: named by `supersedes`, or the live holder of its key. */
  private resolveSupersedes(item: NewContextItem, writer: Viewer, nowMs: number): ItemRow | null {
    let target: ItemRow | undefined;
    if (item.supersedes !== null) {
      target = this.visibleRow(writer, item.supersedes, nowMs);
      if (!target) {
        throw new CtxbusError(
          'invalid_reference',
          `supersedes names item ${item.supersedes}, which does not exist (or is not visible to ${writer.runtime} in team ${writer.teamId})`,
          { details: { field: 'supersedes', id: item.supersedes } },
        );
      }
    }
    if (item.key !== null) {
      const holder = this.connection
        .statement(
          `SELECT * FROM items i WHERE i.team_id = ? AND i.item_key = ? AND i.superseded_by IS NULL
           AND (i.visibility = 'team' OR i.source_runtime = ?)
           AND (i.expires_at IS NULL OR i.expires_at > ?)
         ORDER BY i.rid DESC LIMIT 1`,
        )
        .get(writer.teamId, item.key, writer.runtime, nowMs) as ItemRow | undefined;
      if (holder && target && holder.rid !== target.rid) {
        throw new CtxbusError(
          'conflict',
          `key ${item.key} is held by item ${holder.id}, but supersedes names ${target.id}`,
          { details: { key: item.key, holder: holder.id, supersedes: target.id } },
        );
      }
      target ??= holder;
    }
    if (!target) return null;
    if (target.superseded_by !== null) {
      throw new CtxbusError(
        'conflict',
        `item ${target.id} was already superseded by ${target.superseded_by}; supersede that one instead`,
        { details: { id: target.id, supersededBy: target.superseded_by } },
      );
    }
    return target;
  }

  private insertItem(item: NewContextItem, seq: number, supersedes: ItemRow | null): void {
    const nowMs = Date.parse(item.createdAt);
    this.changes.insert(seq, 'added', seq, item.teamId, nowMs);
    const tags = JSON.stringify(item.relevanceTags);
    this.connection
      .statement(
        `INSERT INTO items (rid, id, team_id, type, title, content, summary, tags, source_runtime,
         source_agent, source_task, source_thread, scope, scope_key, scope_kind, urgency, visibility,
         created_at, expires_at, supersedes, item_key, runtime_options, redactions, tokens, input_hash)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
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
        supersedes?.id ?? null,
        item.key,
        JSON.stringify(item.runtimeOptions),
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
    const found = this.connection.transaction(() => {
      const row = this.visibleRow(viewer, id, nowMs);
      if (!row) return false;
      const consumedBy = JSON.parse(row.consumed_by) as ContextItem['consumedBy'];
      if (consumedBy.some((entry) => entry.runtime === viewer.runtime)) return true;
      consumedBy.push({ runtime: viewer.runtime, at: iso(nowMs) });
      this.connection
        .statement('UPDATE items SET consumed = 1, consumed_by = ? WHERE rid = ?')
        .run(JSON.stringify(consumedBy), row.rid);
      this.changes.insert(this.connection.maxSeq() + 1, 'consumed', row.rid, row.team_id, nowMs);
      return true;
    });
    if (!found) return null;
    const row = this.itemRow(viewer.teamId, id);
    return row ? rowToItem(row) : null;
  }
}
