import type { Logger } from '@ctxbus/core/contract';
import { MAX_JSON_DEPTH, tooDeep, wellFormed } from '@ctxbus/core/contract';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult, Tool, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { errorMessage } from '../error-message.js';
import { portableSchema } from './portable-schema.js';

/** One tool: zod schemas for what it takes and returns, and what it does. */
export interface ToolDefinition<Input extends z.ZodObject, Output extends z.ZodObject> {
  name: string;
  title: string;
  /** The model's documentation: when to use the tool, how, with examples. */
  description: string;
  input: Input;
  output: Output;
  annotations?: ToolAnnotations;
  /** Does the work; throws on failure (a `CtxbusError` from the backend, usually). */
  run(input: z.output<Input>): Promise<{ structured: z.input<Output>; text: string }>;
}

// biome-ignore lint/suspicious/noExplicitAny: a list of tools with different schemas.
export type AnyToolDefinition = ToolDefinition<any, any>;

/** Keeps the schemas' types flowing from a definition's literal into its `run`. */
export function defineTool<Input extends z.ZodObject, Output extends z.ZodObject>(
  definition: ToolDefinition<Input, Output>,
): ToolDefinition<Input, Output> {
  return definition;
}

/** Zod issues as one line that names each field: `tags[0]: a tag has no spaces; title: …`. */
function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const path = issue.path
        .map((part, index) =>
          typeof part === 'number' ? `[${part}]` : `${index === 0 ? '' : '.'}${String(part)}`,
        )
        .join('');
      return path ? `${path}: ${issue.message}` : issue.message;
    })
    .join('; ');
}

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
    inputSchema: portableSchema(
      z.toJSONSchema(tool.input, { io: 'input', target: 'draft-07' }),
    ) as Tool['inputSchema'],
    outputSchema: portableSchema(
      z.toJSONSchema(tool.output, { io: 'output', target: 'draft-07' }),
    ) as Tool['outputSchema'],
    ...(tool.annotations && { annotations: tool.annotations }),
  }));

  server.server.registerCapabilities({ tools: {} });
  server.server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: listed }));
  server.server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const { name } = request.params;
    const tool = byName.get(name);
    if (!tool) {
      throw new McpError(
        ErrorCode.InvalidParams,
        `unknown tool ${name}; this server has ${[...byName.keys()].join(', ')}`,
      );
    }
    const deep = tooDeep(request.params.arguments ?? {});
    if (deep !== null) {
      return failure(name, `invalid input: ${deep}: nested deeper than ${MAX_JSON_DEPTH} levels`);
    }
    const parsed = tool.input.safeParse(wellFormed(request.params.arguments ?? {}));
    if (!parsed.success) return failure(name, `invalid input: ${describeIssues(parsed.error)}`);
    try {
      const { structured, text } = await tool.run(parsed.data);
      // Parsing also drops anything the output schema does not declare.
      const checked = tool.output.safeParse(structured);
      if (!checked.success) {
        logger.error(
          { tool: name, issues: checked.error.issues },
          'tool result does not match its output schema',
        );
        return failure(name, `internal error: the result does not match the tool's output schema`);
      }
      return {
        structuredContent: checked.data as Record<string, unknown>,
        content: [{ type: 'text', text }],
      };
    } catch (error) {
      const message = errorMessage(error);
      logger.warn({ tool: name, err: error }, `${name} failed: ${message}`);
      return failure(name, message);
    }
  });
}
