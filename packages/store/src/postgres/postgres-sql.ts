import type { ContextItem, ItemFilter, Viewer } from '@ctxbus/core';
import { URGENCY_RANK } from '@ctxbus/core';
import type { CustomTypesConfig } from 'pg';
import type { ItemColumns } from '../rows/item-row.js';
import { itemFromRow } from '../rows/item-row.js';

/** One item row as the queries below select it (`ITEM_COLUMNS`), parsed by `ROW_TYPES`. */
export interface ItemRow extends ItemColumns {
  tags: string[];
  created_ms: number;
  expires_ms: number | null;
  runtime_options: ContextItem['runtimeOptions'];
  redactions: ContextItem['redactions'];
  consumed_by: { runtime: string; at: string }[];
}

/**
 * The item columns for table alias `i`. Times come back as epoch milliseconds and tags as
 * JSON, so parsing does not depend on the session's DateStyle or on type parsers a pool's
 * owner may have installed globally.
 */
export const ITEM_COLUMNS = `i.rid, i.id, i.team_id, i.type, i.title, i.content, i.summary,
  to_json(i.tags) AS tags, i.source_runtime, i.source_agent, i.source_task, i.source_thread,
  i.scope, i.scope_key, i.urgency, i.visibility,
  (extract(epoch FROM i.created_at) * 1000)::int8 AS created_ms,
  (extract(epoch FROM i.expires_at) * 1000)::int8 AS expires_ms,
  i.supersedes, i.superseded_by, i.item_key, i.runtime_options, i.redactions, i.tokens,
  i.input_hash, i.consumed_by`;

const OID = {
  bool: 16,
  int8: 20,
  float4Array: 1021,
  int2: 21,
  int4: 23,
  json: 114,
  float4: 700,
  float8: 701,
  jsonb: 3802,
} as const;

const identity = (value: string) => value;
const toNumber = (value: string) => Number(value);
const toJson = (value: string): unknown => JSON.parse(value);

/**
 * Type parsers for every query of the store, fixed here rather than taken from `pg.types`
 * (which an application may change globally, e.g. int8 to BigInt).
 */
/** A real[] in text form ("{0.25,-1.5}"; vectors have no NULLs) as a Float32Array. */
function toFloat32Array(value: string): Float32Array {
  const inner = value.slice(1, -1);
  if (inner === '') return new Float32Array(0);
  const parts = inner.split(',');
  const vector = new Float32Array(parts.length);
  for (let index = 0; index < parts.length; index++) vector[index] = Number(parts[index]);
  return vector;
}

export const ROW_TYPES: CustomTypesConfig = {
  getTypeParser: ((oid: number) => {
    switch (oid) {
      case OID.bool:
        return (value: string) => value === 't';
      case OID.int2:
      case OID.int4:
      case OID.int8:
      case OID.float4:
      case OID.float8:
        return toNumber;
      case OID.json:
      case OID.jsonb:
        return toJson;
      case OID.float4Array:
        return toFloat32Array;
      default:
        return identity;
    }
  }) as CustomTypesConfig['getTypeParser'],
};

const iso = (ms: number): string => new Date(ms).toISOString();

/** The item a row stores (times selected as epoch milliseconds, JSON parsed by ROW_TYPES). */
export function rowToItem(row: ItemRow): ContextItem {
  return itemFromRow(row, {
    tags: row.tags,
    createdMs: row.created_ms,
    expiresMs: row.expires_ms,
    consumedBy: row.consumed_by.map((entry) => ({ runtime: entry.runtime, at: entry.at })),
    runtimeOptions: row.runtime_options,
    redactions: row.redactions,
  });
}

/** Positional parameters for one statement: `add` returns the placeholder (`$3`). */
export class SqlParams {
  readonly values: unknown[] = [];

  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

/** The smallest string greater than every string starting with `prefix` (byte order). */
function prefixUpperBound(prefix: string): string {
  return `${prefix}\u{10FFFF}`;
}

const INDEXED_SCOPE_KINDS = new Set(['task', 'thread', 'user', 'team']);

/**
 * WHERE clause (for table alias `i`) for a viewer and a filter: core's `itemMatches`, plus
 * `latestPerScopeKey`'s "has a scope key" (its withoutTags applies after picking, in the
 * caller). Always bounded by team, visibility and expiry.
 */
export function filterSql(viewer: Viewer, filter: ItemFilter, nowMs: number, p: SqlParams): string {
  const clauses = [
    `i.team_id = ${p.add(viewer.teamId)}`,
    `(i.visibility = 'team' OR i.source_runtime = ${p.add(viewer.runtime)})`,
    `(i.expires_at IS NULL OR i.expires_at > ${p.add(iso(nowMs))}::timestamptz)`,
  ];
  if (!filter.includeSuperseded) clauses.push('i.superseded_by IS NULL');
  if (filter.scopes?.length) clauses.push(`i.scope = ANY(${p.add(filter.scopes)}::text[])`);
  if (filter.scopeKey !== undefined) clauses.push(`i.scope_key = ${p.add(filter.scopeKey)}`);
  if (filter.scopeKeyPrefix !== undefined) {
    const prefix = filter.scopeKeyPrefix;
    const kind = prefix.endsWith(':') ? prefix.slice(0, -1) : null;
    if (kind !== null && INDEXED_SCOPE_KINDS.has(kind)) {
      clauses.push(`i.scope_kind = ${p.add(kind)}`);
    } else {
      // A range the index can use, then the exact rule.
      const value = p.add(prefix);
      clauses.push(
        `i.scope_key >= ${value} AND i.scope_key < ${p.add(prefixUpperBound(prefix))} AND starts_with(i.scope_key, ${value})`,
      );
    }
  }
  if (filter.types?.length) clauses.push(`i.type = ANY(${p.add(filter.types)}::text[])`);
  if (filter.tags?.length) {
    clauses.push(`i.tags && ${p.add(filter.tags.map((tag) => tag.toLowerCase()))}::text[]`);
  }
  if (filter.urgencies?.length) {
    const ranks = filter.urgencies.map((urgency) => URGENCY_RANK[urgency]);
    clauses.push(`i.urgency = ANY(${p.add(ranks)}::smallint[])`);
  }
  if (filter.minUrgency !== undefined && filter.minUrgency !== 'background') {
    clauses.push(`i.urgency >= ${p.add(URGENCY_RANK[filter.minUrgency])}`);
  }
  if (filter.sourceRuntime !== undefined) {
    clauses.push(`i.source_runtime = ${p.add(filter.sourceRuntime)}`);
  }
  if (filter.sinceSeq !== undefined) clauses.push(`i.rid > ${p.add(filter.sinceSeq)}`);
  if (filter.beforeSeq !== undefined) clauses.push(`i.rid < ${p.add(filter.beforeSeq)}`);
  if (filter.createdAfter !== undefined) {
    // Compared in milliseconds, as core does (Date.parse).
    clauses.push(`i.created_at > ${p.add(iso(Date.parse(filter.createdAfter)))}::timestamptz`);
  }
  if (filter.key !== undefined) clauses.push(`i.item_key = ${p.add(filter.key)}`);
  if (filter.keyPrefix !== undefined) {
    // The key itself or a key under it; the range lets the key index help.
    const prefix = filter.keyPrefix.replace(/\/+$/, '');
    const exact = p.add(prefix);
    const under = p.add(`${prefix}/`);
    clauses.push(
      `i.item_key >= ${exact} AND i.item_key < ${p.add(prefixUpperBound(`${prefix}/`))} AND (i.item_key = ${exact} OR starts_with(i.item_key, ${under}))`,
    );
  }
  if (filter.hasKey === true) clauses.push('i.item_key IS NOT NULL');
  if (filter.hasKey === false) clauses.push('i.item_key IS NULL');
  if (filter.unconsumed) clauses.push('NOT i.consumed');
  if (filter.scopeKinds?.length) {
    const kinds = filter.scopeKinds.filter((kind) => kind !== 'none');
    const alternatives: string[] = [];
    if (kinds.length > 0) alternatives.push(`i.scope_kind = ANY(${p.add(kinds)}::text[])`);
    if (filter.scopeKinds.includes('none')) alternatives.push('i.scope_kind IS NULL');
    clauses.push(`(${alternatives.join(' OR ')})`);
  }
  if (filter.latestPerScopeKey) clauses.push('i.scope_key IS NOT NULL');
  else if (filter.withoutTags?.length) clauses.push(withoutTagsSql('i', filter.withoutTags, p));
  return clauses.join(' AND ');
}

/** Rows of alias `alias` carrying none of `tags` (compared lowercased, as core does). */
export function withoutTagsSql(alias: string, tags: readonly string[], p: SqlParams): string {
  return `NOT (${alias}.tags && ${p.add(tags.map((tag) => tag.toLowerCase()))}::text[])`;
}
