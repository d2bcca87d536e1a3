import type { ContextItem, Urgency } from '@ctxbus/core';
import { URGENCIES } from '@ctxbus/core';

// The items table's row, and the item it stores (shared by the store and its sweeper).

export interface ItemRow {
  rid: number;
  id: string;
  team_id: string;
  type: string;
  title: string;
  content: string;
  summary: string;
  tags: string;
  source_runtime: string;
  source_agent: string | null;
  source_task: string | null;
  source_thread: string | null;
  scope: string;
  scope_key: string | null;
  urgency: number;
  visibility: string;
  created_at: number;
  expires_at: number | null;
  supersedes: string | null;
  superseded_by: string | null;
  item_key: string | null;
  runtime_options: string;
  redactions: string;
  tokens: number;
  input_hash: string;
  consumed: number;
  consumed_by: string;
}

const iso = (ms: number): string => new Date(ms).toISOString();

export function rowToItem(row: ItemRow): ContextItem {
  const consumedBy = JSON.parse(row.consumed_by) as ContextItem['consumedBy'];
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
    relevanceTags: JSON.parse(row.tags) as string[],
    urgency: URGENCIES[row.urgency] as Urgency,
    visibility: row.visibility as ContextItem['visibility'],
    createdAt: iso(row.created_at),
    expiresAt: row.expires_at === null ? null : iso(row.expires_at),
    supersedes: row.supersedes,
    supersededBy: row.superseded_by,
    key: row.item_key,
    consumed: consumedBy.length > 0,
    consumedBy,
    runtimeOptions: JSON.parse(row.runtime_options) as ContextItem['runtimeOptions'],
    redactions: JSON.parse(row.redactions) as ContextItem['redactions'],
    tokens: row.tokens,
  };
}
