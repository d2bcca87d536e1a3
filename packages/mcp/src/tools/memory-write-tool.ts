import { CtxbusError, contextTypeSchema, memoryKeySchema } from '@ctxbus/core/contract';
import { z } from 'zod';
import { itemHeadline, itemViewSchema, toItemView } from '../item-view.js';
import { itemBodyInput } from './context-write-tool.js';
import type { ToolContext } from './tool-context.js';
import { defineTool } from './tool-definition.js';

export const MEMORY_WRITE_TOOL = 'memory_write';

export const memoryWriteInput = z.object({
  key: memoryKeySchema.describe(
    'Where the knowledge lives: segments from general to specific, separated by /, e.g. "project/ctxbus/stack", "team/conventions/commits", "runbooks/release".',
  ),
  ...itemBodyInput,
  type: contextTypeSchema
    .default('discovery')
    .describe('"discovery" (default) for facts, "decision" for standing choices.'),
});

export const memoryWriteOutput = z.object({
  item: itemViewSchema,
  superseded: z
    .string()
    .nullable()
    .describe('Id of the item that held the key before, now replaced; null for a new key.'),
});

const DESCRIPTION = `Store or update long-lived team knowledge under a path-like key. If the key already holds an item, the new one supersedes it: readers see only the new version, the old one stays in history. Use it for facts that stay true until changed: the stack, conventions, how to deploy, who owns what, standing decisions. The title is the fact itself.

Examples:
- {"key": "project/ctxbus/stack", "title": "Stack: TypeScript, pnpm, turbo, tsup, vitest, Biome", "tags": ["stack"]}
- {"key": "team/conventions/commits", "type": "decision", "title": "Commit subjects are imperative, under 72 characters"}
- {"key": "runbooks/release", "title": "Release: tag vX.Y.Z on main, CI publishes", "content": "1. ...\\n2. ..."}
Check the key first with memory_query. For events and progress (not knowledge) use context_write.`;

export function memoryWriteTool(context: ToolContext) {
  return defineTool({
    name: MEMORY_WRITE_TOOL,
    title: 'Write team memory',
    description: DESCRIPTION,
    input: memoryWriteInput,
    output: memoryWriteOutput,
    annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: false },
    // Seed 000's memory_write(item): {"item": {...}} works as the fields themselves.
    wrappedAs: 'item',
    async run(input) {
      const written = await context.backend.write({
        type: input.type,
        key: input.key,
        title: input.title,
        ...(input.content !== undefined && { content: input.content }),
        ...(input.summary !== undefined && { summary: input.summary }),
        ...(input.tags !== undefined && { relevanceTags: input.tags }),
        ...(input.visibility !== undefined && { visibility: input.visibility }),
      });
      const stored = written.items[0];
      if (!stored) {
        throw new CtxbusError('internal', 'the hub stored nothing and reported no error');
      }
      const item = toItemView(stored);
      return {
        structured: { item, superseded: item.supersedes },
        text: item.supersedes
          ? `Updated ${input.key} (supersedes ${item.supersedes}): ${itemHeadline(item)}`
          : `Stored ${input.key}: ${itemHeadline(item)}`,
      };
    },
  });
}
