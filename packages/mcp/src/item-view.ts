import type { ContextItem } from '@ctxbus/core/contract';
import {
  contextTypeSchema,
  inertMarkdown,
  scopeSchema,
  sliceText,
  urgencySchema,
  visibilitySchema,
} from '@ctxbus/core/contract';
import { z } from 'zod';

/**
 * Longest content a listing returns per item. Claude Code hands the model the structured
 * result (as JSON) and caps a tool result at 25k tokens, so whole items in a list could crowd
 * out everything else; `context_read` with an `id` returns one item in full.
 */
export const LIST_CONTENT_CHARS = 1_000;

/**
 * An item as the tools return it: the fields a model uses, flat, with `tags` named as on input.
 * Team id, runtime options, redaction records and per-runtime consumption stay out.
 */
export const itemViewSchema = z.object({
  id: z.string(),
  seq: z.number().int(),
  type: contextTypeSchema,
  title: z.string(),
  summary: z.string(),
  content: z.string(),
  contentTruncated: z
    .boolean()
    .optional()
    .describe('True when content was cut for a listing; read the item by id for all of it.'),
  scope: scopeSchema,
  scopeKey: z.string().nullable(),
  key: z.string().nullable(),
  tags: z.array(z.string()),
  urgency: urgencySchema,
  visibility: visibilitySchema,
  runtime: z.string().describe('The runtime that wrote the item.'),
  agentId: z.string().nullable(),
  taskId: z.string().nullable(),
  threadId: z.string().nullable(),
  createdAt: z.string(),
  expiresAt: z.string().nullable(),
  supersedes: z.string().nullable(),
  supersededBy: z.string().nullable(),
  consumed: z.boolean(),
  tokens: z.number().int(),
});

export type ItemView = z.infer<typeof itemViewSchema>;

export function toItemView(
  item: ContextItem,
  maxContentChars = Number.POSITIVE_INFINITY,
): ItemView {
  const truncated = item.content.length > maxContentChars;
  return {
    id: item.id,
    seq: item.seq,
    type: item.type,
    title: item.title,
    summary: item.summary,
    content: truncated ? `${sliceText(item.content, maxContentChars).trimEnd()}…` : item.content,
    ...(truncated && { contentTruncated: true }),
    scope: item.scope,
    scopeKey: item.scopeKey,
    key: item.key,
    tags: item.relevanceTags,
    urgency: item.urgency,
    visibility: item.visibility,
    runtime: item.source.runtime,
    agentId: item.source.agentId,
    taskId: item.source.taskId,
    threadId: item.source.threadId,
    createdAt: item.createdAt,
    expiresAt: item.expiresAt,
    supersedes: item.supersedes,
    supersededBy: item.supersededBy,
    consumed: item.consumed,
    tokens: item.tokens,
  };
}

function minute(iso: string): string {
  return iso.slice(0, 16).replace('T', ' ');
}

/** `[decision] Title (key project/x, task:T-1, #storage, blocking) by claude-code 2026-11-21 06:45, id …` */
export function itemHeadline(item: ItemView): string {
  const facts = [
    item.key && `key ${item.key}`,
    item.scopeKey,
    item.tags.length > 0 && item.tags.map((tag) => `#${tag}`).join(' '),
    item.urgency !== 'background' && item.urgency,
    item.visibility === 'private' && 'private',
    item.supersededBy && `superseded by ${item.supersededBy}`,
  ].filter((fact): fact is string => typeof fact === 'string' && fact.length > 0);
  const details = facts.length > 0 ? ` (${facts.join(', ')})` : '';
  // The title on one line: a line break in it would put the writer's name under a fake line.
  const title = item.title.replace(/\s*[\r\n\u0085\u2028\u2029]\s*/g, ' ');
  return `[${item.type}] ${title}${details} by ${item.runtime} ${minute(item.createdAt)}, id ${item.id}`;
}

/** Content (or the summary when there is none) indented under a headline, capped for text. */
export function itemBody(item: ItemView, maxChars: number): string {
  const body = item.content.trim() || (item.summary !== item.title ? item.summary : '');
  if (!body) return '';
  const cut = body.length > maxChars ? `${sliceText(body, maxChars).trimEnd()}…` : body;
  // Inert as the bundle's entries are: no heading, fence or tag of its own.
  return inertMarkdown(cut)
    .split('\n')
    .map((line) => `  ${line}`)
    .join('\n');
}

/** A Markdown-ish list of items: one headline each, content indented below. */
export function renderItems(items: readonly ItemView[], maxBodyChars = 600): string {
  return items
    .map((item) => {
      const body = itemBody(item, maxBodyChars);
      return body ? `- ${itemHeadline(item)}\n${body}` : `- ${itemHeadline(item)}`;
    })
    .join('\n');
}
