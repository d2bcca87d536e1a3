import type { Logger } from '@ctxbus/core/contract';
import { MAX_JSON_DEPTH, shownIssues, tooDeep, wellFormed } from '@ctxbus/core/contract';
import { z } from 'zod';
import { errorMessage } from '../error-message.js';
import { logFailure } from '../log-failure.js';
import { portableSchema } from './portable-schema.js';

// A tool of ctxbus, independent of the protocol that serves it: the MCP server lists and calls
// these (tool-registry.ts), and the OpenClaw plugin registers the same definitions as native
// OpenClaw tools (`@ctxbus/mcp/tools`), so every runtime gets one set of names, descriptions
// and input rules. Nothing here loads the MCP SDK.

/** Hints for clients (MCP's tool annotations). */
export interface ToolAnnotations {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/** One tool: zod schemas for what it takes and returns, and what it does. */
export interface ToolDefinition<Input extends z.ZodObject, Output extends z.ZodObject> {
  name: string;
  title: string;
  /** The model's documentation: when to use the tool, how, with examples. */
  description: string;
  input: Input;
  output: Output;
  annotations?: ToolAnnotations;
  /**
   * The seed's form of the call, its arguments wrapped in one object under this name
   * (seed 000's `context_write(item)`: `{"item": {...}}`), taken as the arguments themselves.
   */
  wrappedAs?: string;
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

/** The input schema a client lists: JSON Schema draft-07, portable across model providers. */
export function toolInputSchema(tool: AnyToolDefinition): Record<string, unknown> {
  return portableSchema(z.toJSONSchema(tool.input, { io: 'input', target: 'draft-07' })) as Record<
    string,
    unknown
  >;
}

/** The output schema (what `structured` holds), in the same form. */
export function toolOutputSchema(tool: AnyToolDefinition): Record<string, unknown> {
  return portableSchema(
    z.toJSONSchema(tool.output, { io: 'output', target: 'draft-07' }),
  ) as Record<string, unknown>;
}

/** Zod issues as one line that names each field: `tags[0]: a tag has no spaces; title: …`. */
function describeIssues(error: z.ZodError): string {
  return error.issues
    .flatMap(shownIssues)
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

/**
 * Arguments the tool does not take, named with the ones it does (null when there are none): an
 * unknown argument is refused, never dropped, so a call written for another form of the tool
 * fails loudly instead of doing something else.
 */
function unknownArguments(tool: AnyToolDefinition, args: unknown): string | null {
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return null;
  const known = Object.keys(tool.input.shape);
  const unknown = Object.keys(args).filter((name) => !known.includes(name));
  if (unknown.length === 0) return null;
  return `invalid input: ${tool.name} takes no ${unknown.map((name) => JSON.stringify(name)).join(', ')}; it takes ${known.join(', ')}`;
}

export type ToolOutcome =
  | { ok: true; structured: Record<string, unknown>; text: string }
  | { ok: false; message: string };

/**
 * Validates `args` with the tool's input schema, runs it, and checks what it returns against its
 * output schema (dropping undeclared fields). Never throws: bad input, a backend error or an
 * output that breaks the schema is `{ ok: false, message }`, one line naming what was wrong.
 */
/** `{[tool.wrappedAs]: {...}}` and nothing else: the seed's call, unwrapped. */
function unwrapped(tool: AnyToolDefinition, args: unknown): unknown {
  if (!tool.wrappedAs || args === null || typeof args !== 'object' || Array.isArray(args)) {
    return args;
  }
  const keys = Object.keys(args);
  const inner = (args as Record<string, unknown>)[tool.wrappedAs];
  const isObject = inner !== null && typeof inner === 'object' && !Array.isArray(inner);
  return keys.length === 1 && keys[0] === tool.wrappedAs && isObject ? inner : args;
}

export async function callTool(
  tool: AnyToolDefinition,
  given: unknown,
  logger: Logger,
): Promise<ToolOutcome> {
  const args = unwrapped(tool, given);
  const deep = tooDeep(args ?? {});
  if (deep !== null) {
    return {
      ok: false,
      message: `invalid input: ${deep}: nested deeper than ${MAX_JSON_DEPTH} levels`,
    };
  }
  const unknown = unknownArguments(tool, args);
  if (unknown !== null) return { ok: false, message: unknown };
  const parsed = tool.input.safeParse(wellFormed(args ?? {}));
  if (!parsed.success) {
    return { ok: false, message: `invalid input: ${describeIssues(parsed.error)}` };
  }
  try {
    const { structured, text } = await tool.run(parsed.data);
    const checked = tool.output.safeParse(structured);
    if (!checked.success) {
      logger.error(
        { tool: tool.name, issues: checked.error.issues },
        'tool result does not match its output schema',
      );
      return {
        ok: false,
        message: "internal error: the result does not match the tool's output schema",
      };
    }
    return { ok: true, structured: checked.data as Record<string, unknown>, text };
  } catch (error) {
    const message = errorMessage(error);
    logFailure(
      logger,
      error,
      { tool: tool.name },
      { refused: `${tool.name} refused: ${message}`, failed: `${tool.name} failed: ${message}` },
    );
    return { ok: false, message };
  }
}
