import type { CtxbusClient } from '@ctxbus/client';
import type { ContextItemInput, Logger, Task, TaskEvent, TaskState } from '@ctxbus/core/contract';
import {
  CtxbusError,
  capabilityNameSchema,
  followTaskStatus,
  isTerminalTaskState,
  TASK_LIMITS,
  TASK_TAG,
  taskNeedsSomeone,
  taskScopeKey,
} from '@ctxbus/core/contract';
import type { AnyToolDefinition, ContextBackend } from '@ctxbus/mcp/tools';
import {
  callTool,
  contextTools,
  defineTool,
  routingSentence,
  taskText,
  toolInputSchema,
  toTaskView,
} from '@ctxbus/mcp/tools';
import { z } from 'zod';
import type { AgentTool, PluginLogger, ToolFactoryContext } from './openclaw-sdk.js';
import type { ResolvedConfig } from './plugin-config.js';

export const CAPABILITY_REQUEST_TOOL = 'capability_request';

/** Every tool the plugin registers, as openclaw.plugin.json's `contracts.tools` lists them. */
export const PLUGIN_TOOL_NAMES = [
  'context_shared',
  'context_read',
  'context_search',
  'context_write',
  'memory_query',
  'memory_write',
  'task_create',
  'task_status',
  'task_update',
  'update_swarm_shared_state',
  'resource_manage',
  CAPABILITY_REQUEST_TOOL,
] as const;

/** The calling agent, written into everything it writes: who said it, in which conversation. */
export interface Caller {
  agentId: string;
  sessionKey: string | undefined;
  tags: readonly string[];
}

/** A backend over the client that stamps each written item with the calling agent. */
export function agentBackend(client: CtxbusClient, caller: Caller): ContextBackend {
  const stamp = (item: ContextItemInput): ContextItemInput => {
    const thread = caller.sessionKey?.slice(0, 200);
    return {
      ...item,
      source: {
        agentId: caller.agentId,
        ...(thread && { threadId: thread }),
        ...item.source,
      },
      relevanceTags: [...new Set([...(item.relevanceTags ?? []), ...caller.tags])].slice(0, 32),
    };
  };
  return {
    write: (items) => client.write(Array.isArray(items) ? items.map(stamp) : stamp(items)),
    list: (params) => client.list(params),
    forget: (key) => client.forget(key),
    get: (id) => client.get(id),
    search: (request) => client.search(request),
    shared: (params) => client.shared(params),
    stream: (options) => client.stream(options),
    createTask: (request) => client.createTask(request),
    task: (id) => client.task(id),
    tasks: (params) => client.tasks(params),
    cancelTask: (id, note) => client.cancelTask(id, note),
    updateTask: (id, body) => client.updateTask(id, body),
    completeTask: (id, body) => client.completeTask(id, body),
  };
}

/**
 * Follows a task on the hub's stream until it ends, needs a human, or `waitMs` pass; returns
 * where it stands then. No polling and no read per change: the task's status items carry its
 * state (core's follower). It reads the task three times at most: first, once the stream is
 * live (a change made before it), and at the end (the result and history).
 */
export async function waitForTask(
  backend: ContextBackend,
  id: string,
  waitMs: number,
  onChange: (task: { id: string; state: TaskState }) => void,
  signal?: AbortSignal,
): Promise<{ task: Task; history: TaskEvent[] }> {
  const first = await backend.task(id);
  const settled = (state: TaskState) => isTerminalTaskState(state) || taskNeedsSomeone(state);
  if (settled(first.task.state) || waitMs <= 0) return first;
  const controller = new AbortController();
  const stop = () => controller.abort();
  signal?.addEventListener('abort', stop, { once: true });
  const timer = setTimeout(stop, waitMs);
  let lastState = first.task.state;
  const seen = (state: TaskState) => {
    if (state !== lastState) {
      lastState = state;
      onChange({ id, state });
    }
    if (settled(state)) stop();
  };
  try {
    const events = backend.stream({
      scopeKey: taskScopeKey(id),
      tags: TASK_TAG,
      signal: controller.signal,
      onReady: () => {
        backend.task(id).then(
          ({ task }) => seen(task.state),
          () => undefined,
        );
      },
    });
    for await (const status of followTaskStatus(events, id, settled)) seen(status.state);
  } catch (error) {
    if (!controller.signal.aborted) throw error;
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', stop);
  }
  return backend.task(id);
}

const capabilityRequestInput = z.object({
  title: z
    .string()
    .trim()
    .min(1)
    .max(TASK_LIMITS.titleChars)
    .describe('What to do, one specific sentence: "Run the tests of ctxbus".'),
  argv: z
    .array(z.string().min(1).max(4_096))
    .min(1)
    .max(256)
    .optional()
    .describe('For running a command: the program and its arguments, e.g. ["pnpm", "test"].'),
  cwd: z
    .string()
    .min(1)
    .max(4_096)
    .optional()
    .describe('For running a command: the absolute directory to run it in.'),
  requiredCapabilities: z
    .array(capabilityNameSchema)
    .min(1)
    .max(TASK_LIMITS.capabilities)
    .optional()
    .describe(
      'What the work needs (default ["code_execution"] with argv, else ask): code_execution, file_operations, search, communication, memory.',
    ),
  description: z.string().max(TASK_LIMITS.descriptionChars).optional(),
  input: z
    .record(z.string(), z.unknown())
    .optional()
    .describe('Anything else the doer needs, as a JSON object.'),
  waitSeconds: z
    .int()
    .min(0)
    .max(600)
    .default(120)
    .describe('How long to wait for the result before returning (default 120; 0 = do not wait).'),
});

const capabilityRequestOutput = z.object({
  taskId: z.string(),
  state: z.string(),
  routing: z.string(),
  result: z.unknown().optional(),
  error: z.unknown().optional(),
});

const CAPABILITY_DESCRIPTION = `Get work done that you cannot do here (run a command or the tests of a project, touch files on a machine): the ctxbus hub routes it to a runtime of the team that can (for commands, a machine running a ctxbus worker), and this tool waits for the result and returns it.
Example: {"title": "Run the ctxbus tests", "argv": ["pnpm", "test"], "cwd": "/home/me/ctxbus"}
A command runs only if that machine allows it; some need a human's approval first (the answer then says AUTH_REQUIRED and how to approve). Retrying the same call returns the same task.`;

/** One call of a tool: its id (stable across retries), abort signal and progress channel. */
export interface ToolCall {
  id: string;
  signal?: AbortSignal | undefined;
  progress(text: string): void;
}

/** `capability_request`: a routed task from this agent's turn, followed to its result. */
export function capabilityRequestTool(
  backend: ContextBackend,
  caller: Caller,
  call: ToolCall,
): AnyToolDefinition {
  return defineTool({
    name: CAPABILITY_REQUEST_TOOL,
    title: 'Request a capability',
    description: CAPABILITY_DESCRIPTION,
    input: capabilityRequestInput,
    output: capabilityRequestOutput,
    async run(input) {
      const taskInput = {
        ...(input.input ?? {}),
        ...(input.argv && { argv: input.argv }),
        ...(input.cwd && { cwd: input.cwd }),
      };
      const requiredCapabilities =
        input.requiredCapabilities ?? (input.argv ? ['code_execution'] : undefined);
      if (!requiredCapabilities) {
        throw new CtxbusError(
          'validation_failed',
          'say what the work needs (requiredCapabilities), or give argv for a command',
        );
      }
      const created = await backend.createTask({
        title: input.title,
        requiredCapabilities,
        ...(input.description !== undefined && { description: input.description }),
        ...(Object.keys(taskInput).length > 0 && { input: taskInput as Record<string, never> }),
        // One task per tool call: a retried call (same id) finds the task it made.
        idempotencyKey: `openclaw:${caller.agentId}:${caller.sessionKey ?? ''}:${call.id}`.slice(
          0,
          TASK_LIMITS.idempotencyKeyChars,
        ),
      });
      const routing = routingSentence(created.routing, created.task.origin);
      call.progress(`${routing} (task ${created.task.id}, ${created.task.state})`);
      const { task, history } = await waitForTask(
        backend,
        created.task.id,
        input.waitSeconds * 1000,
        (changed) => call.progress(`task ${changed.id}: ${changed.state}`),
        call.signal,
      );
      const view = toTaskView(task);
      const next =
        task.state === 'AUTH_REQUIRED'
          ? `\nA human must approve it first (you cannot: the hub refuses agents' tokens). Ask your user to answer in Telegram, the dashboard, or at their terminal: ctxbus approve ${task.id} (or ctxbus deny ${task.id}).`
          : isTerminalTaskState(task.state)
            ? ''
            : '\nNot finished yet: follow it with task_status; its result also reaches your context.';
      return {
        structured: {
          taskId: task.id,
          state: task.state,
          routing,
          ...(task.result !== undefined && { result: task.result }),
          ...(task.error !== undefined && task.error !== null && { error: task.error }),
        },
        text: `${routing}\n${taskText(view, history)}${next}`,
      };
    },
  });
}

/** A `Logger` (pino's shape) writing to OpenClaw's plugin logger. */
export function pluginLogger(logger: PluginLogger): Logger {
  const line = (object: object, message?: string) =>
    message ?? (object instanceof Error ? object.message : JSON.stringify(object));
  return {
    debug: (object, message) => logger.debug?.(line(object, message)),
    info: (object, message) => logger.info(line(object, message)),
    warn: (object, message) => logger.warn(line(object, message)),
    error: (object, message) => logger.error(line(object, message)),
  };
}

export function toAgentTool(
  definitionFor: (call: ToolCall) => AnyToolDefinition,
  logger: Logger,
): AgentTool {
  const listed = definitionFor({ id: '', progress: () => undefined });
  return {
    name: listed.name,
    label: listed.title,
    description: listed.description,
    parameters: toolInputSchema(listed),
    async execute(toolCallId, params, signal, onUpdate) {
      const definition = definitionFor({
        id: toolCallId,
        signal,
        progress: (text) =>
          onUpdate?.({ content: [{ type: 'text', text }], details: { progress: text } }),
      });
      const outcome = await callTool(definition, params, logger);
      // OpenClaw's contract: a failed tool throws; the message is what the model reads.
      if (!outcome.ok) throw new Error(`${definition.name} failed: ${outcome.message}`);
      return { content: [{ type: 'text', text: outcome.text }], details: outcome.structured };
    },
  };
}

/**
 * The plugin's tools for one calling agent: the ctxbus MCP server's tools (same definitions,
 * registered natively) and `capability_request`, all writing as that agent.
 */
export function agentTools(
  client: CtxbusClient,
  config: ResolvedConfig,
  logger: PluginLogger,
  context: ToolFactoryContext,
): AgentTool[] {
  const agentId = context.agentId?.trim() || 'main';
  const caller: Caller = {
    agentId,
    sessionKey: context.sessionKey ?? context.sessionId,
    tags: ['openclaw', ...(config.agents[agentId]?.tags ?? [])],
  };
  const backend = agentBackend(client, caller);
  const log = pluginLogger(logger);
  const shared = contextTools({ backend, logger: log, runtime: 'openclaw' }).map((tool) =>
    toAgentTool(() => tool, log),
  );
  return [...shared, toAgentTool((call) => capabilityRequestTool(backend, caller, call), log)];
}
