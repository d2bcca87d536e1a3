import type { ContextItem, Urgency } from '@ctxbus/core';
import { URGENCIES } from '@ctxbus/core';

// One mapping from an items row to the item, for every backend. The columns have the same
// names everywhere; what differs is how a few values are stored (times, tags and JSON
// columns), which each backend decodes into `StoredValues` first.

/** The columns every backend stores as is. */
export interface ItemColumns {
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
  /** Index in core's URGENCIES. */
  urgency: number;
  visibility: string;
  supersedes: string | null;
  superseded_by: string | null;
  item_key: string | null;
  tokens: number;
  /** Hash of the writer's input: the same id with another hash is a conflict. */
  input_hash: string;
}

/** The values a backend stores in its own way, decoded. */
export interface StoredValues {
  tags: string[];
  createdMs: number;
  expiresMs: number | null;
  consumedBy: ContextItem['consumedBy'];
  runtimeOptions: ContextItem['runtimeOptions'];
  redactions: ContextItem['redactions'];
}

const iso = (ms: number): string => new Date(ms).toISOString();

export function itemFromRow(row: ItemColumns, values: StoredValues): ContextItem {
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
