import type { ContextItem, Viewer } from '@ctxbus/core';
import { CtxbusError } from '@ctxbus/core';
import { partitionRuntime } from '../search/search-partition.js';
import type { ChangeKind, WriteOutcome } from '../store.js';
import type { PreparedItem } from './postgres-prepare.js';
import { itemRowJson } from './postgres-prepare.js';
import type { TermCount } from './postgres-term-stats.js';
import { countTerms } from './postgres-term-stats.js';

// The decisions of a group commit, made in memory while the transaction holds the counter
// row lock (so nothing else can change the rows involved): idempotency, conflicts,
// supersession, key holders, consumption and sequence numbers, with the same rules as the
// SQLite store's writeGroup. The store then persists the result in one statement.

/** An item the plan knows: loaded from the database, or created by this plan. */
interface Entry {
  /** The item as it is now (`seq` is its rid). */
  item: ContextItem;
  inputHash: string;
  /** False until the row is in the database (inserted by an earlier statement). */
  persisted: boolean;
  /** The queued item it was created from (new entries only). */
  prepared?: PreparedItem;
}

export interface LoadedRow {
  item: ContextItem;
  inputHash: string;
}

interface ChangeRow {
  seq: number;
  kind: ChangeKind;
  item_rid: number;
  team_id: string;
  at: string;
}

/** Rows for the persisting statement (JSON for json_populate_recordset). */
export interface PendingRows {
  /** New items' rows: JSON objects already escaped for an E'' literal. */
  items: string[];
  updates: Record<string, unknown>[];
  changes: ChangeRow[];
  /** Search statistics of the new items, by partition (see TermStatistics). */
  terms: TermCount[];
  seq: number;
  createdItems: number;
}

const iso = (ms: number): string => new Date(ms).toISOString();
const keyOf = (teamId: string, key: string) => `${teamId}\n${key}`;
const clone = (item: ContextItem): ContextItem => structuredClone(item);

function conflict(id: string): CtxbusError {
  return new CtxbusError(
    'conflict',
    `item ${id} already exists with different content; use a new id`,
    {
      details: { id },
    },
  );
}

function visibleTo(item: ContextItem, viewer: Viewer, nowMs: number): boolean {
  return (
    item.teamId === viewer.teamId &&
    (item.visibility === 'team' || item.source.runtime === viewer.runtime) &&
    (item.expiresAt === null || Date.parse(item.expiresAt) > nowMs)
  );
}

/**
 * One flush's decisions. Operations are applied in arrival order; `mark`/`rollbackTo` undo a
 * failed operation (an undo journal), and `pending`/`markPersisted` hand what changed since
 * the last statement to the store.
 */
export class WritePlan {
  private seq: number;
  /** Items by team and id (ids are unique within a team, not across teams). */
  private readonly byId = new Map<string, Entry>();
  private readonly byKey = new Map<string, Set<Entry>>();
  private readonly journal: (() => void)[] = [];
  private pendingCreated: Entry[] = [];
  private pendingTouched = new Set<Entry>();
  private pendingChanges: ChangeRow[] = [];

  constructor(seq: number, rows: readonly LoadedRow[]) {
    this.seq = seq;
    for (const row of rows) {
      if (this.byId.has(keyOf(row.item.teamId, row.item.id))) continue;
      this.index({ item: row.item, inputHash: row.inputHash, persisted: true });
    }
  }

  get currentSeq(): number {
    return this.seq;
  }

  get hasPending(): boolean {
    return this.pendingChanges.length > 0;
  }

  mark(): number {
    return this.journal.length;
  }

  rollbackTo(mark: number): void {
    while (this.journal.length > mark) this.journal.pop()?.();
  }

  /** Stores one caller's items (all or nothing); same rules as the SQLite store. */
  write(items: readonly PreparedItem[], nowMs: number): WriteOutcome[] {
    const mark = this.mark();
    try {
      return this.writeGroup(items, nowMs);
    } catch (error) {
      this.rollbackTo(mark);
      throw error;
    }
  }

  /** Records a consumption; null when the viewer cannot see the item. */
  consume(viewer: Viewer, id: string, nowMs: number): ContextItem | null {
    const entry = this.byId.get(keyOf(viewer.teamId, id));
    if (!entry || !visibleTo(entry.item, viewer, nowMs)) return null;
    if (entry.item.consumedBy.some((consumption) => consumption.runtime === viewer.runtime)) {
      return clone(entry.item);
    }
    const { item } = entry;
    const before = { consumed: item.consumed, consumedBy: item.consumedBy };
    this.record(() => {
      item.consumed = before.consumed;
      item.consumedBy = before.consumedBy;
    });
    item.consumedBy = [...item.consumedBy, { runtime: viewer.runtime, at: iso(nowMs) }];
    item.consumed = true;
    this.touch(entry);
    this.addChange('consumed', item, nowMs);
    return clone(item);
  }

  /** What changed since the last `markPersisted`, as rows for the persisting statement. */
  pending(): PendingRows {
    const items: string[] = [];
    const indexed: { teamId: string; runtime: string; stems: readonly string[] }[] = [];
    for (const { prepared, item } of this.pendingCreated) {
      if (!prepared) continue;
      items.push(itemRowJson(prepared, item));
      indexed.push({
        teamId: item.teamId,
        runtime: partitionRuntime(item.visibility, item.source.runtime),
        stems: prepared.stems,
      });
    }
    const updates = [...this.pendingTouched]
      .filter((entry) => entry.persisted)
      .map(({ item }) => ({
        rid: item.seq,
        superseded_by: item.supersededBy,
        consumed: item.consumed,
        consumed_by: item.consumedBy,
      }));
    const terms = countTerms(indexed);
    return {
      items,
      updates,
      changes: [...this.pendingChanges],
      terms,
      seq: this.seq,
      createdItems: this.pendingCreated.length,
    };
  }

  /** The pending rows are in the database: later changes to them are updates. */
  markPersisted(): void {
    for (const entry of this.pendingCreated) entry.persisted = true;
    this.pendingCreated = [];
    this.pendingTouched = new Set();
    this.pendingChanges = [];
    this.journal.length = 0;
  }

  private writeGroup(items: readonly PreparedItem[], nowMs: number): WriteOutcome[] {
    const outcomes: WriteOutcome[] = [];
    // Items created earlier in this group: their outcomes follow later supersessions.
    const created = new Map<string, { item: ContextItem; inputHash: string }>();
    for (const prepared of items) {
      const input = prepared.item;
      const earlier = created.get(input.id);
      if (earlier) {
        if (earlier.inputHash !== input.inputHash) throw conflict(input.id);
        outcomes.push({ item: earlier.item, status: 'existing' });
        continue;
      }
      const existing = this.byId.get(keyOf(input.teamId, input.id));
      if (existing) {
        if (existing.inputHash !== input.inputHash) throw conflict(input.id);
        outcomes.push({ item: clone(existing.item), status: 'existing' });
        continue;
      }
      const writer = { teamId: input.teamId, runtime: input.source.runtime };
      const target = this.resolveSupersedes(input, writer, nowMs);
      this.advance();
      const { inputHash, ...fields } = input;
      const stored: ContextItem = {
        ...fields,
        seq: this.seq,
        supersedes: target?.item.id ?? null,
        supersededBy: null,
        consumed: false,
        consumedBy: [],
      };
      const entry: Entry = { item: clone(stored), inputHash, persisted: false, prepared };
      this.index(entry);
      this.record(() => this.unindex(entry));
      this.pendingCreated.push(entry);
      this.record(() => {
        this.pendingCreated.pop();
      });
      this.addChange('added', stored, Date.parse(stored.createdAt));
      created.set(input.id, { item: stored, inputHash });
      outcomes.push({ item: stored, status: 'created' });
      if (target) {
        const replaced = target.item;
        this.record(() => {
          replaced.supersededBy = null;
        });
        replaced.supersededBy = input.id;
        this.touch(target);
        this.addChange('superseded', replaced, nowMs);
        const replacedOutcome = created.get(replaced.id);
        if (replacedOutcome) replacedOutcome.item.supersededBy = input.id;
      }
    }
    return outcomes;
  }

  /** The item a new item replaces: named by `supersedes`, or the live holder of its key. */
  private resolveSupersedes(
    item: PreparedItem['item'],
    writer: Viewer,
    nowMs: number,
  ): Entry | null {
    let target: Entry | undefined;
    if (item.supersedes !== null) {
      const named = this.byId.get(keyOf(writer.teamId, item.supersedes));
      target = named && visibleTo(named.item, writer, nowMs) ? named : undefined;
      if (!target) {
        throw new CtxbusError(
          'invalid_reference',
          `supersedes names item ${item.supersedes}, which does not exist (or is not visible to ${writer.runtime} in team ${writer.teamId})`,
          { details: { field: 'supersedes', id: item.supersedes } },
        );
      }
    }
    if (item.key !== null) {
      let holder: Entry | undefined;
      for (const entry of this.byKey.get(keyOf(item.teamId, item.key)) ?? []) {
        if (entry.item.supersededBy !== null || !visibleTo(entry.item, writer, nowMs)) continue;
        if (!holder || entry.item.seq > holder.item.seq) holder = entry;
      }
      if (holder && target && holder !== target) {
        throw new CtxbusError(
          'conflict',
          `key ${item.key} is held by item ${holder.item.id}, but supersedes names ${target.item.id}`,
          { details: { key: item.key, holder: holder.item.id, supersedes: target.item.id } },
        );
      }
      target ??= holder;
    }
    if (!target) return null;
    if (target.item.supersededBy !== null) {
      throw new CtxbusError(
        'conflict',
        `item ${target.item.id} was already superseded by ${target.item.supersededBy}; supersede that one instead`,
        { details: { id: target.item.id, supersededBy: target.item.supersededBy } },
      );
    }
    return target;
  }

  private advance(): void {
    this.seq += 1;
    this.record(() => {
      this.seq -= 1;
    });
  }

  private addChange(kind: ChangeKind, item: ContextItem, atMs: number): void {
    if (kind !== 'added') this.advance();
    this.pendingChanges.push({
      seq: this.seq,
      kind,
      item_rid: item.seq,
      team_id: item.teamId,
      at: iso(atMs),
    });
    this.record(() => {
      this.pendingChanges.pop();
    });
  }

  private touch(entry: Entry): void {
    if (this.pendingTouched.has(entry)) return;
    this.pendingTouched.add(entry);
    this.record(() => this.pendingTouched.delete(entry));
  }

  private record(undo: () => void): void {
    this.journal.push(undo);
  }

  private index(entry: Entry): void {
    this.byId.set(keyOf(entry.item.teamId, entry.item.id), entry);
    if (entry.item.key === null) return;
    const key = keyOf(entry.item.teamId, entry.item.key);
    let set = this.byKey.get(key);
    if (!set) {
      set = new Set();
      this.byKey.set(key, set);
    }
    set.add(entry);
  }

  private unindex(entry: Entry): void {
    this.byId.delete(keyOf(entry.item.teamId, entry.item.id));
    if (entry.item.key !== null)
      this.byKey.get(keyOf(entry.item.teamId, entry.item.key))?.delete(entry);
  }
}
