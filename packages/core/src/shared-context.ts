import type { ContextEntry, ContextSection, TrimStep } from './context-builder.js';
import type { ContextItem } from './context-item.js';
import { URGENCY_RANK } from './context-item.js';
import { truncateToTokens } from './tokens.js';

/**
 * Seed 000's "minimum shared context", in display order. Each item lands in at most one
 * section, assigned in the order of `ASSIGNMENT_ORDER`.
 */
export const SHARED_SECTIONS = [
  { id: 'identity', title: 'Identity' },
  { id: 'activeTasks', title: 'Active tasks' },
  { id: 'blockedItems', title: 'Blocked / waiting on someone' },
  { id: 'recentDecisions', title: 'Recent decisions' },
  { id: 'currentFocus', title: 'Current focus' },
  { id: 'recentInteractions', title: 'Recent activity' },
  { id: 'threadSummaries', title: 'Threads' },
  { id: 'projectContext', title: 'Project context' },
] as const;

export type SharedSectionId = (typeof SHARED_SECTIONS)[number]['id'];

export interface SharedContextLimits {
  identity: number;
  activeTasks: number;
  blockedItems: number;
  recentDecisions: number;
  currentFocus: number;
  recentInteractions: number;
  threadSummaries: number;
  projectContext: number;
  /** Cap on one entry's full text, in tokens. */
  maxEntryTokens: number;
}

export const DEFAULT_SHARED_LIMITS: Readonly<SharedContextLimits> = {
  identity: 10,
  activeTasks: 5,
  blockedItems: 10,
  recentDecisions: 10,
  currentFocus: 1,
  recentInteractions: 5,
  threadSummaries: 3,
  projectContext: 5,
  maxEntryTokens: 300,
};

/**
 * The fixed trimming order for the shared context: least essential sections are compacted,
 * then dropped (oldest entries first), before anything about the current state is touched.
 */
export const SHARED_TRIM_ORDER: readonly TrimStep[] = [
  { section: 'recentInteractions', action: 'compact' },
  { section: 'recentInteractions', action: 'drop' },
  { section: 'threadSummaries', action: 'compact' },
  { section: 'threadSummaries', action: 'drop' },
  { section: 'projectContext', action: 'compact' },
  { section: 'projectContext', action: 'drop' },
  { section: 'recentDecisions', action: 'compact' },
  { section: 'recentDecisions', action: 'drop', keep: 3 },
  { section: 'activeTasks', action: 'compact' },
  { section: 'activeTasks', action: 'drop', keep: 3 },
  { section: 'currentFocus', action: 'compact' },
  { section: 'blockedItems', action: 'compact' },
  { section: 'blockedItems', action: 'drop', keep: 3 },
  { section: 'recentDecisions', action: 'drop' },
  { section: 'activeTasks', action: 'drop' },
  { section: 'currentFocus', action: 'drop' },
  { section: 'blockedItems', action: 'drop' },
  { section: 'identity', action: 'compact' },
  { section: 'identity', action: 'drop' },
];

/** Tags on a task's latest status that mark the task as finished. */
export const DONE_TAGS: ReadonlySet<string> = new Set(['done', 'closed', 'cancelled', 'completed']);

export interface SharedContextViewer {
  teamId: string;
  runtime: string;
}

export interface SelectOptions {
  viewer: SharedContextViewer;
  /** Items that expired at or before this instant are left out. */
  now: Date;
  limits?: Partial<SharedContextLimits>;
}

function isKnowledgeKey(key: string | null, prefix: string): boolean {
  return key !== null && (key === prefix || key.startsWith(`${prefix}/`));
}

/** Newest first by store sequence (the one total order every backend agrees on). */
function newestFirst(a: ContextItem, b: ContextItem): number {
  return b.seq - a.seq;
}

function capBody(item: ContextItem, maxTokens: number): string {
  const body = item.content.trim() || item.summary;
  // item.tokens counts title + content, so a small item needs no tokenizer call here.
  if (item.tokens <= maxTokens) return body;
  const cut = truncateToTokens(body, maxTokens);
  return cut.length < body.length ? `${cut.trimEnd()}…` : cut;
}

function toEntry(item: ContextItem, limits: SharedContextLimits, label?: string): ContextEntry {
  return {
    id: item.id,
    refs: [{ id: item.id, seq: item.seq }],
    title: item.title,
    body: capBody(item, limits.maxEntryTokens),
    summary: item.summary,
    meta: {
      type: item.type,
      urgency: item.urgency,
      runtime: item.source.runtime,
      createdAt: item.createdAt,
      tags: item.relevanceTags,
      ...(label === undefined ? {} : { label }),
    },
  };
}

/**
 * Picks the shared-context sections from a set of candidate items. Pure and deterministic:
 * the same items, viewer, time and limits always give the same sections. Items that are
 * expired, superseded, in another team, or private to another runtime are ignored.
 */
export function selectSharedContext(
  candidates: readonly ContextItem[],
  options: SelectOptions,
): ContextSection[] {
  const limits = { ...DEFAULT_SHARED_LIMITS, ...options.limits };
  const nowMs = options.now.getTime();
  const { viewer } = options;
  const supersededInSet = new Set(candidates.map((item) => item.supersedes).filter(Boolean));
  const byId = new Map<string, ContextItem>();
  for (const item of candidates) {
    if (item.teamId !== viewer.teamId) continue;
    if (item.visibility === 'private' && item.source.runtime !== viewer.runtime) continue;
    if (item.expiresAt !== null && Date.parse(item.expiresAt) <= nowMs) continue;
    if (item.supersededBy !== null || supersededInSet.has(item.id)) continue;
    byId.set(item.id, item);
  }
  const pool = [...byId.values()].sort(newestFirst);
  const placed = new Set<string>();
  const take = (items: ContextItem[], limit: number): ContextItem[] => {
    const chosen = items.filter((item) => !placed.has(item.id)).slice(0, limit);
    for (const item of chosen) placed.add(item.id);
    return chosen;
  };

  const identity = take(
    pool
      .filter((item) => isKnowledgeKey(item.key, 'identity'))
      .sort((a, b) => (a.key ?? '').localeCompare(b.key ?? '') || newestFirst(a, b)),
    limits.identity,
  );
  const focus = take(
    pool.filter((item) => isKnowledgeKey(item.key, 'focus')),
    limits.currentFocus,
  );
  const blocked = take(
    pool
      .filter((item) => (item.urgency === 'blocking' || item.type === 'request') && !item.consumed)
      .sort((a, b) => URGENCY_RANK[b.urgency] - URGENCY_RANK[a.urgency] || newestFirst(a, b)),
    limits.blockedItems,
  );

  // A task's state is its newest status item; finished tasks are not active.
  const latestTaskStatus = new Map<string, ContextItem>();
  for (const item of pool) {
    if (item.type !== 'status' || !item.scopeKey?.startsWith('task:')) continue;
    if (!latestTaskStatus.has(item.scopeKey)) latestTaskStatus.set(item.scopeKey, item);
  }
  const tasks = take(
    [...latestTaskStatus.values()].filter(
      (item) => !item.relevanceTags.some((tag) => DONE_TAGS.has(tag)),
    ),
    limits.activeTasks,
  );
  for (const item of pool) {
    // Older statuses of a task are history, not activity.
    if (item.type === 'status' && item.scopeKey?.startsWith('task:')) placed.add(item.id);
  }

  const decisions = take(
    pool.filter((item) => item.type === 'decision' && item.key === null),
    limits.recentDecisions,
  );
  const latestPerThread = new Map<string, ContextItem>();
  for (const item of pool) {
    if (placed.has(item.id) || item.key !== null || !item.scopeKey?.startsWith('thread:')) continue;
    if (!latestPerThread.has(item.scopeKey)) latestPerThread.set(item.scopeKey, item);
  }
  const threads = take([...latestPerThread.values()], limits.threadSummaries);
  const project = take(
    pool.filter((item) => item.key !== null),
    limits.projectContext,
  );
  const activity = take(
    pool.filter((item) => item.key === null && !item.scopeKey?.startsWith('thread:')),
    limits.recentInteractions,
  );

  const identityEntry: ContextEntry = {
    id: 'identity:viewer',
    refs: [],
    title: 'You',
    body: `the ${viewer.runtime} runtime of team ${viewer.teamId}, sharing context through ctxbus`,
    summary: `${viewer.runtime} in team ${viewer.teamId}`,
    meta: {},
  };
  const chosen: Record<SharedSectionId, ContextEntry[]> = {
    identity: [
      identityEntry,
      ...identity.map((item) => toEntry(item, limits, item.key ?? undefined)),
    ],
    activeTasks: tasks.map((item) => toEntry(item, limits, item.scopeKey?.slice('task:'.length))),
    blockedItems: blocked.map((item) => toEntry(item, limits)),
    recentDecisions: decisions.map((item) => toEntry(item, limits)),
    currentFocus: focus.map((item) => toEntry(item, limits)),
    recentInteractions: activity.map((item) => toEntry(item, limits)),
    threadSummaries: threads.map((item) =>
      toEntry(item, limits, item.scopeKey?.slice('thread:'.length)),
    ),
    projectContext: project.map((item) => toEntry(item, limits, item.key ?? undefined)),
  };
  return SHARED_SECTIONS.map(({ id, title }) => ({ id, title, entries: chosen[id] }));
}
