import type { SharedContextResponse } from '@ctxbus/core/contract';
import { MAX_TOKEN_BUDGET } from '@ctxbus/core/contract';
import { z } from 'zod';
import type { ToolContext } from './tool-context.js';
import { defineTool } from './tool-definition.js';

export const CONTEXT_SHARED_TOOL = 'context_shared';

export const contextSharedInput = z.object({
  tokenBudget: z
    .number()
    .int()
    .min(100)
    .max(MAX_TOKEN_BUDGET)
    .optional()
    .describe(
      "Most tokens the bundle may take (default: your runtime's, 4,000 for Claude Code). Lower it when context is tight.",
    ),
});

export const contextSharedOutput = z.object({
  runtime: z.string().describe('The runtime the bundle is formatted for.'),
  format: z.enum(['markdown', 'text']),
  text: z.string().describe('The bundle, ready to read.'),
  totalTokens: z.number().int(),
  tokenBudget: z.number().int(),
  trimmed: z.boolean().describe('True when entries were compacted or dropped to fit the budget.'),
  contextHash: z.string().describe('Equal hashes mean an unchanged bundle.'),
  sections: z.array(z.object({ id: z.string(), title: z.string(), entries: z.number().int() })),
});

const DESCRIPTION = `Get the team's shared context bundle: who you are in the team, active tasks, what is blocked or waiting on someone, recent decisions, the current focus, recent activity, conversation threads, project knowledge and the team's most used documents. Built within a token budget and formatted for your runtime; every runtime gets the same picture.

Call it at the start of a session, after a long pause, or when the user asks "where are we?". It is the quickest way to get oriented; then use context_read or context_search for details. Unchanged context gives the same contextHash, so there is no need to re-read it when the hash has not moved.`;

/**
 * The bundle as the tool returns it, in the runtime's own format (Markdown for most, plain text
 * for terse runtimes such as openclaw); the `team-context://current` resource and the
 * resume-work prompt give the same text.
 */
export function bundleText(bundle: SharedContextResponse): string {
  return bundle.formatted;
}

export function contextSharedTool(context: ToolContext) {
  return defineTool({
    name: CONTEXT_SHARED_TOOL,
    title: 'Shared context bundle',
    description: DESCRIPTION,
    input: contextSharedInput,
    output: contextSharedOutput,
    annotations: { readOnlyHint: true, openWorldHint: false },
    async run(input) {
      const bundle = await context.backend.shared({
        ...(context.runtime !== undefined && { runtime: context.runtime }),
        ...(input.tokenBudget !== undefined && { tokenBudget: input.tokenBudget }),
      });
      return {
        structured: {
          runtime: bundle.runtime,
          format: bundle.format,
          text: bundleText(bundle),
          totalTokens: bundle.totalTokens,
          tokenBudget: bundle.tokenBudget,
          trimmed: bundle.trim.trimmed,
          contextHash: bundle.contextHash,
          sections: bundle.sections.map((section) => ({
            id: section.id,
            title: section.title,
            entries: section.entries.length,
          })),
        },
        text: bundleText(bundle),
      };
    },
  });
}
