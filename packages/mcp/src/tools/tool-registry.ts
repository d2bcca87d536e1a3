import type { Logger } from '@ctxbus/core/contract';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { RpcError } from '../rpc-error.js';
import type { AnyToolDefinition } from './tool-definition.js';
import { callTool, toolInputSchema, toolOutputSchema } from './tool-definition.js';

export type { AnyToolDefinition, ToolDefinition } from './tool-definition.js';
export { defineTool } from './tool-definition.js';

function failure(tool: string, message: string): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: `${tool} failed: ${message}` }] };
}

/**
 * Serves tools/list and tools/call on the server's low-level protocol handler.
 *
 * Why not `McpServer.registerTool`: it validates arguments itself and reports bad input as
 * "MCP error -32602: Input validation error: …" with one line per issue. Here the same zod
 * schemas validate and list (as JSON Schema, like the SDK does), and every failure, bad input
 * or backend error alike, is an `isError` result with one line: `<tool> failed: <why>`.
 * Tools must therefore be added here, not with `registerTool` (which would throw).
 */
export function registerTools(
  server: McpServer,
  tools: readonly AnyToolDefinition[],
  logger: Logger,
): void {
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  const listed: Tool[] = tools.map((tool) => ({
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: toolInputSchema(tool) as Tool['inputSchema'],
    outputSchema: toolOutputSchema(tool) as Tool['outputSchema'],
    ...(tool.annotations && { annotations: tool.annotations }),
  }));

  server.server.registerCapabilities({ tools: {} });
  server.server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: listed }));
  server.server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const { name } = request.params;
    const tool = byName.get(name);
    if (!tool) {
      throw new RpcError(
        ErrorCode.InvalidParams,
        `unknown tool ${name}; this server has ${[...byName.keys()].join(', ')}`,
      );
    }
    const outcome = await callTool(tool, request.params.arguments ?? {}, logger);
    return outcome.ok
      ? {
          structuredContent: outcome.structured,
          content: [{ type: 'text', text: outcome.text }],
        }
      : failure(name, outcome.message);
  });
}
