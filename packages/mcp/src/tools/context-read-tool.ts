import type { ListParams } from '@ctxbus/client';
import { CtxbusError, MAX_LIST_LIMIT } from '@ctxbus/core/contract';
import { z } from 'zod';
import { itemViewSchema, LIST_CONTENT_CHARS, renderItems, toItemView } from '../item-view.js';
import type { ToolContext } from './tool-context.js';
import { defineTool } from './tool-definition.js';
import {
  asList,
  dateTimeInput,
  itemIdInput,
  minUrgencyInput,
  scopeFilterInput,
  scopeKeyInput,
  tagsFilterInput,
  typeFilterInput,
  writerInput,
} from './tool-inputs.js';

export const CONTEXT_READ_TOOL = 'context_read';

const MAX_READ_LIMIT = Math.min(50, MAX_LIST_LIMIT);

export const contextReadInput = z.object({
  id: itemIdInput
    .optional()
    .describe(
      'Read this one item in full (other filters are ignored). Ids appear in every listing.',
    ),
  query: z
    .string()
    .trim()
    .min(1)
    .max(2_000)
    .optional()
    .describe(
      "The seed's context_read(scope, query): the items that best match these words, best first (a search with the same type, scope, scopeKey and tags; context_search is the full form).",
    ),
  type: typeFilterInput.optional(),
  scope: scopeFilterInput.optional(),
  scopeKey: scopeKeyInput.optional(),
  tags: tagsFilterInput.optional(),
  minUrgency: minUrgencyInput.optional(),
  runtime: writerInput.optional(),
  since: z
    .union([
      z.number().int().nonnegative(),
      // A seq a model sends as text ("1234"), as it often does: the same number.
      z
        .string()
        .regex(/^\d{1,15}$/)
        .transform(Number),
      dateTimeInput,
    ])
    .optional()
    .describe(
      'Only items written after this: a seq number (the highest `seq` you have seen) or an ISO date-time such as "2026-11-21T09:00:00Z".',
    ),
  unconsumed: z
    .boolean()
    .optional()
    .describe('Only items no runtime has marked consumed (open requests and blockers).'),
  includeSuperseded: z
    .boolean()
    .optional()
    .describe('Also return items that newer ones replaced (history). Default false.'),
  limit: z
    .number()
    .int()
    .min(1)
    .max(MAX_READ_LIMIT)
    .default(20)
    .describe(`How many items, newest first (1-${MAX_READ_LIMIT}, default 20).`),
  before: z
    .number()
    .int()
    .positive()
    .optional()
    .describe('Paging: pass the `nextBefore` of the previous call to get older items.'),
});

export const contextReadOutput = z.object({
  items: z.array(itemViewSchema),
  totalTokens: z.number().int().describe('Tokens of the returned items, for budgeting.'),
  nextBefore: z
    .number()
    .int()
    .nullable()
    .describe('Pass as `before` to get the next (older) page; null when there is none.'),
});

const DESCRIPTION = `Read the team's shared context: what other agents and runtimes (Claude Code, OpenClaw, the web UI, other agents) wrote: decisions, discoveries, task status, requests and alerts. Newest first; superseded and expired items are hidden.

Use it to catch up before starting work, to check what was decided in an area (filter by type and tags), to follow a task (scopeKey "task:<id>"), or to see what changed since you last looked (since = the highest seq you saw). Pass id to read one item in full; listings cut content at ${LIST_CONTENT_CHARS} characters.

Examples:
- {"type": "decision", "tags": ["storage"]}: decisions about storage
- {"scopeKey": "task:T-42", "limit": 10}: the latest on task T-42
- {"minUrgency": "attention", "unconsumed": true}: open requests and blockers
- {"since": 1234}: everything written after seq 1234
For a question in words use context_search; for the whole picture use context_shared; for knowledge filed under a key use memory_query.`;

function listParams(input: z.output<typeof contextReadInput>): ListParams {
  const types = asList(input.type);
  const scopes = asList(input.scope);
  return {
    limit: input.limit,
    ...(types && { type: types }),
    ...(scopes && { scope: scopes }),
    ...(input.scopeKey !== undefined && { scopeKey: input.scopeKey }),
    ...(input.tags && { tags: input.tags }),
    ...(input.minUrgency !== undefined && { minUrgency: input.minUrgency }),
    ...(input.runtime !== undefined && { runtime: input.runtime }),
    ...(input.since !== undefined && { since: input.since }),
    ...(input.unconsumed !== undefined && { unconsumed: input.unconsumed }),
    ...(input.includeSuperseded !== undefined && { includeSuperseded: input.includeSuperseded }),
    ...(input.before !== undefined && { before: input.before }),
  };
}

/** Filters a list takes and a search does not: refused beside `query`, by name. */
const LIST_ONLY = ['minUrgency', 'runtime', 'since', 'unconsumed', 'before'] as const;

/** The seed's form: `query` ranks the items as context_search does, with the same filters. */
async function readByQuery(
  context: ToolContext,
  input: z.output<typeof contextReadInput>,
  query: string,
) {
  const unsupported = LIST_ONLY.filter((name) => input[name] !== undefined);
  if (unsupported.length > 0) {
    throw new CtxbusError(
      'validation_failed',
      `query ranks by relevance and cannot be combined with ${unsupported.join(', ')}: drop query to list newest first with them, or keep query with type, scope, scopeKey, tags and limit`,
    );
  }
  const types = asList(input.type);
  const scopes = asList(input.scope);
  const response = await context.backend.search({
    query,
    limit: input.limit,
    ...(types && { type: types }),
    ...(scopes && { scope: scopes }),
    ...(input.scopeKey !== undefined && { scopeKey: input.scopeKey }),
    ...(input.tags && { tags: input.tags }),
    ...(input.includeSuperseded !== undefined && { includeSuperseded: input.includeSuperseded }),
  });
  const items = response.results.map((result) => toItemView(result.item, LIST_CONTENT_CHARS));
  const totalTokens = items.reduce((sum, item) => sum + item.tokens, 0);
  return {
    structured: { items, totalTokens, nextBefore: null },
    text:
      items.length === 0
        ? `Nothing matches "${query}".`
        : `${items.length} item(s) matching "${query}", best first:\n${renderItems(items)}`,
  };
}

export function contextReadTool(context: ToolContext) {
  return defineTool({
    name: CONTEXT_READ_TOOL,
    title: 'Read shared context',
    description: DESCRIPTION,
    input: contextReadInput,
    output: contextReadOutput,
    annotations: { readOnlyHint: true, openWorldHint: false },
    async run(input) {
      if (input.id !== undefined) {
        const item = toItemView(await context.backend.get(input.id));
        return {
          structured: { items: [item], totalTokens: item.tokens, nextBefore: null },
          text: renderItems([item], Number.POSITIVE_INFINITY),
        };
      }
      if (input.query !== undefined) return readByQuery(context, input, input.query);
      const page = await context.backend.list(listParams(input));
      const items = page.items.map((item) => toItemView(item, LIST_CONTENT_CHARS));
      const more = page.nextBefore === null ? '' : `\nOlder items: before=${page.nextBefore}.`;
      return {
        structured: { items, totalTokens: page.totalTokens, nextBefore: page.nextBefore },
        text:
          items.length === 0
            ? 'No items match.'
            : `${items.length} item(s), newest first:\n${renderItems(items)}${more}`,
      };
    },
  });
}
