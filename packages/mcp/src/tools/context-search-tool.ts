import type { SearchRequest } from '@ctxbus/core/contract';
import { CtxbusError, sliceText } from '@ctxbus/core/contract';
import { z } from 'zod';
import { itemHeadline, itemViewSchema, LIST_CONTENT_CHARS, toItemView } from '../item-view.js';
import type { ToolContext } from './tool-context.js';
import { defineTool } from './tool-definition.js';
import {
  asList,
  scopeFilterInput,
  scopeKeyInput,
  tagsFilterInput,
  typeFilterInput,
  urgencyFilterInput,
} from './tool-inputs.js';

export const CONTEXT_SEARCH_TOOL = 'context_search';

/**
 * The filters a search takes, also as the seed's `filters` object: seed 000 filters by scope,
 * relevance tags and urgency, named as its items name them (`relevanceTags`, `urgency`).
 */
const searchFilters = {
  type: typeFilterInput.optional(),
  scope: scopeFilterInput.optional(),
  scopeKey: scopeKeyInput.optional(),
  tags: tagsFilterInput.optional(),
  relevanceTags: tagsFilterInput.optional().describe("Seed 000's name for tags."),
  urgency: urgencyFilterInput.optional(),
  includeSuperseded: z
    .boolean()
    .optional()
    .describe('Also search items that newer ones replaced. Default false.'),
};
const FILTER_NAMES = Object.keys(searchFilters).join(', ');

/** What the hub searches of a query (its own limit). */
const SEARCH_QUERY_CHARS = 2_000;
/** What the tool takes, to cut: an agent may paste a whole error log as its question. */
const MAX_PASTED_QUERY_CHARS = 100_000;

export const contextSearchInput = z.object({
  query: z
    .string()
    .trim()
    .min(1)
    .max(MAX_PASTED_QUERY_CHARS)
    .describe(
      `What you are looking for, in words: a plain question works, e.g. "which database did we choose?" or "staging TLS error". Its first ${SEARCH_QUERY_CHARS.toLocaleString('en-US')} characters are searched (a pasted log is cut, not refused).`,
    ),
  ...searchFilters,
  limit: z
    .number()
    .int()
    .min(1)
    .max(50)
    .default(10)
    .describe('How many results, best first (1-50, default 10).'),
  filters: z
    .strictObject(searchFilters, {
      // A filter no form takes is refused, naming the ones there are (never dropped).
      error: (issue) =>
        issue.code === 'unrecognized_keys'
          ? `takes no ${issue.keys.map((key) => JSON.stringify(key)).join(', ')}; the filters are ${FILTER_NAMES}`
          : undefined,
    })
    .optional()
    .describe(
      `The seed's context_search(query, filters): the same filters (${FILTER_NAMES}) as one object; each may be given here or at the top, not both.`,
    ),
});

export const contextSearchOutput = z.object({
  results: z.array(
    z.object({
      item: itemViewSchema,
      score: z.number().describe('Higher is more relevant; comparable within one response.'),
      highlight: z.string().describe('The best-matching passage, matches wrapped in **.'),
    }),
  ),
});

const DESCRIPTION = `Search the team's shared context by meaning: ranked full-text search over titles and content (stop words dropped, neighbouring turns of a conversation thread count too). Plain questions work.

Use it before deciding something (was it decided already?), when the user mentions something you have no context for, or to find who reported a problem. Narrow with type, scope, scopeKey, tags or urgency.

Examples:
- {"query": "which database did we choose?", "type": "decision"}
- {"query": "flaky integration tests", "tags": ["ci"]}
- {"query": "rate limit", "scopeKey": "task:T-42"}
- {"query": "deploy", "filters": {"urgency": ["attention", "blocking"]}}
Results carry each item (content cut at ${LIST_CONTENT_CHARS} characters) and the matching passage; context_read with an id gives an item in full.`;

/** The top-level filters with the seed's `filters` object merged in (one place per filter). */
function mergedFilters(input: z.output<typeof contextSearchInput>) {
  const { filters, ...top } = input;
  if (!filters) return top;
  const twice = Object.keys(filters).filter(
    (name) => top[name as keyof typeof filters] !== undefined,
  );
  if (twice.length > 0) {
    throw new CtxbusError(
      'validation_failed',
      `${twice.join(', ')} given both at the top and in filters: give each once`,
    );
  }
  return { ...top, ...filters };
}

/**
 * `tags` or seed 000's `relevanceTags`: either, or both when they agree. Two different lists are
 * refused rather than one silently dropped (as context_write refuses them).
 */
function tagsOf(input: ReturnType<typeof mergedFilters>): string[] | undefined {
  const { tags, relevanceTags } = input;
  if (tags && relevanceTags && JSON.stringify(tags) !== JSON.stringify(relevanceTags)) {
    throw new CtxbusError(
      'validation_failed',
      "tags and relevanceTags name the same filter (relevanceTags is seed 000's name): give one, or the same list in both",
    );
  }
  return tags ?? relevanceTags;
}

function searchRequest(raw: z.output<typeof contextSearchInput>): SearchRequest {
  const input = mergedFilters(raw);
  const types = asList(input.type);
  const scopes = asList(input.scope);
  const urgencies = asList(input.urgency);
  const tags = tagsOf(input);
  return {
    query: sliceText(input.query, SEARCH_QUERY_CHARS).trim(),
    limit: input.limit,
    ...(types && { type: types }),
    ...(scopes && { scope: scopes }),
    ...(input.scopeKey !== undefined && { scopeKey: input.scopeKey }),
    ...(tags && { tags }),
    ...(urgencies && { urgency: urgencies }),
    ...(input.includeSuperseded !== undefined && { includeSuperseded: input.includeSuperseded }),
  };
}

export function contextSearchTool(context: ToolContext) {
  return defineTool({
    name: CONTEXT_SEARCH_TOOL,
    title: 'Search shared context',
    description: DESCRIPTION,
    input: contextSearchInput,
    output: contextSearchOutput,
    annotations: { readOnlyHint: true, openWorldHint: false },
    async run(input) {
      const response = await context.backend.search(searchRequest(input));
      const results = response.results.map((result) => ({
        item: toItemView(result.item, LIST_CONTENT_CHARS),
        score: result.score,
        highlight: result.highlight,
      }));
      const lines = results.map(
        (result) => `- ${itemHeadline(result.item)}\n  ${result.highlight.replace(/\s+/g, ' ')}`,
      );
      const cut =
        input.query.length > SEARCH_QUERY_CHARS
          ? ` (the query was cut to its first ${SEARCH_QUERY_CHARS.toLocaleString('en-US')} of ${input.query.length.toLocaleString('en-US')} characters)`
          : '';
      const shown = input.query.length > 200 ? `${sliceText(input.query, 200)}…` : input.query;
      return {
        structured: { results },
        text:
          results.length === 0
            ? `Nothing matches "${shown}"${cut}.`
            : `${results.length} result(s), best first${cut}:\n${lines.join('\n')}`,
      };
    },
  });
}
