import type { ContextType, Scope, Urgency } from './context-item.js';

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
