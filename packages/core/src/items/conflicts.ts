import { z } from 'zod';
import { sha256Hex } from '../shared/canonical-hash.js';
import { queryInt } from '../shared/query-int.js';
import type { ContextItem, ContextItemInput } from './context-item.js';
import { contextItemSchema, itemIdSchema, LIMITS, teamIdSchema } from './context-item.js';

// Conflicts made visible (seed 000's open question 1: who wins when two runtimes write one
// thing at once?). Last-write-wins stays the rule: the newer value holds the key. But when a
// write takes over a key whose live value another runtime wrote within the conflict window,
// with a different value, the hub also raises a conflict item (tag `conflict`, blocking, key
// `conflict/<key>`) naming both runtimes and both values, and a person picks the one to keep.
// One encoder and one decoder for the hub, the CLI, the Telegram bot and the dashboard.

/** The tag of every conflict item (open or resolved). */
export const CONFLICT_TAG = 'conflict';
/** The runtime the hub writes conflict items and their resolutions as. */
export const CONFLICT_WRITER = 'hub';
/** How close two writes of one key by different runtimes must be to raise a conflict. */
export const DEFAULT_CONFLICT_WINDOW_MS = 10 * 60_000;

const KEY_PREFIX = 'conflict/';

/** Whether `key` is one of the hub's conflict keys (`conflict/...`), which no runtime writes. */
export const isConflictKey = (key: string | null | undefined): boolean =>
  key?.startsWith(KEY_PREFIX) ?? false;

/** The key of the conflict items about `key` (a newer conflict on it supersedes the older). */
export function conflictKey(key: string): string {
  const plain = `${KEY_PREFIX}${key}`;
  return plain.length <= LIMITS.keyChars ? plain : `${KEY_PREFIX}sha256-${sha256Hex(key)}`;
}

export const conflictValueSchema = z.object({
  id: itemIdSchema,
  runtime: z.string(),
  title: z.string(),
  summary: z.string(),
  createdAt: z.string(),
});
export type ConflictValue = z.infer<typeof conflictValueSchema>;

export const conflictResolutionSchema = z.object({
  /** The value kept. */
  keep: itemIdSchema,
  /** Who chose: a people's runtime (cli, telegram, web) or `admin:<token id>`. */
  by: z.string(),
  at: z.string(),
  /** The item that restored the kept value as the key's live one (null: it already was). */
  restoredId: itemIdSchema.nullable(),
  note: z.string().nullable(),
});
export type ConflictResolution = z.infer<typeof conflictResolutionSchema>;

/** What a conflict item reports (its `runtimeOptions.conflict`). */
export const conflictReportSchema = z.object({
  key: z.string(),
  status: z.enum(['open', 'resolved']),
  /** The older value first, then the value that won by writing last. */
  values: z.tuple([conflictValueSchema, conflictValueSchema]),
  /** The open conflict a resolution closes (null on the conflict itself). */
  conflictId: itemIdSchema.nullable(),
  /** On a resolution: when the conflict it closes was raised (absent on older ones). */
  raisedAt: z.string().optional(),
  resolution: conflictResolutionSchema.nullable(),
});
export type ConflictReport = z.infer<typeof conflictReportSchema>;

/** The conflict an item reports, or null when it is not one the hub wrote. */
export function conflictOf(item: ContextItem): ConflictReport | null {
  if (item.source.runtime !== CONFLICT_WRITER || !item.relevanceTags.includes(CONFLICT_TAG)) {
    return null;
  }
  const parsed = conflictReportSchema.safeParse(item.runtimeOptions[CONFLICT_TAG]);
  return parsed.success ? parsed.data : null;
}

/** Whether two items hold the same value (what readers see: type, title, summary, content). */
export function sameValue(a: ContextItem, b: ContextItem): boolean {
  return (
    a.type === b.type && a.title === b.title && a.summary === b.summary && a.content === b.content
  );
}

export interface ConflictCandidate {
  /** The item written last (it holds the key). */
  winner: ContextItem;
  /** The live value it took the key from. */
  replaced: ContextItem;
  /** How the write chose it: naming it (`supersedes`: the writer saw it) or by the key. */
  via: 'supersedes' | 'key';
}

/**
 * Whether a write raises a conflict: it took a key (without naming the value it replaced)
 * from another runtime's value written within `windowMs` before it, and the values differ.
 * Both team-visible: a private value is one runtime's own. A window of 0 raises none.
 */
export function isConflict(candidate: ConflictCandidate, windowMs: number): boolean {
  const { winner, replaced, via } = candidate;
  if (via !== 'key' || winner.key === null || windowMs <= 0) return false;
  if (winner.source.runtime === replaced.source.runtime) return false;
  if (winner.visibility !== 'team' || replaced.visibility !== 'team') return false;
  const gap = Date.parse(winner.createdAt) - Date.parse(replaced.createdAt);
  if (!(gap <= windowMs)) return false;
  return !sameValue(winner, replaced);
}

function conflictValueOf(item: ContextItem): ConflictValue {
  return {
    id: item.id,
    runtime: item.source.runtime,
    title: item.title,
    summary: item.summary,
    createdAt: item.createdAt,
  };
}

/** The conflict item the hub writes (as CONFLICT_WRITER) for a write that raised one. */
export function conflictItemInput({ winner, replaced }: ConflictCandidate): ContextItemInput {
  const key = winner.key ?? '';
  const older = conflictValueOf(replaced);
  const newer = conflictValueOf(winner);
  const report: ConflictReport = {
    key,
    status: 'open',
    values: [older, newer],
    conflictId: null,
    resolution: null,
  };
  const seconds = Math.max(
    0,
    Math.round((Date.parse(newer.createdAt) - Date.parse(older.createdAt)) / 1000),
  );
  return {
    type: 'alert',
    title: `Conflict on ${key}: ${older.runtime} and ${newer.runtime} wrote different values`.slice(
      0,
      LIMITS.titleChars,
    ),
    summary:
      `${newer.runtime} wrote "${newer.title}" ${seconds}s after ${older.runtime} wrote "${older.title}"; the newer value holds the key until a person picks one.`.slice(
        0,
        LIMITS.summaryChars,
      ),
    content: [
      `Key: ${key}`,
      `1. ${older.runtime} at ${older.createdAt} (item ${older.id}): ${older.title}`,
      ...(older.summary ? [`   ${older.summary}`] : []),
      `2. ${newer.runtime} at ${newer.createdAt} (item ${newer.id}): ${newer.title} (holds the key now)`,
      ...(newer.summary ? [`   ${newer.summary}`] : []),
      '',
      `Keep one: ctxbus conflicts resolve <this item id> --keep <item id>`,
    ].join('\n'),
    scope: winner.scope,
    ...(winner.scopeKey !== null && { scopeKey: winner.scopeKey }),
    urgency: 'blocking',
    visibility: 'team',
    relevanceTags: [...new Set([CONFLICT_TAG, ...winner.relevanceTags])].slice(0, LIMITS.tags),
    key: conflictKey(key),
    runtimeOptions: { [CONFLICT_TAG]: report },
  };
}

/** The item that closes a conflict (it supersedes the conflict item: the key is its own). */
export function resolutionItemInput(
  conflict: ContextItem,
  report: ConflictReport,
  resolution: ConflictResolution,
): ContextItemInput {
  const kept = report.values.find((value) => value.id === resolution.keep) ?? report.values[1];
  const closed: ConflictReport = {
    ...report,
    status: 'resolved',
    conflictId: conflict.id,
    raisedAt: conflict.createdAt,
    resolution,
  };
  return {
    type: 'decision',
    title: `Conflict on ${report.key} resolved: kept ${kept.runtime}'s value`.slice(
      0,
      LIMITS.titleChars,
    ),
    summary:
      `${resolution.by} kept "${kept.title}" (item ${kept.id}) as the value of ${report.key}.`.slice(
        0,
        LIMITS.summaryChars,
      ),
    ...(resolution.note !== null && { content: resolution.note }),
    scope: conflict.scope,
    ...(conflict.scopeKey !== null && { scopeKey: conflict.scopeKey }),
    urgency: 'background',
    visibility: 'team',
    relevanceTags: [CONFLICT_TAG, 'resolved'],
    key: conflict.key ?? conflictKey(report.key),
    supersedes: conflict.id,
    runtimeOptions: { [CONFLICT_TAG]: closed },
  };
}

// --- the API ---------------------------------------------------------------------------------

export const conflictViewSchema = z.object({
  id: itemIdSchema,
  seq: z.int(),
  key: z.string(),
  status: z.enum(['open', 'resolved']),
  raisedAt: z.string(),
  values: z.tuple([conflictValueSchema, conflictValueSchema]),
  resolution: conflictResolutionSchema.nullable(),
  item: contextItemSchema,
});
export type ConflictView = z.infer<typeof conflictViewSchema>;

/**
 * The view of a conflict item (null: the item is not one). A resolution shows the conflict it
 * closed: its id (the one `resolve` was given) and when it was raised; `item` is the resolution.
 */
export function conflictView(item: ContextItem): ConflictView | null {
  const report = conflictOf(item);
  if (!report) return null;
  return {
    id: report.conflictId ?? item.id,
    seq: item.seq,
    key: report.key,
    status: report.status,
    raisedAt: report.raisedAt ?? item.createdAt,
    values: report.values,
    resolution: report.resolution,
    item,
  };
}

export const listConflictsQuerySchema = z.strictObject({
  status: z.enum(['open', 'all']).default('open'),
  limit: queryInt(1, 200).default(50),
});

export const listConflictsResponseSchema = z.object({ conflicts: z.array(conflictViewSchema) });
export type ListConflictsResponse = z.infer<typeof listConflictsResponseSchema>;

export const resolveConflictBodySchema = z.strictObject({
  /** The id of the value to keep: one of the two the conflict names. */
  keep: itemIdSchema,
  note: z.string().trim().min(1).max(LIMITS.summaryChars).optional(),
  /** An admin token names the team. */
  team: teamIdSchema.optional(),
});
export type ResolveConflictBody = z.infer<typeof resolveConflictBodySchema>;

export const resolveConflictResponseSchema = z.object({
  conflict: conflictViewSchema,
  /** The key's live item now: the kept value (restored, or as it was). */
  kept: contextItemSchema,
});
export type ResolveConflictResponse = z.infer<typeof resolveConflictResponseSchema>;
