import { LIMITS, MAX_LIST_LIMIT } from '@ctxbus/core/contract';
import { z } from 'zod';
import { itemViewSchema, LIST_CONTENT_CHARS, renderItems, toItemView } from '../item-view.js';
import type { ToolContext } from './tool-context.js';
import { defineTool } from './tool-definition.js';
import { asList, typeFilterInput } from './tool-inputs.js';

export const MEMORY_QUERY_TOOL = 'memory_query';

const MAX_MEMORY_LIMIT = Math.min(100, MAX_LIST_LIMIT);

export const memoryQueryInput = z.object({
  path: z
    .string()
    .max(LIMITS.keyChars + 1)
    .regex(
      /^[A-Za-z0-9][A-Za-z0-9._-]*(\/[A-Za-z0-9][A-Za-z0-9._-]*)*\/?$/,
      'a path is key segments (letters, digits, . _ -) separated by /, e.g. project/ctxbus',
    )
    .describe(
      'A key or key prefix: "project/ctxbus" returns project/ctxbus and everything under it (project/ctxbus/stack, project/ctxbus/ci/runner, ...).',
    ),
  type: typeFilterInput.optional(),
  limit: z
    .number()
    .int()
    .min(1)
    .max(MAX_MEMORY_LIMIT)
    .default(50)
    .describe(
      `Most items to return (1-${MAX_MEMORY_LIMIT}, default 50): the most recently written, sorted by key.`,
    ),
  before: z
    .number()
    .int()
    .positive()
    .optional()
    .describe('Paging: pass the `nextBefore` of the previous call for the keys written earlier.'),
});

export const memoryQueryOutput = z.object({
  items: z.array(itemViewSchema).describe('The live item of each key, sorted by key.'),
  nextBefore: z
    .number()
    .int()
    .nullable()
    .describe(
      'More keys lie under path than were returned: pass this as `before` for the next (earlier written) page; null when none.',
    ),
});

const DESCRIPTION = `Look up the team's long-lived knowledge, filed under path-like keys: conventions, setup facts, ownership, runbooks, standing decisions. Returns the current item of every key equal to or under path, sorted by key; replaced versions are hidden. Up to limit keys a call (the most recently written); nextBefore pages to the rest.

Use it to recall how things are done before doing them, and before memory_write to see what a key holds.

Examples:
- {"path": "project/ctxbus"}: project/ctxbus/stack, project/ctxbus/ci, ...
- {"path": "team/conventions", "type": "decision"}
- {"path": "runbooks/deploy"}`;

/** "2 keys (3 items)": a key can hold more than one live item (another runtime's own). */
function countLine(items: readonly { key?: string | null }[]): string {
  const keys = new Set(items.map((item) => item.key)).size;
  const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
  return items.length === keys
    ? plural(keys, 'key')
    : `${plural(keys, 'key')} (${plural(items.length, 'item')})`;
}

export function memoryQueryTool(context: ToolContext) {
  return defineTool({
    name: MEMORY_QUERY_TOOL,
    title: 'Query team memory',
    description: DESCRIPTION,
    input: memoryQueryInput,
    output: memoryQueryOutput,
    annotations: { readOnlyHint: true, openWorldHint: false },
    async run(input) {
      const keyPrefix = input.path.replace(/\/+$/, '');
      const types = asList(input.type);
      const page = await context.backend.list({
        keyPrefix,
        limit: input.limit,
        ...(types && { type: types }),
        ...(input.before !== undefined && { before: input.before }),
      });
      const items = page.items
        .map((item) => toItemView(item, LIST_CONTENT_CHARS))
        .sort((a, b) => (a.key ?? '').localeCompare(b.key ?? '') || b.seq - a.seq);
      const kinds = types ? ` of type ${types.join(' or ')}` : '';
      // Never a silent cut: more keys than the limit are said, with the call that gets them.
      const more =
        page.nextBefore === null
          ? ''
          : `\nMore keys lie under ${keyPrefix} (written earlier): call again with before=${page.nextBefore}.`;
      return {
        structured: { items, nextBefore: page.nextBefore },
        text:
          items.length === 0
            ? `Nothing${kinds} is stored under ${keyPrefix}${input.before === undefined ? '' : ' before that point'}.`
            : `${countLine(items)}${kinds} under ${keyPrefix}:\n${renderItems(items)}${more}`,
      };
    },
  });
}
