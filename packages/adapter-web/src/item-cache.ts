import type {
  ContextItem,
  ContextType,
  ItemFilter,
  Scope,
  StreamEvent,
  Urgency,
} from '@ctxbus/core/contract';
import { itemMatches } from '@ctxbus/core/contract';

/** What a view of the cache shows; every condition given must hold (tags: any of them). */
export interface CacheFilter {
  scope?: Scope | Scope[];
  scopeKey?: string;
  /** Items with at least one of these tags. */
  tags?: string | string[];
  /** This urgency or higher. */
  minUrgency?: Urgency;
  /** Exactly these urgencies. */
  urgency?: Urgency | Urgency[];
  /** The writing runtime. */
  runtime?: string;
  type?: ContextType | ContextType[];
  /** Superseded items are hidden unless this is set. */
  includeSuperseded?: boolean;
  unconsumed?: boolean;
}

export interface ItemCacheOptions {
  /** The most items kept; past it the oldest (lowest sequence) go first. Default 1,000. */
  maxItems?: number;
  /** The clock expiry is judged by (default `Date.now`). */
  now?: () => number;
}

const list = <T>(value: T | T[] | undefined): readonly T[] | undefined =>
  value === undefined ? undefined : Array.isArray(value) ? value : [value];

/** A cache filter as core's `ItemFilter` (what `itemMatches` judges). */
export function toItemFilter(filter: CacheFilter): ItemFilter {
  const scopes = list(filter.scope);
  const tags = list(filter.tags);
  const urgencies = list(filter.urgency);
  const types = list(filter.type);
  return {
    ...(scopes && { scopes }),
    ...(filter.scopeKey !== undefined && { scopeKey: filter.scopeKey }),
    ...(tags && { tags }),
    ...(urgencies && { urgencies }),
    ...(filter.minUrgency !== undefined && { minUrgency: filter.minUrgency }),
    ...(filter.runtime !== undefined && { sourceRuntime: filter.runtime }),
    ...(types && { types }),
    ...(filter.includeSuperseded && { includeSuperseded: true }),
    ...(filter.unconsumed && { unconsumed: true }),
  };
}

/** How far an item's state has moved: consumers added, then superseded (both only grow). */
const progress = (item: ContextItem): number =>
  item.consumedBy.length + (item.supersededBy === null ? 0 : 1);

/**
 * The items a page knows, fed by the live stream (`apply`) or a listing (`load`): one entry per
 * item id, its newest state kept (a change with a lower sequence than the one held is ignored,
 * so a replayed or reordered change cannot roll an item back). Added items appear, consumed ones
 * update, superseded ones leave the default view; expired ones leave every view and
 * `expireDue` drops them (the hub sends no expiry event). Bounded by `maxItems`.
 *
 * `subscribe` and `snapshot` fit UI frameworks (React's `useSyncExternalStore`, a Svelte
 * store, a signal): the snapshot array is the same object until something changes.
 */
export class ItemCache {
  readonly maxItems: number;
  readonly #now: () => number;
  readonly #items = new Map<string, { item: ContextItem; changeSeq: number }>();
  readonly #listeners = new Set<() => void>();
  #lastSeq = 0;
  #snapshot: readonly ContextItem[] | null = null;
  #expiryTimer: ReturnType<typeof setTimeout> | undefined;
  #autoExpire = false;

  constructor(options: ItemCacheOptions = {}) {
    this.maxItems = Math.max(1, options.maxItems ?? 1_000);
    this.#now = options.now ?? Date.now;
  }

  /** The highest change sequence applied: resume the stream after it. */
  get lastSeq(): number {
    return this.#lastSeq;
  }

  get size(): number {
    return this.#items.size;
  }

  /** Applies one stream event; true when the cache changed. */
  apply(event: StreamEvent): boolean {
    this.#lastSeq = Math.max(this.#lastSeq, event.seq);
    const changed = this.#put(event.item, event.seq);
    if (changed) this.#changed();
    return changed;
  }

  /** Puts listed items in (a first load); true when the cache changed. */
  load(items: readonly ContextItem[]): boolean {
    let changed = false;
    for (const item of items) changed = this.#put(item, item.seq) || changed;
    if (changed) this.#changed();
    return changed;
  }

  /**
   * Puts in states of items read without a change sequence (the Supabase transport reads rows):
   * a state replaces the one held only when it is further along, as an item's row only ever
   * moves that way (runtimes are added to `consumedBy`, `supersededBy` is set once). A listing
   * that raced a newer change so cannot roll an item back. True when the cache changed.
   */
  merge(items: readonly ContextItem[]): boolean {
    let changed = false;
    for (const item of items) {
      const held = this.#items.get(item.id);
      if (held && progress(held.item) >= progress(item)) continue;
      changed = this.#put(item, held ? held.changeSeq : item.seq, true) || changed;
    }
    if (changed) this.#changed();
    return changed;
  }

  /** Drops items (deleted at the source: archived by the hub's retention); true when any was held. */
  remove(ids: readonly string[]): boolean {
    let changed = false;
    for (const id of ids) changed = this.#items.delete(id) || changed;
    if (changed) this.#changed();
    return changed;
  }

  #put(item: ContextItem, changeSeq: number, newer = false): boolean {
    const held = this.#items.get(item.id);
    if (held && !newer && held.changeSeq >= changeSeq) return false;
    if (this.#expired(item) && !held) return false;
    this.#items.delete(item.id);
    this.#items.set(item.id, { item, changeSeq });
    this.#evict();
    return true;
  }

  #evict(): void {
    if (this.#items.size <= this.maxItems) return;
    const oldest = [...this.#items.values()]
      .sort((a, b) => a.item.seq - b.item.seq)
      .slice(0, this.#items.size - this.maxItems);
    for (const entry of oldest) this.#items.delete(entry.item.id);
  }

  #expired(item: ContextItem): boolean {
    return item.expiresAt !== null && Date.parse(item.expiresAt) <= this.#now();
  }

  /** One item by id (superseded, consumed or expired included, while the cache holds it). */
  get(id: string): ContextItem | undefined {
    return this.#items.get(id)?.item;
  }

  /** The items a filter selects, newest first; expired items never. */
  items(filter: CacheFilter = {}): ContextItem[] {
    const itemFilter = toItemFilter(filter);
    const now = new Date(this.#now());
    const selected: ContextItem[] = [];
    for (const { item } of this.#items.values()) {
      // The hub already chose what this token sees: judge only the filter here.
      const viewer = { teamId: item.teamId, runtime: item.source.runtime };
      if (itemMatches(item, viewer, itemFilter, now)) selected.push(item);
    }
    return selected.sort((a, b) => b.seq - a.seq);
  }

  /** The default view (`items()`), the same array until the cache changes. */
  snapshot(): readonly ContextItem[] {
    this.#snapshot ??= Object.freeze(this.items());
    return this.#snapshot;
  }

  /** Calls `listener` after every change; returns the unsubscribe function. */
  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  /** Drops the items whose expiry has passed; true when any was dropped. */
  expireDue(): boolean {
    let changed = false;
    for (const [id, { item }] of this.#items) {
      if (this.#expired(item)) {
        this.#items.delete(id);
        changed = true;
      }
    }
    if (changed) this.#changed();
    else this.#scheduleExpiry();
    return changed;
  }

  /**
   * Drops expired items when they expire (a timer set for the next expiry), so that views
   * update by themselves; `stopAutoExpire` ends it.
   */
  autoExpire(): void {
    this.#autoExpire = true;
    this.#scheduleExpiry();
  }

  stopAutoExpire(): void {
    this.#autoExpire = false;
    clearTimeout(this.#expiryTimer);
    this.#expiryTimer = undefined;
  }

  clear(): void {
    if (this.#items.size === 0) return;
    this.#items.clear();
    this.#changed();
  }

  #scheduleExpiry(): void {
    clearTimeout(this.#expiryTimer);
    this.#expiryTimer = undefined;
    if (!this.#autoExpire) return;
    let next = Number.POSITIVE_INFINITY;
    for (const { item } of this.#items.values()) {
      if (item.expiresAt !== null) next = Math.min(next, Date.parse(item.expiresAt));
    }
    if (next === Number.POSITIVE_INFINITY) return;
    // setTimeout holds at most 2^31 - 1 ms; a later expiry is looked at again then.
    const delay = Math.min(Math.max(0, next - this.#now()), 2 ** 31 - 1);
    this.#expiryTimer = setTimeout(() => this.expireDue(), delay);
  }

  #changed(): void {
    this.#snapshot = null;
    this.#scheduleExpiry();
    for (const listener of [...this.#listeners]) listener();
  }
}
