import type { ContextItem, Urgency } from './context-item.js';
import { URGENCIES } from './context-item.js';

// One mapping from a row of the items table to the item, for every reader of that table: the
// store's backends (SQLite, PostgreSQL) and the browser reading it through Supabase. The
// columns have the same names everywhere; what differs is how a few values are stored (times,
// tags and JSON columns), which each reader decodes into `StoredItemValues` first.

/** The columns every reader takes as they are. */
export interface ItemRowColumns {
  rid: number;
  id: string;
  team_id: string;
  type: string;
  title: string;
  content: string;
  summary: string;
  source_runtime: string;
  source_agent: string | null;
  source_task: string | null;
  source_thread: string | null;
  scope: string;
  scope_key: string | null;
  /** Index in URGENCIES. */
  urgency: number;
  visibility: string;
  supersedes: string | null;
  superseded_by: string | null;
  item_key: string | null;
  tokens: number;
}

/** The values each reader decodes its own way. */
export interface StoredItemValues {
  tags: string[];
  createdMs: number;
  expiresMs: number | null;
  consumedBy: ContextItem['consumedBy'];
  runtimeOptions: ContextItem['runtimeOptions'];
  redactions: ContextItem['redactions'];
}

const iso = (ms: number): string => new Date(ms).toISOString();

/** The item a row holds (not checked: a reader of untrusted rows parses the result). */
export function itemFromColumns(row: ItemRowColumns, values: StoredItemValues): ContextItem {
  return {
    id: row.id,
    teamId: row.team_id,
    seq: row.rid,
    type: row.type as ContextItem['type'],
    title: row.title,
    content: row.content,
    summary: row.summary,
    source: {
      runtime: row.source_runtime,
      agentId: row.source_agent,
      taskId: row.source_task,
      threadId: row.source_thread,
    },
    scope: row.scope as ContextItem['scope'],
    scopeKey: row.scope_key,
    relevanceTags: values.tags,
    urgency: URGENCIES[row.urgency] as Urgency,
    visibility: row.visibility as ContextItem['visibility'],
    createdAt: iso(values.createdMs),
    expiresAt: values.expiresMs === null ? null : iso(values.expiresMs),
    supersedes: row.supersedes,
    supersededBy: row.superseded_by,
    key: row.item_key,
    consumed: values.consumedBy.length > 0,
    consumedBy: values.consumedBy,
    runtimeOptions: values.runtimeOptions,
    redactions: values.redactions,
    tokens: row.tokens,
  };
}
