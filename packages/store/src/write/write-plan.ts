import type { ContextItem, NewContextItem, Viewer } from '@ctxbus/core';
import { CtxbusError } from '@ctxbus/core';
import type { ChangeKind, WriteOutcome } from '../store.js';

// The rules of writes and consumptions, decided in memory, once for every backend:
// idempotent ids, conflicts, supersession (named by `supersedes`, or by writing a key held by a
// live item), key holders, consumption, and the sequence number of every change. No I/O: the
// backend reads the rows the rules need (`loadedRows`), holding whatever lock keeps them from
// changing, runs the plan, and persists what `planned()` hands it.

/** An item the backend read for the plan: as it is now (`seq` is its rid). */
export interface LoadedRow {
  item: ContextItem;
  inputHash: string;
}

/** A queued write's item, with whatever the backend prepared beside it. */
export interface PlannedInput {
  item: NewContextItem;
}

export interface PlannedChange {
  seq: number;
  kind: ChangeKind;
  /** The rid (sequence) of the item changed. */
  itemSeq: number;
  teamId: string;
  atMs: number;
}

/** What changed since the last `markPersisted`. */
export interface PlannedRows<P extends PlannedInput> {
  /** New items in sequence order, as they are now (superseded within the plan included). */
  created: { input: P; item: ContextItem }[];
  /** Items already persisted whose supersession or consumption changed. */
  updated: ContextItem[];
  changes: PlannedChange[];
  /** The newest sequence. */
  seq: number;
}

/**
 * The rows the plan needs for `items`, which the backend reads before planning: items with
 * the ids written or named by `supersedes` (by team), and the live (not superseded, unexpired)
 * holders of the keys written: all of them, or only the newest one the writer (`runtime`)
 * sees and the writer's own newest, the only ones the rules look at.
 */
export function rowsToLoad(items: readonly NewContextItem[]): {
  ids: { teamId: string; id: string }[];
  keys: { teamId: string; key: string; runtime: string }[];
} {
  const ids: { teamId: string; id: string }[] = [];
  const keys: { teamId: string; key: string; runtime: string }[] = [];
  for (const item of items) {
    ids.push({ teamId: item.teamId, id: item.id });
    if (item.supersedes !== null) ids.push({ teamId: item.teamId, id: item.supersedes });
    if (item.key !== null)
      keys.push({ teamId: item.teamId, key: item.key, runtime: item.source.runtime });
  }
  return { ids, keys };
}

/** An item the plan knows: loaded, or created by this plan. */
interface Entry<P> {
  item: ContextItem;
  inputHash: string;
  /** False until the row is in the database (persisted after an earlier `planned()`). */
  persisted: boolean;
  /** The queued input it was created from (new entries only). */
  input?: P;
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
 * Decisions after sequence `seq`, over the loaded rows. Operations are applied in arrival
 * order; `mark`/`rollbackTo` undo a failed operation (an undo journal), and
 * `planned`/`markPersisted` hand what changed since the last persisting statement to the store.
 */
export class WritePlan<P extends PlannedInput> {
  private seq: number;
  /** Items by team and id (ids are unique within a team, not across teams). */
  private readonly byId = new Map<string, Entry<P>>();
  private readonly byKey = new Map<string, Set<Entry<P>>>();
  private readonly journal: (() => void)[] = [];
  private pendingCreated: Entry<P>[] = [];
  private pendingTouched = new Set<Entry<P>>();
  private pendingChanges: PlannedChange[] = [];

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

  /** Stores one caller's items (all or nothing). */
  write(inputs: readonly P[], nowMs: number): WriteOutcome[] {
    const mark = this.mark();
    try {
      return this.writeGroup(inputs, nowMs);
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

  /** What changed since the last `markPersisted`. */
  planned(): PlannedRows<P> {
    const created: PlannedRows<P>['created'] = [];
    for (const { input, item } of this.pendingCreated) if (input) created.push({ input, item });
    const updated = [...this.pendingTouched]
      .filter((entry) => entry.persisted)
      .map((entry) => entry.item);
    return { created, updated, changes: [...this.pendingChanges], seq: this.seq };
  }

  /** The planned rows are in the database: later changes to them are updates. */
  markPersisted(): void {
    for (const entry of this.pendingCreated) entry.persisted = true;
    this.pendingCreated = [];
    this.pendingTouched = new Set();
    this.pendingChanges = [];
    this.journal.length = 0;
  }

  private writeGroup(inputs: readonly P[], nowMs: number): WriteOutcome[] {
    const outcomes: WriteOutcome[] = [];
    // Items created earlier in this group: their outcomes follow later supersessions.
    const created = new Map<string, { item: ContextItem; inputHash: string }>();
    for (const input of inputs) {
      const item = input.item;
      const earlier = created.get(item.id);
      if (earlier) {
        if (earlier.inputHash !== item.inputHash) throw conflict(item.id);
        outcomes.push({ item: earlier.item, status: 'existing' });
        continue;
      }
      const existing = this.byId.get(keyOf(item.teamId, item.id));
      if (existing) {
        if (existing.inputHash !== item.inputHash) throw conflict(item.id);
        outcomes.push({ item: clone(existing.item), status: 'existing' });
        continue;
      }
      const writer = { teamId: item.teamId, runtime: item.source.runtime };
      const target = this.resolveSupersedes(item, writer, nowMs);
      this.advance();
      const { inputHash, ...fields } = item;
      const stored: ContextItem = {
        ...fields,
        seq: this.seq,
        supersedes: target?.item.id ?? null,
        supersededBy: null,
        consumed: false,
        consumedBy: [],
      };
      // A copy: later operations change the entry (supersession, consumption: top-level fields
      // only), never the outcome already handed out.
      const entry: Entry<P> = { item: { ...stored }, inputHash, persisted: false, input };
      this.index(entry);
      this.record(() => this.unindex(entry));
      this.pendingCreated.push(entry);
      this.record(() => {
        this.pendingCreated.pop();
      });
      this.addChange('added', stored, Date.parse(stored.createdAt));
      created.set(item.id, { item: stored, inputHash });
      const outcome: WriteOutcome = { item: stored, status: 'created' };
      outcomes.push(outcome);
      if (target) {
        const replaced = target.item;
        this.record(() => {
          replaced.supersededBy = null;
        });
        replaced.supersededBy = item.id;
        this.touch(target);
        this.addChange('superseded', replaced, nowMs);
        outcome.superseded = {
          seq: this.seq,
          item: clone(replaced),
          via: item.supersedes === null ? 'key' : 'supersedes',
        };
        const replacedOutcome = created.get(replaced.id);
        if (replacedOutcome) replacedOutcome.item.supersededBy = item.id;
      }
    }
    return outcomes;
  }

  /** The item a new item replaces: named by `supersedes`, or the live holder of its key. */
  private resolveSupersedes(item: NewContextItem, writer: Viewer, nowMs: number): Entry<P> | null {
    let target: Entry<P> | undefined;
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
      let holder: Entry<P> | undefined;
      let ownPrivate: Entry<P> | undefined;
      for (const entry of this.byKey.get(keyOf(item.teamId, item.key)) ?? []) {
        if (entry.item.supersededBy !== null || !visibleTo(entry.item, writer, nowMs)) continue;
        if (!holder || entry.item.seq > holder.item.seq) holder = entry;
        if (
          entry.item.visibility === 'private' &&
          (!ownPrivate || entry.item.seq > ownPrivate.item.seq)
        )
          ownPrivate = entry;
      }
      // A private value replaces only its writer's private value of the key; it goes beside a
      // team value (the writer reads its own, the team the team's). Replacing a team value
      // would show the team an item superseded by one it cannot read, and that item's id.
      if (item.visibility === 'private') holder = ownPrivate;
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
    // A private item is its writer's alone: replacing a team item with one would take that
    // item from the team's view and show the team the private item's id as its successor.
    if (item.visibility === 'private' && target.item.visibility !== 'private') {
      throw new CtxbusError(
        'forbidden',
        `a private item cannot replace the team item ${target.item.id}: the team would lose it to an item it cannot read; write a team item, or write the private one without supersedes`,
        {
          details: {
            reason: 'private_over_shared',
            id: target.item.id,
            ...(item.key !== null && { key: item.key }),
          },
        },
      );
    }
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
      itemSeq: item.seq,
      teamId: item.teamId,
      atMs,
    });
    this.record(() => {
      this.pendingChanges.pop();
    });
  }

  private touch(entry: Entry<P>): void {
    if (this.pendingTouched.has(entry)) return;
    this.pendingTouched.add(entry);
    this.record(() => this.pendingTouched.delete(entry));
  }

  private record(undo: () => void): void {
    this.journal.push(undo);
  }

  private index(entry: Entry<P>): void {
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

  private unindex(entry: Entry<P>): void {
    this.byId.delete(keyOf(entry.item.teamId, entry.item.id));
    if (entry.item.key !== null)
      this.byKey.get(keyOf(entry.item.teamId, entry.item.key))?.delete(entry);
  }
}
