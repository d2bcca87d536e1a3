import type { ContextItem, ContextType } from '../items/context-item.js';
import { URGENCY_RANK } from '../items/context-item.js';
import type { ListOptions } from '../items/item-filter.js';
import { applyListOptions, itemMatches } from '../items/item-filter.js';
import { truncateToTokens } from '../shared/tokens.js';
import { taskStatusOf } from '../tasks/task-status-item.js';
import type { Task } from '../tasks/tasks.js';
import type { ContextEntry, ContextSection, TrimStep } from './context-builder.js';
import type { UsedItem } from './frequent-documents.js';
import { compareIds, FREQUENT_DOC_ENTRY_TOKENS, isDocument } from './frequent-documents.js';

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
  { id: 'frequentlyAccessedDocs', title: 'Frequently used documents' },
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
  frequentlyAccessedDocs: number;
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
  frequentlyAccessedDocs: 5,
  maxEntryTokens: 300,
};

/**
 * The fixed trimming order for the shared context: least essential sections are compacted,
 * then dropped (oldest entries first), before anything about the current state is touched.
 */
export const SHARED_TRIM_ORDER: readonly TrimStep[] = [
  { section: 'recentInteractions', action: 'compact' },
  { section: 'recentInteractions', action: 'drop' },
  { section: 'frequentlyAccessedDocs', action: 'compact' },
  { section: 'frequentlyAccessedDocs', action: 'drop' },
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

/** Each section's candidate items, as the store's section queries returned them. */
export type SharedCandidates = Readonly<Record<SharedSectionId, readonly ContextItem[]>>;

export interface SelectOptions {
  viewer: SharedContextViewer;
  /** Items that expired at or before this instant are left out. */
  now: Date;
  limits?: Partial<SharedContextLimits>;
  /**
   * The team's non-terminal tasks from the task store (`sharedTaskQueries`), newest first.
   * Given, they are the active-tasks section (before status items of tasks the store does not
   * know), and a task's status item shows only while it tells the task's current state.
   */
  tasks?: readonly Task[];
  /**
   * The team's runtimes and the trust capabilities.yaml gives each (seed 000's per-runtime
   * trust level): one identity line when given.
   */
  runtimes?: readonly { id: string; trust: string }[];
  /**
   * The uses that rank the frequently-used-documents candidates, by item id (the store's
   * `mostUsedItems` for `documentFilters()`); without it that section is empty.
   */
  documentUses?: ReadonlyMap<string, number>;
}

/**
 * The task-store queries behind the shared context (states, newest created first): the active
 * tasks a section can show, and every task waiting for approval a blocking item can name.
 */
export function sharedTaskQueries(limits: SharedContextLimits = DEFAULT_SHARED_LIMITS) {
  return [
    {
      states: ['SUBMITTED', 'WORKING', 'INPUT_REQUIRED', 'AUTH_REQUIRED'] as Task['state'][],
      limit: limits.activeTasks + limits.blockedItems,
    },
    {
      states: ['AUTH_REQUIRED'] as Task['state'][],
      limit: limits.blockedItems + limits.identity + limits.currentFocus,
    },
  ];
}

const TASK_SCOPE_KEY = /^task:(task_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

/** The id of the task-store task an item's scope key names (`task:task_<uuid>`). */
function hubTaskIdOf(item: ContextItem): string | undefined {
  return TASK_SCOPE_KEY.exec(item.scopeKey ?? '')?.[1];
}

/** The hub task a status item reports (`runtimeOptions.task`), with the state it reports. */
function reportedTask(item: ContextItem): { id: string; state: string } | null {
  const id = hubTaskIdOf(item);
  const reported = taskStatusOf(item);
  if (id === undefined || reported?.taskId !== id) return null;
  return { id, state: reported.state };
}

const TASK_URGENCY: Partial<Record<Task['state'], string>> = {
  AUTH_REQUIRED: 'blocking',
  INPUT_REQUIRED: 'attention',
};

function taskEntry(task: Task, limits: SharedContextLimits): ContextEntry {
  const lines = [
    `${task.state}${task.targetRuntime ? ` on ${task.targetRuntime}` : ''}${task.lease ? ` (held by ${task.lease.workerId})` : ''}; needs ${task.requiredCapabilities.join(', ')}; from ${task.origin}`,
  ];
  const reason = typeof task.routing?.reason === 'string' ? task.routing.reason : null;
  if (reason) lines.push(`Routing: ${reason}`);
  if (task.description) lines.push(task.description);
  const body = lines.join('\n');
  const cut = truncateToTokens(body, limits.maxEntryTokens);
  return {
    id: `task:${task.id}`,
    refs: [],
    title: `${task.state}: ${task.title}`,
    body: cut.length < body.length ? `${cut.trimEnd()}…` : cut,
    summary: `${task.state}${task.targetRuntime ? ` on ${task.targetRuntime}` : ''}`,
    meta: {
      type: 'task',
      urgency: TASK_URGENCY[task.state] ?? 'background',
      runtime: task.origin,
      createdAt: task.createdAt,
      tags: ['task', `task-${task.state.toLowerCase().replaceAll('_', '-')}`],
      label: task.id,
    },
  };
}

const ACTIVITY_TYPES: ContextType[] = ['discovery', 'alert', 'request'];

/**
 * The store queries behind each section. Every query is exact, not a sample: a section can
 * lose at most the entries that earlier sections took (items are shown once), so each limit
 * is the section's own plus what can be taken before it. Building from these candidates gives
 * the same context as building from every item (a property the store conformance suite checks
 * through `applyListOptions`).
 */
export function sharedCandidateQueries(
  limits: SharedContextLimits = DEFAULT_SHARED_LIMITS,
): Record<SharedSectionId, ListOptions[]> {
  const keyed = limits.identity + limits.currentFocus;
  const blocked = limits.blockedItems + keyed;
  const docs = limits.frequentlyAccessedDocs;
  const doneTags = [...DONE_TAGS];
  return {
    identity: [{ keyPrefix: 'identity', limit: limits.identity }],
    currentFocus: [{ keyPrefix: 'focus', limit: limits.currentFocus }],
    blockedItems: [
      { urgencies: ['blocking'], unconsumed: true, limit: blocked },
      { types: ['request'], urgencies: ['attention'], unconsumed: true, limit: blocked },
      { types: ['request'], urgencies: ['background'], unconsumed: true, limit: blocked },
    ],
    activeTasks: [
      {
        types: ['status'],
        scopeKinds: ['task'],
        hasKey: false,
        latestPerScopeKey: true,
        withoutTags: doneTags,
        limit: limits.activeTasks + limits.blockedItems,
      },
    ],
    // A keyed decision is a decision too: it stays here (identity and focus keys go first).
    recentDecisions: [{ types: ['decision'], limit: limits.recentDecisions + blocked }],
    threadSummaries: [
      {
        scopeKinds: ['thread'],
        hasKey: false,
        latestPerScopeKey: true,
        limit: limits.threadSummaries + limits.blockedItems + limits.recentDecisions,
      },
    ],
    projectContext: [
      { hasKey: true, limit: limits.projectContext + blocked + limits.recentDecisions + docs },
    ],
    // Ranked by use, not listed: see `frequentDocsCandidateLimit` and `documentFilters`.
    frequentlyAccessedDocs: [],
    recentInteractions: [
      {
        types: ACTIVITY_TYPES,
        scopeKinds: ['none', 'task', 'user', 'team'],
        hasKey: false,
        limit: limits.recentInteractions + limits.blockedItems + docs,
      },
      {
        types: ['status'],
        scopeKinds: ['none', 'user', 'team'],
        hasKey: false,
        limit: limits.recentInteractions + limits.blockedItems + docs,
      },
    ],
  };
}

/**
 * How many of the most used documents the store returns (`mostUsedItems`): the section's own
 * and every entry the sections assigned before it can take, so the selection is exact.
 */
export function frequentDocsCandidateLimit(
  limits: SharedContextLimits = DEFAULT_SHARED_LIMITS,
): number {
  const before = ASSIGNMENT_ORDER.slice(0, ASSIGNMENT_ORDER.indexOf('frequentlyAccessedDocs'));
  return before.reduce((sum, section) => sum + limits[section], limits.frequentlyAccessedDocs);
}

/**
 * Section candidates computed in memory from a full set of items (tests, local tools). The
 * frequently used documents come ranked (`rankDocuments`, or the store's `mostUsedItems`);
 * pass their uses to the selection too (`documentUses`).
 */
export function candidatesFromItems(
  items: readonly ContextItem[],
  viewer: SharedContextViewer,
  now: Date,
  limits: SharedContextLimits = DEFAULT_SHARED_LIMITS,
  documents: readonly UsedItem[] = [],
): SharedCandidates {
  const queries = sharedCandidateQueries(limits);
  const result = {} as Record<SharedSectionId, ContextItem[]>;
  for (const { id } of SHARED_SECTIONS) {
    result[id] = queries[id].flatMap((query) => applyListOptions(items, viewer, query, now));
  }
  result.frequentlyAccessedDocs = documents.map((entry) => entry.item);
  return result;
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

/** The order in which sections claim items: an item appears in the first that takes it. */
const ASSIGNMENT_ORDER: readonly SharedSectionId[] = [
  'identity',
  'currentFocus',
  'blockedItems',
  'activeTasks',
  'recentDecisions',
  'threadSummaries',
  'frequentlyAccessedDocs',
  'projectContext',
  'recentInteractions',
];

type ItemOrder = (a: ContextItem, b: ContextItem) => number;

/** The order in which a section takes its candidates. */
function sectionOrder(section: SharedSectionId, uses: ReadonlyMap<string, number>): ItemOrder {
  if (section === 'blockedItems') {
    return (a, b) => URGENCY_RANK[b.urgency] - URGENCY_RANK[a.urgency] || newestFirst(a, b);
  }
  if (section === 'frequentlyAccessedDocs') {
    return (a, b) => (uses.get(b.id) ?? 0) - (uses.get(a.id) ?? 0) || compareIds(a.id, b.id);
  }
  return newestFirst;
}

/** Shown by label, so a change of rank among the same documents keeps the text as it was. */
function byLabel(a: ContextItem, b: ContextItem): number {
  const label = (item: ContextItem) => (item.key ?? item.title).toLowerCase();
  return compareIds(label(a), label(b)) || compareIds(a.id, b.id);
}

/** A listed document points to the item (key, title, short summary); it does not quote it. */
function documentEntry(item: ContextItem, limits: SharedContextLimits): ContextEntry {
  const tokens = Math.min(limits.maxEntryTokens, FREQUENT_DOC_ENTRY_TOKENS);
  const summary = item.summary.trim();
  const cut = truncateToTokens(summary, tokens);
  return {
    ...toEntry(item, limits, item.key ?? undefined),
    body: cut.length < summary.length ? `${cut.trimEnd()}…` : cut,
  };
}

/** Text compared as words: case and spacing aside. */
function sameWords(text: string): string {
  return text.toLowerCase().replace(/\s+/g, ' ').trim();
}

/**
 * Picks the shared-context sections from each section's candidates. Pure and deterministic:
 * the same candidates, viewer, time and limits give the same sections, whatever order the
 * candidates come in. Each item is shown once, in the first section (in ASSIGNMENT_ORDER) that
 * takes it; items that are expired, superseded, or not visible to the viewer are ignored.
 */
export function selectSharedContext(
  candidates: SharedCandidates,
  options: SelectOptions,
): ContextSection[] {
  const limits = { ...DEFAULT_SHARED_LIMITS, ...options.limits };
  const { viewer, now } = options;
  const tasks = options.tasks;
  const taskById = new Map((tasks ?? []).map((task) => [task.id, task]));
  /**
   * With the task store given, a hub task's status item is current only while the task is in
   * the state it reports (REJECTED, terminal, stays until consumed: no runtime can do it).
   */
  const current = (item: ContextItem) => {
    if (tasks === undefined) return true;
    const reported = reportedTask(item);
    if (reported === null) return true;
    return reported.state === 'REJECTED' || taskById.get(reported.id)?.state === reported.state;
  };
  const visible = (item: ContextItem) => itemMatches(item, viewer, {}, now) && current(item);
  const uses = options.documentUses ?? new Map<string, number>();
  /** A frequently used document: a document with uses in the window. */
  const used = (item: ContextItem) => (uses.get(item.id) ?? 0) > 0 && isDocument(item, viewer, now);
  const placed = new Set<string>();
  /** Hub tasks whose current status item a section already shows. */
  const shownTasks = new Set<string>();
  const reportOf = (item: ContextItem) => (tasks === undefined ? null : reportedTask(item));
  const chosen = {} as Record<SharedSectionId, ContextItem[]>;
  let taskEntries: ContextEntry[] = [];
  for (const section of ASSIGNMENT_ORDER) {
    const unique = new Map<string, ContextItem>();
    for (const item of candidates[section] ?? []) {
      if (!visible(item)) continue;
      // The store's tasks are the active-tasks section: no status item about one of them is.
      if (section === 'activeTasks' && tasks !== undefined && hubTaskIdOf(item) !== undefined) {
        continue;
      }
      if (section === 'frequentlyAccessedDocs' && !used(item)) continue;
      unique.set(item.id, item);
    }
    const ordered = [...unique.values()].sort(sectionOrder(section, uses));
    const free = ordered.filter((item) => {
      if (placed.has(item.id)) return false;
      const reported = reportOf(item);
      return reported === null || !shownTasks.has(reported.id);
    });
    let room = limits[section];
    if (section === 'activeTasks' && tasks !== undefined) {
      const open = [...tasks]
        .sort((a, b) => b.createdAt.localeCompare(a.createdAt) || b.id.localeCompare(a.id))
        .filter((task) => !shownTasks.has(task.id))
        .slice(0, room);
      taskEntries = open.map((task) => taskEntry(task, limits));
      room -= open.length;
    }
    const taken: ContextItem[] = [];
    // The same decision stated again (another session saying it, another runtime recording it)
    // is one line: the newest, most urgent first by the section's order.
    const stated = new Set<string>();
    for (const item of free) {
      if (taken.length >= room) break;
      if (section === 'recentDecisions') {
        const said = sameWords(`${item.title}\n${item.content}`);
        if (stated.has(said)) continue;
        stated.add(said);
      }
      const reported = reportOf(item);
      if (reported !== null) {
        if (shownTasks.has(reported.id)) continue;
        shownTasks.add(reported.id);
      }
      taken.push(item);
    }
    for (const item of taken) placed.add(item.id);
    chosen[section] = taken;
  }
  // Identity reads best in key order, documents by label; every other section stays newest (or most
  // urgent) first.
  chosen.identity.sort((a, b) => (a.key ?? '').localeCompare(b.key ?? '') || newestFirst(a, b));
  chosen.frequentlyAccessedDocs.sort(byLabel);

  const identityEntry: ContextEntry = {
    id: 'identity:viewer',
    refs: [],
    title: 'You',
    body: `the ${viewer.runtime} runtime of team ${viewer.teamId}, sharing context through ctxbus`,
    summary: `${viewer.runtime} in team ${viewer.teamId}`,
    meta: {},
  };
  // Seed 000's trust_level per runtime: the list is its own summary, so the text format (which
  // shows summaries) names each runtime's trust too; compacted, the text shows the title alone.
  const trustList = (options.runtimes ?? []).map((entry) => `${entry.id} (${entry.trust})`);
  const trustEntry: ContextEntry[] =
    trustList.length > 0
      ? [
          {
            id: 'identity:runtimes',
            refs: [],
            title: 'Runtimes',
            body: trustList.join(', '),
            summary: trustList.join(', '),
            meta: {},
          },
        ]
      : [];
  const entries: Record<SharedSectionId, ContextEntry[]> = {
    identity: [
      identityEntry,
      ...trustEntry,
      ...chosen.identity.map((item) => toEntry(item, limits, item.key ?? undefined)),
    ],
    activeTasks: [
      ...taskEntries,
      ...chosen.activeTasks.map((item) =>
        toEntry(item, limits, item.scopeKey?.slice('task:'.length)),
      ),
    ],
    blockedItems: chosen.blockedItems.map((item) => toEntry(item, limits)),
    recentDecisions: chosen.recentDecisions.map((item) => toEntry(item, limits)),
    currentFocus: chosen.currentFocus.map((item) => toEntry(item, limits)),
    recentInteractions: chosen.recentInteractions.map((item) => toEntry(item, limits)),
    threadSummaries: chosen.threadSummaries.map((item) =>
      toEntry(item, limits, item.scopeKey?.slice('thread:'.length)),
    ),
    projectContext: chosen.projectContext.map((item) =>
      toEntry(item, limits, item.key ?? undefined),
    ),
    frequentlyAccessedDocs: chosen.frequentlyAccessedDocs.map((item) =>
      documentEntry(item, limits),
    ),
  };
  return SHARED_SECTIONS.map(({ id, title }) => ({ id, title, entries: entries[id] }));
}
