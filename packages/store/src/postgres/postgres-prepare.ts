import type { ContextItem, NewContextItem } from '@ctxbus/core';
import { CtxbusError, scopeKindOf, taskStatusOf, URGENCY_RANK } from '@ctxbus/core';
import { searchDocument } from './postgres-search.js';

// Per-item work done when a write is queued, before its group commit takes the counter lock:
// everything about the stored row that does not depend on the other writes (checks, search
// document, JSON). The lock is held by one transaction of one hub at a time, so whatever runs
// inside it limits the throughput of all of them; what is left there is the rules and a join.

/**
 * A string's body as an SQL E'' literal: backslashes and quotes doubled. Exact whatever
 * standard_conforming_strings says; U+0000 never reaches it (refused below).
 */
export function escapeLiteralBody(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/'/g, "''");
}

export function sqlLiteral(value: string): string {
  return `E'${escapeLiteralBody(value)}'`;
}

/** Columns of an inserted item row, in order. */
export const ITEM_INSERT_COLUMNS = [
  'rid',
  'supersedes',
  'superseded_by',
  'consumed',
  'consumed_by',
  'id',
  'team_id',
  'type',
  'title',
  'content',
  'summary',
  'tags',
  'source_runtime',
  'source_agent',
  'source_task',
  'source_thread',
  'scope',
  'scope_key',
  'scope_kind',
  'urgency',
  'visibility',
  'created_at',
  'expires_at',
  'item_key',
  'runtime_options',
  'redactions',
  'tokens',
  'input_hash',
  'search',
] as const;

/** Columns of a change row, in order. */
export const CHANGE_INSERT_COLUMNS = ['seq', 'kind', 'item_rid', 'team_id', 'at'] as const;

/** A queued item, ready for the rules and the insert. */
export interface PreparedItem {
  /** The item as it will be stored (text PostgreSQL cannot hold already dealt with). */
  item: NewContextItem;
  /**
   * The row's columns that no rule changes (all but rid, supersedes, superseded_by and the
   * consumption), as JSON object members already escaped for an E'' literal.
   */
  fixedColumns: string;
  /** Distinct stems of the searchable text, for the term statistics. */
  stems: string[];
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * The value with lone UTF-16 surrogates replaced by U+FFFD: PostgreSQL stores UTF-8, which
 * cannot hold them. Done before the item is returned, so what the writer gets back is what
 * later reads return.
 */
export function wellFormed<T>(value: T): T {
  if (typeof value === 'string') {
    LONE_SURROGATE.lastIndex = 0;
    return (LONE_SURROGATE.test(value) ? value.replace(LONE_SURROGATE, '\uFFFD') : value) as T;
  }
  if (Array.isArray(value)) return value.map(wellFormed) as T;
  if (typeof value === 'object' && value !== null) {
    // fromEntries defines properties: a "__proto__" key stays an ordinary key.
    return Object.fromEntries(
      Object.entries(value).map(([key, entry]) => [wellFormed(key), wellFormed(entry)]),
    ) as T;
  }
  return value;
}

/** PostgreSQL text cannot hold U+0000: say which field has one. */
function assertStorable(item: NewContextItem): void {
  const fields: [string, string | null][] = [
    ['id', item.id],
    ['title', item.title],
    ['content', item.content],
    ['summary', item.summary],
    ['source.agentId', item.source.agentId],
    ['source.taskId', item.source.taskId],
    ['source.threadId', item.source.threadId],
    ['scopeKey', item.scopeKey],
    ['key', item.key],
    ['supersedes', item.supersedes],
    ...item.relevanceTags.map((tag, index): [string, string] => [`relevanceTags[${index}]`, tag]),
  ];
  for (const [field, value] of fields) {
    if (value?.includes('\u0000')) {
      throw new CtxbusError(
        'validation_failed',
        `${field} contains a NUL character (U+0000), which PostgreSQL cannot store`,
        { details: { field } },
      );
    }
  }
}

const UNINDEXED = { vector: '', stems: [] as string[] };

/** Checks one item and computes the fixed part of its row. Throws `validation_failed`. */
export function prepareItemRow(input: NewContextItem): PreparedItem {
  assertStorable(input);
  const item = wellFormed(input);
  const tags = JSON.stringify(item.relevanceTags);
  // A task's status item is bookkeeping (the task itself is in the task store): no full-text
  // entry, so its three writes per task touch no search index or term statistics. Removal
  // reads the row's own (empty) vector, so the statistics stay exact.
  const document =
    taskStatusOf(item) === null
      ? searchDocument({ title: item.title, content: item.content, summary: item.summary, tags })
      : UNINDEXED;
  const kind = scopeKindOf(item.scopeKey);
  const fixed = JSON.stringify({
    id: item.id,
    team_id: item.teamId,
    type: item.type,
    title: item.title,
    content: item.content,
    summary: item.summary,
    tags: item.relevanceTags,
    source_runtime: item.source.runtime,
    source_agent: item.source.agentId,
    source_task: item.source.taskId,
    source_thread: item.source.threadId,
    scope: item.scope,
    scope_key: item.scopeKey,
    scope_kind: kind === 'none' ? null : kind,
    urgency: URGENCY_RANK[item.urgency],
    visibility: item.visibility,
    created_at: item.createdAt,
    expires_at: item.expiresAt,
    item_key: item.key,
    runtime_options: item.runtimeOptions,
    redactions: item.redactions,
    tokens: item.tokens,
    input_hash: item.inputHash,
    search: document.vector,
  });
  return {
    item,
    fixedColumns: escapeLiteralBody(fixed.slice(1, -1)),
    stems: document.stems,
  };
}

/** The full row of a new item (escaped JSON object): the rules' columns, then the fixed ones. */
export function itemRowJson(prepared: PreparedItem, stored: ContextItem): string {
  const decided = JSON.stringify({
    rid: stored.seq,
    supersedes: stored.supersedes,
    superseded_by: stored.supersededBy,
    consumed: stored.consumed,
    consumed_by: stored.consumedBy,
  });
  return `${escapeLiteralBody(decided.slice(0, -1))},${prepared.fixedColumns}}`;
}
