import { z } from 'zod';
import type { ContextBuildFailure, TurnContextRecord } from './turn-context.js';

// The lines of a turn-context file, checked when a replay reads them back.

const nonEmpty = z.string().min(1);
const sender = z.object({ id: z.string(), kind: z.string().optional() });
const count = z.number().int().min(0);
const source = z.enum(['messages', 'runtimeState', 'memoryPointers', 'toolSnippets', 'input']);

export const turnContextInputSchema = z.object({
  agentId: nonEmpty,
  sessionId: nonEmpty,
  turnId: nonEmpty,
  tokenizer: nonEmpty,
  budgets: z.object({
    maxContextTokens: count,
    maxRecentMessages: count,
    maxToolSnippetTokens: count,
  }),
  sources: z.object({
    recentMessages: z.array(
      z.object({
        id: z.string(),
        direction: z.enum(['inbound', 'outbound']),
        sender,
        text: z.string(),
        held: z.boolean().optional(),
      }),
    ),
    runtimeState: z.object({
      lastCheckpointSummary: z.string().optional(),
      pendingQueueSummary: z.string().optional(),
      lastTerminalStatus: z.string().optional(),
    }),
    memoryPointers: z.array(z.object({ id: z.string(), text: z.string() })),
    toolSnippets: z.array(
      z.object({
        id: z.string(),
        tool: z.string(),
        output: z.string(),
        summary: z.string(),
        held: z.boolean().optional(),
      }),
    ),
    currentInput: z.object({ id: z.string(), sender, text: z.string() }),
  }),
});

export const turnSnapshotSchema = z.object({
  sessionId: nonEmpty,
  turnId: nonEmpty,
  contextHash: z.string().startsWith('ctx_'),
  sourceCounts: z.object({ messages: count, memoryPointers: count, toolSnippets: count }),
  trimmed: z.boolean(),
  timestampMs: z.number().int(),
});

export const turnContextRecordSchema = z.object({
  kind: z.literal('turn'),
  version: z.number().int(),
  agentId: nonEmpty,
  snapshot: turnSnapshotSchema,
  input: turnContextInputSchema,
  trace: z.object({
    parts: z.array(
      z.object({
        source,
        id: z.string(),
        mode: z.enum(['full', 'summary', 'dropped']),
        tokens: count,
        hash: z.string(),
      }),
    ),
    trim: z.object({
      trimmed: z.boolean(),
      tokensBeforeTrim: count,
      overBudget: z.boolean(),
      actions: z.array(
        z.object({
          source,
          id: z.string(),
          action: z.enum(['drop', 'compact']),
          reason: z.enum(['window', 'tool-cap', 'budget']),
        }),
      ),
    }),
  }),
}) satisfies z.ZodType<TurnContextRecord>;

export const contextBuildFailureSchema = z.object({
  kind: z.literal('failure'),
  code: z.literal('context_build_error'),
  status: z.literal('failed'),
  agentId: z.string(),
  sessionId: z.string(),
  turnId: z.string(),
  message: z.string(),
  nextAction: z.string(),
  timestampMs: z.number().int(),
}) satisfies z.ZodType<ContextBuildFailure>;
