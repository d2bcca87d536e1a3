import type { Logger } from '@ctxbus/core/contract';
import { CtxbusError } from '@ctxbus/core/contract';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { ReadResourceResult } from '@modelcontextprotocol/sdk/types.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { ContextBackend } from '../context-backend.js';
import { errorMessage } from '../error-message.js';
import { logFailure } from '../log-failure.js';
import { RpcError } from '../rpc-error.js';
import { bundleText } from '../tools/context-shared-tool.js';
import { activeTasks } from './active-tasks.js';
import { activeTasksMarkdown, recentDecisionsMarkdown } from './resource-markdown.js';
import {
  ACTIVE_TASKS_URI,
  ITEM_URI_TEMPLATE,
  itemIdOfUri,
  itemUri,
  RECENT_DECISIONS_URI,
  TEAM_CONTEXT_URI,
} from './resource-uris.js';

/** The JSON-RPC code MCP gives "resource not found" (not in the SDK's ErrorCode enum). */
export const RESOURCE_NOT_FOUND = -32002;

export const RECENT_DECISIONS_LIMIT = 20;
const LISTED_ITEMS = 20;

export interface ResourceContext {
  backend: ContextBackend;
  logger: Logger;
  runtime: string | undefined;
}

function markdown(uri: string, text: string): ReadResourceResult {
  return { contents: [{ uri, mimeType: 'text/markdown', text }] };
}

/** A failed read as a JSON-RPC error with the same one-line message tools give. */
function readError(uri: string, error: unknown, logger: Logger): Error {
  if (error instanceof RpcError || error instanceof McpError) return error;
  const message = `reading ${uri} failed: ${errorMessage(error)}`;
  logFailure(logger, error, { uri }, { refused: message, failed: message });
  if (CtxbusError.isInstance(error) && error.code === 'not_found') {
    return new RpcError(RESOURCE_NOT_FOUND, message, { uri });
  }
  return new RpcError(ErrorCode.InternalError, message, { uri });
}

async function reading(
  uri: string,
  context: ResourceContext,
  read: () => Promise<ReadResourceResult>,
): Promise<ReadResourceResult> {
  try {
    return await read();
  } catch (error) {
    throw readError(uri, error, context.logger);
  }
}

export function registerResources(server: McpServer, context: ResourceContext): void {
  const { backend } = context;

  server.registerResource(
    'team-context',
    TEAM_CONTEXT_URI,
    {
      title: 'Team context',
      description:
        "The team's shared context bundle (identity, active tasks, blockers, recent decisions, focus, activity, threads, project knowledge), within the runtime's token budget.",
      mimeType: 'text/markdown',
    },
    (uri) =>
      reading(uri.href, context, async () => {
        const bundle = await backend.shared(
          context.runtime === undefined ? {} : { runtime: context.runtime },
        );
        const text = bundleText(bundle);
        const mimeType = bundle.format === 'markdown' ? 'text/markdown' : 'text/plain';
        return { contents: [{ uri: uri.href, mimeType, text }] };
      }),
  );

  server.registerResource(
    'active-tasks',
    ACTIVE_TASKS_URI,
    {
      title: 'Active tasks',
      description:
        "The team's open tasks from the task store (SUBMITTED, WORKING, INPUT_REQUIRED, AUTH_REQUIRED), newest first, then the newest status agents wrote about their own tasks (task:<id> status items not tagged done).",
      mimeType: 'text/markdown',
    },
    (uri) =>
      reading(uri.href, context, async () =>
        markdown(uri.href, activeTasksMarkdown(await activeTasks(backend))),
      ),
  );

  server.registerResource(
    'recent-decisions',
    RECENT_DECISIONS_URI,
    {
      title: 'Recent decisions',
      description: `The ${RECENT_DECISIONS_LIMIT} newest decisions still in force (superseded ones left out).`,
      mimeType: 'text/markdown',
    },
    (uri) =>
      reading(uri.href, context, async () => {
        const { items } = await backend.list({ type: 'decision', limit: RECENT_DECISIONS_LIMIT });
        return markdown(uri.href, recentDecisionsMarkdown(items));
      }),
  );

  server.registerResource(
    'context-item',
    new ResourceTemplate(ITEM_URI_TEMPLATE, {
      // Listing offers the newest items (for pickers such as Claude Code's @-mentions); every
      // other item stays readable by id. A hub failure lists none rather than failing the list.
      list: async () => {
        try {
          const { items } = await backend.list({ limit: LISTED_ITEMS });
          return {
            resources: items.map((item) => ({
              uri: itemUri(item.id),
              name: item.title,
              description: `${item.type} by ${item.source.runtime}, ${item.createdAt}`,
              mimeType: 'application/json',
            })),
          };
        } catch (error) {
          context.logger.warn({ err: error }, `listing items failed: ${errorMessage(error)}`);
          return { resources: [] };
        }
      },
    }),
    {
      title: 'Context item',
      description: 'One context item by id, as JSON with every field.',
      mimeType: 'application/json',
    },
    (uri) =>
      reading(uri.href, context, async () => {
        const id = itemIdOfUri(uri.href);
        if (id === undefined) {
          throw new RpcError(
            ErrorCode.InvalidParams,
            `${uri.href} is not an item URI: use context://items/<uuid>`,
          );
        }
        const item = await backend.get(id);
        return {
          contents: [
            { uri: uri.href, mimeType: 'application/json', text: JSON.stringify(item, null, 2) },
          ],
        };
      }),
  );
}
