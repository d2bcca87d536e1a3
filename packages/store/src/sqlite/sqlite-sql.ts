import type { SQLInputValue } from 'node:sqlite';
import type { ItemFilter, Viewer } from '@ctxbus/core';
import { URGENCY_RANK } from '@ctxbus/core';

// The SQL every read of the embedded store shares: a viewer's and a filter's WHERE clause.

/** The smallest string greater than every string starting with `prefix`. */
function prefixUpperBound(prefix: string): string {
  return `${prefix}\u{10FFFF}`;
}

const SCOPE_KINDS = new Set(['task', 'thread', 'user', 'team']);

export interface Sql {
  where: string;
  params: SQLInputValue[];
}

/** WHERE clause (for table alias `i`) for a viewer and a filter; always bounded by team. */
export function filterSql(viewer: Viewer, filter: ItemFilter, nowMs: number): Sql {
  const clauses = [
    'i.team_id = ?',
    "(i.visibility = 'team' OR i.source_runtime = ?)",
    '(i.expires_at IS NULL OR i.expires_at > ?)',
  ];
  const params: SQLInputValue[] = [viewer.teamId, viewer.runtime, nowMs];
  const inList = (column: string, values: readonly SQLInputValue[]) => {
    clauses.push(`${column} IN (${values.map(() => '?').join(', ')})`);
    params.push(...values);
  };
  if (!filter.includeSuperseded) clauses.push('i.superseded_by IS NULL');
  if (filter.scopes?.length) inList('i.scope', filter.scopes);
  if (filter.scopeKey !== undefined) {
    clauses.push('i.scope_key = ?');
    params.push(filter.scopeKey);
  }
  if (filter.scopeKeyPrefix !== undefined) {
    const kind = filter.scopeKeyPrefix.endsWith(':') ? filter.scopeKeyPrefix.slice(0, -1) : null;
    if (kind !== null && SCOPE_KINDS.has(kind)) {
      clauses.push('i.scope_kind = ?');
      params.push(kind);
    } else {
      clauses.push('i.scope_key >= ? AND i.scope_key < ?');
      params.push(filter.scopeKeyPrefix, prefixUpperBound(filter.scopeKeyPrefix));
    }
  }
  if (filter.types?.length) inList('i.type', filter.types);
  if (filter.tags?.length) {
    clauses.push(
      `i.rid IN (SELECT rid FROM item_tags WHERE tag IN (${filter.tags.map(() => '?').join(', ')}))`,
    );
    params.push(...filter.tags.map((tag) => tag.toLowerCase()));
  }
  if (filter.urgencies?.length)
    inList(
      'i.urgency',
      filter.urgencies.map((u) => URGENCY_RANK[u]),
    );
  if (filter.minUrgency !== undefined && filter.minUrgency !== 'background') {
    clauses.push('i.urgency >= ?');
    params.push(URGENCY_RANK[filter.minUrgency]);
  }
  if (filter.sourceRuntime !== undefined) {
    clauses.push('i.source_runtime = ?');
    params.push(filter.sourceRuntime);
  }
  if (filter.sinceSeq !== undefined) {
    clauses.push('i.rid > ?');
    params.push(filter.sinceSeq);
  }
  if (filter.beforeSeq !== undefined) {
    clauses.push('i.rid < ?');
    params.push(filter.beforeSeq);
  }
  if (filter.createdAfter !== undefined) {
    clauses.push('i.created_at > ?');
    params.push(Date.parse(filter.createdAfter));
  }
  if (filter.key !== undefined) {
    clauses.push('i.item_key = ?');
    params.push(filter.key);
  }
  if (filter.keyPrefix !== undefined) {
    // A range the key index can use, then the exact rule: the key itself or a key under it.
    const prefix = filter.keyPrefix.replace(/\/+$/, '');
    clauses.push(
      'i.item_key IS NOT NULL AND i.item_key >= ? AND i.item_key < ? AND (i.item_key = ? OR substr(i.item_key, 1, ?) = ?)',
    );
    params.push(prefix, prefixUpperBound(`${prefix}/`), prefix, prefix.length + 1, `${prefix}/`);
  }
  if (filter.hasKey === true) clauses.push('i.item_key IS NOT NULL');
  if (filter.hasKey === false) clauses.push('i.item_key IS NULL');
  if (filter.unconsumed) clauses.push('i.consumed = 0');
  if (filter.scopeKinds?.length) {
    const kinds = filter.scopeKinds.filter((kind) => kind !== 'none');
    const alternatives: string[] = [];
    if (kinds.length > 0) {
      alternatives.push(`i.scope_kind IN (${kinds.map(() => '?').join(', ')})`);
      params.push(...kinds);
    }
    if (filter.scopeKinds.includes('none')) alternatives.push('i.scope_kind IS NULL');
    clauses.push(`(${alternatives.join(' OR ')})`);
  }
  if (filter.latestPerScopeKey) clauses.push('i.scope_key IS NOT NULL');
  else if (filter.withoutTags?.length) {
    const { sql, values } = withoutTagsSql('i.rid', filter.withoutTags);
    clauses.push(sql);
    params.push(...values);
  }
  return { where: clauses.join(' AND '), params };
}

export function withoutTagsSql(
  column: string,
  tags: readonly string[],
): { sql: string; values: string[] } {
  return {
    sql: `${column} NOT IN (SELECT rid FROM item_tags WHERE tag IN (${tags.map(() => '?').join(', ')}))`,
    values: tags.map((tag) => tag.toLowerCase()),
  };
}
