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
}

export interface ListOptions extends ItemFilter {
  limit: number;
}

/**
 * The store queries whose union is enough for `selectSharedContext`: each is an indexed,
 * bounded read, and each limit is above what the selection can take from it.
 */
export const SHARED_CANDIDATE_QUERIES: readonly ListOptions[] = [
  { keyPrefix: 'identity', limit: 40 },
  { keyPrefix: 'focus', limit: 5 },
  { urgencies: ['blocking'], unconsumed: true, limit: 40 },
  { types: ['request'], unconsumed: true, limit: 40 },
  { types: ['status'], scopeKeyPrefix: 'task:', limit: 200 },
  { types: ['decision'], hasKey: false, limit: 40 },
  { scopeKeyPrefix: 'thread:', hasKey: false, limit: 100 },
  { hasKey: true, limit: 40 },
  { types: ['discovery', 'alert'], hasKey: false, limit: 20 },
  { hasKey: false, limit: 60 },
];

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
  return true;
}
