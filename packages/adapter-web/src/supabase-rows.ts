import type { ContextItem } from '@ctxbus/core/contract';
import { contextItemSchema, itemFromColumns } from '@ctxbus/core/contract';
import { z } from 'zod';

// The items table as Supabase serves it (the Data API's JSON, Realtime's `record`): the store's
// columns in snake_case, mapped by core's `itemFromColumns` as the store's backends do, urgency as
// its index in URGENCIES, times as PostgreSQL's JSON timestamps.

/** The columns the Data API is asked for: everything an item needs, not the search index. */
export const ITEM_ROW_COLUMNS = [
  'rid',
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
  'urgency',
  'visibility',
  'created_at',
  'expires_at',
  'supersedes',
  'superseded_by',
  'item_key',
  'runtime_options',
  'redactions',
  'tokens',
  'consumed_by',
].join(',');

/** A timestamp as milliseconds since the epoch. */
const epochMs = (label: string) =>
  z.string().transform((value, ctx) => {
    const ms = Date.parse(value);
    if (Number.isNaN(ms)) {
      ctx.addIssue({ code: 'custom', message: `${label} is not a timestamp: ${value}` });
      return z.NEVER;
    }
    return ms;
  });

// bigint columns arrive as JSON numbers (int8 within 2^53); Realtime's client also turns
// numeric text into numbers, so both are taken.
const int = z.union([z.int(), z.string().regex(/^\d+$/).transform(Number)]);
const nullableText = z.string().nullable();

/** One items row; unknown columns (`search`, `input_hash`, ...) are ignored. */
export const itemRowSchema = z.object({
  rid: int,
  id: z.string(),
  team_id: z.string(),
  type: z.string(),
  title: z.string(),
  content: z.string(),
  summary: z.string(),
  tags: z.array(z.string()),
  source_runtime: z.string(),
  source_agent: nullableText,
  source_task: nullableText,
  source_thread: nullableText,
  scope: z.string(),
  scope_key: nullableText,
  urgency: int,
  visibility: z.string(),
  created_at: epochMs('created_at'),
  expires_at: epochMs('expires_at').nullable(),
  supersedes: nullableText,
  superseded_by: nullableText,
  item_key: nullableText,
  runtime_options: z.unknown(),
  redactions: z.unknown(),
  tokens: int,
  consumed_by: z.array(z.object({ runtime: z.string(), at: z.string() })),
});

export type ItemRow = z.infer<typeof itemRowSchema>;

/** An items row as the contract's `ContextItem` (checked by its schema); throws a ZodError. */
export function itemFromSupabaseRow(value: unknown): ContextItem {
  const row = itemRowSchema.parse(value);
  return contextItemSchema.parse(
    itemFromColumns(row, {
      tags: row.tags,
      createdMs: row.created_at,
      expiresMs: row.expires_at,
      consumedBy: row.consumed_by,
      runtimeOptions: row.runtime_options as ContextItem['runtimeOptions'],
      redactions: row.redactions as ContextItem['redactions'],
    }),
  );
}
