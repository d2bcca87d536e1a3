import type { ContextItem, ContextType, Scope, Urgency } from './context-item.js';
import { urgencyAtLeast } from './context-item.js';

/** Who is reading. A reader sees its team's items, and private items only of its own runtime. */
export interface Viewer {
  teamId: string;
  runtime: string;
}

/** Filters every store backend understands. All given conditions must hold. */
export interface ItemFilter {
  scopes?: readonly Scope[];
  scopeKey?: string;
  scopeKeyPrefix?: string;
  types?: readonly ContextType[];
  /** Items with at least one of these relevance tags. */
  tags?: readonly string[];
  urgencies?: readonly Urgency[];
  minUrgency?: Urgency;
  sourceRuntime?: string;
  /** Only items created by writes with a sequence above this. */
  sinceSeq?: number;
  /** Only items created by writes with a sequence below this (paging newest-first). */
  beforeSeq?: number;
  createdAfter?: string;
  key?: string;
  /** Knowledge items whose key equals the prefix or lies under it (`project` -> `project/…`). */
  keyPrefix?: string;
  hasKey?: boolean;
  /** Only items no runtime has consumed yet. */
  unconsumed?: boolean;
  /** Superseded items are hidden unless this is set. */
  includeSuperseded?: boolean;
  /** Items whose scope key has one of these kinds (`none` = no scope key). */
  scopeKinds?: readonly ScopeKind[];
  /** Items carrying none of these tags (with latestPerScopeKey: applied after picking). */
  withoutTags?: readonly string[];
  /**
   * Set-level: of the items matching every other condition, keep only the newest per scope
   * key (items without one are dropped). `withoutTags` then removes scope keys whose newest
   * item carries one of its tags. `itemMatches` cannot check this one.
   */
  latestPerScopeKey?: boolean;
}

export const SCOPE_KINDS = ['none', 'task', 'thread', 'user', 'team'] as const;
export type ScopeKind = (typeof SCOPE_KINDS)[number];

/** The kind of a scope key: its prefix, or `none`. */
export function scopeKindOf(scopeKey: string | null): ScopeKind {
  if (scopeKey === null) return 'none';
  const kind = scopeKey.slice(0, scopeKey.indexOf(':'));
  return (SCOPE_KINDS as readonly string[]).includes(kind) ? (kind as ScopeKind) : 'none';
}

export interface ListOptions extends ItemFilter {
  limit: number;
}

/**
 * Whether a viewer may see an item at `now` and it passes the filter: the in-memory twin of a
 * store query, used where items arrive one at a time (the live stream, client caches).
 */
export function itemMatches(
  item: ContextItem,
  viewer: Viewer,
  filter: ItemFilter,
  now: Date,
): boolean {
  if (item.teamId !== viewer.teamId) return false;
  if (item.visibility === 'private' && item.source.runtime !== viewer.runtime) return false;
  if (item.expiresAt !== null && Date.parse(item.expiresAt) <= now.getTime()) return false;
  if (!filter.includeSuperseded && item.supersededBy !== null) return false;
  if (filter.scopes?.length && !filter.scopes.includes(item.scope)) return false;
  if (filter.scopeKey !== undefined && item.scopeKey !== filter.scopeKey) return false;
  if (filter.scopeKeyPrefix !== undefined && !item.scopeKey?.startsWith(filter.scopeKeyPrefix)) {
    return false;
  }
  if (filter.types?.length && !filter.types.includes(item.type)) return false;
  if (filter.tags?.length) {
    const wanted = filter.tags.map((tag) => tag.toLowerCase());
    if (!item.relevanceTags.some((tag) => wanted.includes(tag))) return false;
  }
  if (filter.urgencies?.length && !filter.urgencies.includes(item.urgency)) return false;
  if (filter.minUrgency !== undefined && !urgencyAtLeast(item.urgency, filter.minUrgency)) {
    return false;
  }
  if (filter.sourceRuntime !== undefined && item.source.runtime !== filter.sourceRuntime) {
    return false;
  }
  if (filter.sinceSeq !== undefined && item.seq <= filter.sinceSeq) return false;
  if (filter.beforeSeq !== undefined && item.seq >= filter.beforeSeq) return false;
  if (
    filter.createdAfter !== undefined &&
    Date.parse(item.createdAt) <= Date.parse(filter.createdAfter)
  ) {
    return false;
  }
  if (filter.key !== undefined && item.key !== filter.key) return false;
  if (filter.keyPrefix !== undefined) {
    const prefix = filter.keyPrefix.replace(/\/+$/, '');
    if (item.key === null || (item.key !== prefix && !item.key.startsWith(`${prefix}/`)))
      return false;
  }
  if (filter.hasKey !== undefined && (item.key !== null) !== filter.hasKey) return false;
  if (filter.unconsumed && item.consumed) return false;
  if (filter.scopeKinds?.length && !filter.scopeKinds.includes(scopeKindOf(item.scopeKey)))
    return false;
  if (filter.withoutTags?.length) {
    const unwanted = filter.withoutTags.map((tag) => tag.toLowerCase());
    if (item.relevanceTags.some((tag) => unwanted.includes(tag))) return false;
  }
  return true;
}

/**
 * The reference semantics of a store listing, in memory: what `Store.listItems(viewer,
 * options)` must return for these items at `now` (newest first). The conformance suite checks
 * every backend against it.
 */
export function applyListOptions(
  items: readonly ContextItem[],
  viewer: Viewer,
  options: ListOptions,
  now: Date,
): ContextItem[] {
  const { withoutTags, latestPerScopeKey, ...rest } = options;
  const base: ItemFilter = latestPerScopeKey
    ? rest
    : { ...rest, ...(withoutTags && { withoutTags }) };
  let matching = items
    .filter((item) => itemMatches(item, viewer, base, now))
    .sort((a, b) => b.seq - a.seq);
  if (latestPerScopeKey) {
    const seen = new Set<string>();
    matching = matching.filter((item) => {
      if (item.scopeKey === null || seen.has(item.scopeKey)) return false;
      seen.add(item.scopeKey);
      return true;
    });
    if (withoutTags?.length) {
      const unwanted = withoutTags.map((tag) => tag.toLowerCase());
      matching = matching.filter(
        (item) => !item.relevanceTags.some((tag) => unwanted.includes(tag)),
      );
    }
  }
  return matching.slice(0, options.limit);
}
