import type { ContextItem, ItemFilter, UsageKind, Viewer } from '@ctxbus/core';

// The usage of items by runtimes (context analytics): how often each runtime was injected an
// item, consumed it or found it in a search, per UTC day, and when it last did. The hub
// batches uses in memory and records them in one call per flush; reads answer for one viewer
// (its team's items, private ones only of its own runtime).

/** The uses of one item by one runtime on one UTC day, added to what is stored. */
export interface ItemUsageDelta {
  teamId: string;
  itemId: string;
  runtime: string;
  /** `YYYY-MM-DD`, UTC. */
  day: string;
  injected: number;
  consumed: number;
  searched: number;
  /** The last use of each kind in this delta (ISO); null when the kind has none. */
  lastInjectedAt: string | null;
  lastConsumedAt: string | null;
  lastSearchedAt: string | null;
}

/** Which days of usage a read counts, and whose. */
export interface UsageWindow {
  /** First and last day counted (inclusive, `YYYY-MM-DD`). */
  fromDay: string;
  toDay: string;
  /** Only this runtime's uses; every runtime's when absent. */
  runtime?: string;
}

export interface UsageCountRow {
  injected: number;
  consumed: number;
  searched: number;
}

export interface DailyUsageRow extends UsageCountRow {
  day: string;
  runtime: string;
}

export interface RuntimeUsageRow extends UsageCountRow {
  runtime: string;
  /** Distinct items used. */
  items: number;
}

export interface ItemUsageRow extends UsageCountRow {
  item: ContextItem;
  /** Runtimes that used it in the window, by name. */
  runtimes: string[];
  /** The last use of any kind, ever (ISO). */
  lastUsedAt: string;
}

export interface UnusedItemsOptions {
  /** Only this runtime's uses count; every runtime's when absent. */
  runtime?: string;
  /** The reader's now (expiry). */
  now: string;
  /**
   * Absent: items never used. Present: items created before it whose last use (if any) is
   * before it (the stale rule, see core's `staleCutoff`).
   */
  idleBefore?: string;
  limit: number;
}

export interface UnusedItemRow {
  item: ContextItem;
  /** The last use (ISO), null when never used. */
  lastUsedAt: string | null;
}

/** Which items, and which of their uses, rank them (`mostUsedItems`). */
export interface MostUsedOptions {
  /** First and last day counted (inclusive, `YYYY-MM-DD`); every runtime's uses. */
  fromDay: string;
  toDay: string;
  /** The kinds of use that count. */
  kinds: readonly UsageKind[];
  /** Items matching any of these (live and current: expiry and supersession as listings). */
  filters: readonly ItemFilter[];
  /** The reader's now (expiry). */
  now: string;
  limit: number;
}

export interface UsedItemRow {
  item: ContextItem;
  /** The window's uses of the kinds asked for, of every version the viewer may read. */
  uses: number;
}

/**
 * Item usage. Every read is bounded by the viewer's team and sees usage only of items the
 * viewer may read (private ones of its own runtime); items swept out of the store leave it.
 */
export interface ItemUsageStore {
  /**
   * Adds the deltas to the per-day counts and to each item's per-runtime totals and last-use
   * times, in one transaction. A delta of an item that does not exist is kept (reads join on
   * the item, so it shows nowhere, and `pruneItemUsage` removes it).
   */
  recordItemUsage(deltas: readonly ItemUsageDelta[]): Promise<void>;
  /** Counts per day and runtime in the window (days with no use are absent). */
  dailyUsage(viewer: Viewer, window: UsageWindow): Promise<DailyUsageRow[]>;
  /** Counts and distinct items per runtime in the window, by runtime name. */
  runtimeUsage(viewer: Viewer, window: UsageWindow): Promise<RuntimeUsageRow[]>;
  /** The items used most in the window (all kinds together), ties by item id. */
  topUsedItems(viewer: Viewer, window: UsageWindow & { limit: number }): Promise<ItemUsageRow[]>;
  /**
   * The live, current items matching any of the filters that were used most in the window
   * (core's `rankDocuments` is the reference). A keyed item counts the uses of every version
   * of its key the viewer may read, superseded ones too; an unkeyed item its own. Most used
   * first, ties by item id (byte order); items without such uses are left out.
   */
  mostUsedItems(viewer: Viewer, options: MostUsedOptions): Promise<UsedItemRow[]>;
  /**
   * Live, current items (not expired, not superseded) nobody used (never, or not since
   * `idleBefore`): oldest first (never used), least recently used first (idle), with how many
   * there are in all. An item consumed before usage was recorded counts as used.
   */
  unusedItems(
    viewer: Viewer,
    options: UnusedItemsOptions,
  ): Promise<{ total: number; items: UnusedItemRow[] }>;
  /**
   * Deletes per-day counts of days before `beforeDay`, and the usage of items no longer
   * stored; how many rows went.
   */
  pruneItemUsage(beforeDay: string): Promise<number>;
}

const USAGE_COLUMNS = {
  injected: 'injected',
  consumed: 'consumed',
  searched: 'searched',
} as const satisfies Record<UsageKind, string>;

/** The sum of the kinds of use asked for, of a per-day usage row (alias `u`), in SQL. */
export function usesSql(kinds: readonly UsageKind[]): string {
  return kinds.map((kind) => `u.${USAGE_COLUMNS[kind]}`).join(' + ');
}

/**
 * What every version whose uses count for `filters` must be, when the filters tell: keyed (a
 * filter on the key matches the key's current holder, whatever the version), or carrying one
 * of `tags` (an unkeyed item is its own current version). Null when some filter names neither
 * a key nor tags. Lets a backend skip the uses of items that can be no match.
 */
export function versionHint(filters: readonly ItemFilter[]): { tags: string[] } | null {
  const onKey = (filter: ItemFilter) =>
    filter.keyPrefix !== undefined || filter.key !== undefined || filter.hasKey === true;
  if (!filters.every((filter) => onKey(filter) || (filter.tags?.length ?? 0) > 0)) return null;
  const tags = filters.flatMap((filter) => (onKey(filter) ? [] : (filter.tags ?? [])));
  return { tags: [...new Set(tags.map((tag) => tag.toLowerCase()))] };
}
