import type { Logger } from '@ctxbus/core/contract';
import { scopeKeySchema } from '@ctxbus/core/contract';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { GetPromptResult } from '@modelcontextprotocol/sdk/types.js';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { ContextBackend } from '../context-backend.js';
import { errorMessage } from '../error-message.js';
import { renderItems, toItemView } from '../item-view.js';
import { RpcError } from '../rpc-error.js';
import { bundleText } from '../tools/context-shared-tool.js';

export const RESUME_WORK_PROMPT = 'resume-work';

const TASK_ITEMS = 10;
const FOCUS_RESULTS = 5;
const BODY_CHARS = 400;

export interface PromptContext {
  backend: ContextBackend;
  logger: Logger;
  runtime: string | undefined;
}

// Prompt arguments arrive as strings (MCP prompts have no typed arguments).
const resumeWorkArguments = {
  focus: z
    .string()
    .max(500)
    .optional()
    .describe('What to concentrate on, in words: "the search ranking work", "release blockers".'),
  taskId: z
    .string()
    .max(200)
    .optional()
    .describe('A task to pick up, e.g. "T-42" (or "task:T-42"): its recent history is included.'),
};

function taskScopeKey(taskId: string): string {
  const key = taskId.startsWith('task:') ? taskId : `task:${taskId.trim()}`;
  const parsed = scopeKeySchema.safeParse(key);
  if (!parsed.success) {
    throw new RpcError(
      ErrorCode.InvalidParams,
      `taskId "${taskId}" is not a task id: use letters, digits and dashes without spaces, e.g. T-42`,
    );
  }
  return parsed.data;
}

async function buildResumeWork(
  context: PromptContext,
  focus: string | undefined,
  taskId: string | undefined,
): Promise<GetPromptResult> {
  const scopeKey = taskId?.trim() ? taskScopeKey(taskId) : undefined;
  const wanted = focus?.trim() || undefined;
  const [bundle, taskItems, related] = await Promise.all([
    context.backend.shared(context.runtime === undefined ? {} : { runtime: context.runtime }),
    scopeKey ? context.backend.list({ scopeKey, limit: TASK_ITEMS }) : undefined,
    wanted ? context.backend.search({ query: wanted, limit: FOCUS_RESULTS }) : undefined,
  ]);

  const parts = [
    "You are resuming work with a team of agents that share context through ctxbus. Here is the team's current context: who you are, active tasks, what is blocked, recent decisions and recent activity.",
    bundleText(bundle).trim(),
  ];
  if (scopeKey && taskItems) {
    const history = taskItems.items.map((item) => toItemView(item));
    parts.push(
      `## Task ${scopeKey.slice('task:'.length)}: latest first\n\n${
        history.length > 0
          ? renderItems(history, BODY_CHARS)
          : 'Nothing has been written about this task yet.'
      }`,
    );
  }
  if (wanted && related) {
    const hits = related.results.map((result) => toItemView(result.item));
    parts.push(
      `## Related to "${wanted}"\n\n${
        hits.length > 0
          ? renderItems(hits, BODY_CHARS)
          : 'Nothing in the shared context matches it.'
      }`,
    );
  }
  const target = scopeKey
    ? `task ${scopeKey.slice('task:'.length)}`
    : wanted
      ? `"${wanted}"`
      : 'the most important active task';
  parts.push(
    [
      `Continue from there, with ${target}. Do not redo finished work or reopen decisions unless something new contradicts them; clear blockers that are yours first.`,
      'As you go, keep the team in the loop with the ctxbus tools: context_write a status item (scopeKey "task:<id>", tag "done" when finished) when you make progress, a decision when you choose something, a request or alert when you need someone. Use context_search before deciding something that may already have been decided.',
    ].join(' '),
  );

  return {
    description: `Resume work from the team's shared context${scopeKey ? ` (${scopeKey})` : ''}`,
    messages: [{ role: 'user', content: { type: 'text', text: parts.join('\n\n') } }],
  };
}

export function registerResumeWorkPrompt(server: McpServer, context: PromptContext): void {
  server.registerPrompt(
    RESUME_WORK_PROMPT,
    {
      title: 'Resume work',
      description:
        'Pick up where the team left off: the shared context (active tasks, blockers, decisions, recent activity) and an instruction to continue from it. Optionally focus on a topic or a task.',
      argsSchema: resumeWorkArguments,
    },
    async ({ focus, taskId }) => {
      try {
        return await buildResumeWork(context, focus, taskId);
      } catch (error) {
        if (error instanceof RpcError) throw error;
        const message = `${RESUME_WORK_PROMPT} failed: ${errorMessage(error)}`;
        context.logger.warn({ err: error }, message);
        throw new RpcError(ErrorCode.InternalError, message);
      }
    },
  );
}
