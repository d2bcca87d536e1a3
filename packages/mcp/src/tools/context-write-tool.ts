import type { ContextItemInput } from '@ctxbus/core/contract';
import {
  CtxbusError,
  contextTypeSchema,
  LIMITS,
  memoryKeySchema,
  runtimeNameSchema,
  scopeSchema,
  urgencySchema,
  visibilitySchema,
} from '@ctxbus/core/contract';
import { z } from 'zod';
import { itemHeadline, itemViewSchema, toItemView } from '../item-view.js';
import type { ToolContext } from './tool-context.js';
import { defineTool } from './tool-definition.js';
import { itemIdInput, scopeKeyInput, tagsInput } from './tool-inputs.js';

export const CONTEXT_WRITE_TOOL = 'context_write';

const refInput = z.string().min(1).max(LIMITS.refChars);

/** The fields a knowledge item and a plain item share (memory_write reuses them). */
export const itemBodyInput = {
  title: z
    .string()
    .trim()
    .min(1)
    .max(LIMITS.titleChars)
    .describe(
      'One specific, self-contained sentence a teammate understands without context, e.g. "Use SQLite (WAL, FTS5) for the embedded store", not "Decision made".',
    ),
  content: z
    .string()
    .max(LIMITS.contentChars)
    .optional()
    .describe('The details: reasons, numbers, links, next steps. Markdown is fine.'),
  summary: z
    .string()
    .trim()
    .max(LIMITS.summaryChars)
    .optional()
    .describe('One line used when space is tight; derived from the content when absent.'),
  tags: tagsInput.optional(),
  visibility: visibilitySchema
    .optional()
    .describe('"team" (default): everyone; "private": only runtimes with your runtime name.'),
};

export const contextWriteInput = z.object({
  type: contextTypeSchema.describe(
    'decision: a choice made; discovery: a fact learned; status: progress on a task; request: you need someone to act; alert: something is wrong.',
  ),
  ...itemBodyInput,
  urgency: urgencySchema
    .optional()
    .describe(
      '"background" (default); "attention": others should see it soon; "blocking": someone is stuck until it is handled.',
    ),
  scope: scopeSchema
    .optional()
    .describe(
      'global (default): the whole team; space; task; thread. Given a task: or thread: scopeKey, the scope follows it.',
    ),
  scopeKey: scopeKeyInput
    .optional()
    .describe(
      'What the item is about: "task:T-42" (task status goes here), "thread:<id>", "user:<id>".',
    ),
  ttlSeconds: z
    .number()
    .int()
    .positive()
    .max(LIMITS.maxTtlSeconds)
    .optional()
    .describe('Hide the item after this many seconds (e.g. 3600 for "deploy in progress").'),
  supersedes: itemIdInput
    .optional()
    .describe(
      'Id of an item this one replaces (an outdated decision or status); it stops showing.',
    ),
  key: memoryKeySchema
    .optional()
    .describe(
      'Path-like knowledge key; an item already holding it is superseded. See memory_write.',
    ),
  id: itemIdInput
    .optional()
    .describe('A UUID you choose to make retries safe: writing the same id twice stores one item.'),
  taskId: refInput.optional().describe('Your task id, if you work on one (source.taskId).'),
  threadId: refInput.optional().describe('The conversation thread id (source.threadId).'),
  agentId: refInput.optional().describe('Which agent of your runtime wrote it (source.agentId).'),
  // Seed 000's field names, accepted as they are (the hub applies one rule to both forms).
  sourceRuntime: runtimeNameSchema
    .optional()
    .describe("Seed 000's field: if given, must be your own runtime."),
  sourceAgentId: refInput.optional().describe("Seed 000's name for agentId."),
  sourceTaskId: refInput.optional().describe("Seed 000's name for taskId."),
  sourceThreadId: refInput.optional().describe("Seed 000's name for threadId."),
  expiresAfterSeconds: z
    .number()
    .int()
    .positive()
    .max(LIMITS.maxTtlSeconds)
    .optional()
    .describe("Seed 000's name for ttlSeconds."),
  ttl: z
    .number()
    .int()
    .positive()
    .max(LIMITS.maxTtlSeconds)
    .optional()
    .describe("Seed 000's other name for ttlSeconds (its item's ttl)."),
  relevanceTags: tagsInput.optional().describe("Seed 000's name for tags."),
});

export const contextWriteOutput = z.object({
  item: itemViewSchema,
  status: z
    .enum(['created', 'existing'])
    .describe('"existing" when an item with this id was already written (a safe retry).'),
});

const DESCRIPTION = `Share one piece of context with the team: every other agent and runtime sees it at its next turn, or at once if it subscribes. Write when you decide something, learn something others need, make progress on a task, need someone to act, or hit a problem. One item per fact; a specific title, details in content.

Types, with good titles:
- decision: "Use SQLite (WAL, FTS5) for the embedded store", "Release on Tuesdays, freeze Monday 18:00"
- discovery: "The staging DB rejects connections without TLS", "LoCoMo top-10 recall is 82.9% with thread context"
- status (scopeKey "task:<id>"): "T-42: migration written, tests pending", tag "done" when finished
- request: "Need a review of PR #311 before Friday" (urgency attention or blocking)
- alert: "CI is red on main since 14:02" (urgency blocking if it stops others)
Tags: 1-5 short lowercase topic words without spaces: storage, ci, auth, release, docs.

Replace an outdated item with supersedes (its id) instead of contradicting it. Use ttlSeconds for things that stop mattering. For long-lived knowledge under a path-like key use memory_write. Never write secrets: they are redacted before storage.`;

type WriteInput = z.output<typeof contextWriteInput>;

/**
 * A field given under our name or the seed's: any of them, or several when they agree. Two
 * different values are refused rather than one silently dropped (as taskId and sourceTaskId are).
 */
function oneOf<
  K extends 'ttlSeconds' | 'tags',
  S extends 'expiresAfterSeconds' | 'ttl' | 'relevanceTags',
>(input: WriteInput, ours: K, ...seeds: S[]): WriteInput[K] | WriteInput[S] {
  const given = [ours, ...seeds].filter((name) => input[name] !== undefined);
  const [first, ...others] = given;
  if (first === undefined) return undefined;
  const differing = others.find(
    (name) => JSON.stringify(input[name]) !== JSON.stringify(input[first]),
  );
  if (differing !== undefined) {
    throw new CtxbusError(
      'validation_failed',
      `${first} and ${differing} name the same field (${seeds.join(' and ')}: seed 000's names for ${ours}): give one, or the same value in each`,
    );
  }
  return input[first];
}

export function toItemInput(input: WriteInput): ContextItemInput {
  const source = {
    ...(input.taskId !== undefined && { taskId: input.taskId }),
    ...(input.threadId !== undefined && { threadId: input.threadId }),
    ...(input.agentId !== undefined && { agentId: input.agentId }),
  };
  const ttl = oneOf(input, 'ttlSeconds', 'expiresAfterSeconds', 'ttl');
  const tags = oneOf(input, 'tags', 'relevanceTags');
  return {
    type: input.type,
    title: input.title,
    ...(input.sourceRuntime !== undefined && { sourceRuntime: input.sourceRuntime }),
    ...(input.sourceAgentId !== undefined && { sourceAgentId: input.sourceAgentId }),
    ...(input.sourceTaskId !== undefined && { sourceTaskId: input.sourceTaskId }),
    ...(input.sourceThreadId !== undefined && { sourceThreadId: input.sourceThreadId }),
    ...(input.id !== undefined && { id: input.id }),
    ...(input.content !== undefined && { content: input.content }),
    ...(input.summary !== undefined && { summary: input.summary }),
    ...(Object.keys(source).length > 0 && { source }),
    ...(input.scope !== undefined && { scope: input.scope }),
    ...(input.scopeKey !== undefined && { scopeKey: input.scopeKey }),
    ...(tags !== undefined && { relevanceTags: tags }),
    ...(input.urgency !== undefined && { urgency: input.urgency }),
    ...(input.visibility !== undefined && { visibility: input.visibility }),
    ...(ttl !== undefined && { expiresAfterSeconds: ttl }),
    ...(input.supersedes !== undefined && { supersedes: input.supersedes }),
    ...(input.key !== undefined && { key: input.key }),
  };
}

export function contextWriteTool(context: ToolContext) {
  return defineTool({
    name: CONTEXT_WRITE_TOOL,
    title: 'Write shared context',
    description: DESCRIPTION,
    input: contextWriteInput,
    output: contextWriteOutput,
    annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: false },
    // Seed 000's context_write(item): {"item": {...}} works as the item's fields themselves.
    wrappedAs: 'item',
    async run(input) {
      const written = await context.backend.write(toItemInput(input));
      const stored = written.items[0];
      const result = written.results[0];
      if (!stored || !result) {
        throw new CtxbusError('internal', 'the hub stored nothing and reported no error');
      }
      const item = toItemView(stored);
      const replaced = item.supersedes ? `; it supersedes ${item.supersedes}` : '';
      const verb = result.status === 'created' ? 'Written' : 'Already written';
      return {
        structured: { item, status: result.status },
        text: `${verb} as seq ${item.seq}${replaced}: ${itemHeadline(item)}`,
      };
    },
  });
}
