// The part of OpenClaw's plugin SDK this plugin uses (openclaw 2026.9.x), written out so that
// building ctxbus does not need the 600 MB `openclaw` package: the host provides the SDK at run
// time (it links `openclaw` for plugins that declare it as a peer), and test/e2e loads this
// plugin into the real OpenClaw, which is what proves these shapes.

export interface PluginLogger {
  debug?: (message: string) => void;
  info: (message: string) => void;
  warn: (message: string) => void;
  error: (message: string) => void;
}

/** What each agent hook gets besides its event (fields are optional on many paths). */
export interface AgentHookContext {
  runId?: string;
  agentId?: string;
  sessionKey?: string;
  sessionId?: string;
  workspaceDir?: string;
  channel?: string;
  chatId?: string;
  senderId?: string;
  trigger?: string;
}

export interface BeforePromptBuildEvent {
  prompt: string;
  currentUserMessage?: string;
  currentUserMessageId?: string;
  messages: unknown[];
}

export interface BeforePromptBuildResult {
  prependContext?: string;
  appendContext?: string;
  prependSystemContext?: string;
  appendSystemContext?: string;
}

/** `before_message_write`: a message is about to be appended to the session's history (synchronous). */
export interface BeforeMessageWriteEvent {
  message: unknown;
  sessionKey?: string;
  agentId?: string;
}

/** `{ message }` replaces what is written; `{ block: true }` writes nothing. */
export interface BeforeMessageWriteResult {
  block?: boolean;
  message?: unknown;
}

export interface AgentEndEvent {
  runId?: string;
  messages: unknown[];
  success: boolean;
  error?: string;
  durationMs?: number;
}

/** `after_tool_call`: a tool call finished (the host does not wait for the handler). */
export interface AfterToolCallEvent {
  toolName: string;
  params: Record<string, unknown>;
  runId?: string;
  toolCallId?: string;
  /** The tool's result (`{ content: [{ type: 'text', text }], details }` for plugin tools). */
  result?: unknown;
  error?: string;
  durationMs?: number;
}

/** What `after_tool_call` gets besides its event. */
export interface ToolHookContext {
  toolName: string;
  agentId?: string;
  sessionKey?: string;
  sessionId?: string;
  runId?: string;
  toolCallId?: string;
}

export interface ToolResult {
  content: { type: 'text'; text: string }[];
  details: unknown;
}

export interface AgentTool {
  name: string;
  label: string;
  description: string;
  parameters: Record<string, unknown>;
  execute(
    toolCallId: string,
    params: unknown,
    signal?: AbortSignal,
    onUpdate?: (partial: ToolResult) => void,
  ): Promise<ToolResult>;
}

/** What a tool factory gets: who is calling. */
export interface ToolFactoryContext {
  agentId?: string;
  sessionKey?: string;
  sessionId?: string;
  workspaceDir?: string;
}

export interface HookOptions {
  priority?: number;
  timeoutMs?: number;
}

/**
 * `api.runtime.system` (openclaw 2026.9.x): queue a system event for a session (held in the
 * gateway's memory, at most 20 per session, read when the session's next prompt is prepared)
 * and ask for a heartbeat run. A `hook` wake with `immediate` intent, a `hook:` reason and a
 * session key runs that session's turn even when no heartbeat schedule is configured.
 */
export interface OpenClawSystemRuntime {
  enqueueSystemEvent(
    text: string,
    options: { sessionKey: string; agentId?: string; contextKey?: string | null },
  ): boolean;
  requestHeartbeat(options: {
    source: 'hook';
    intent: 'immediate';
    reason?: string;
    agentId?: string;
    sessionKey?: string;
  }): void;
}

/**
 * A context engine (`api.registerContextEngine`, selected by `plugins.slots.contextEngine`):
 * the part of OpenClaw 2026.9.x's `ContextEngine` this plugin implements. `assemble` gets the
 * session's messages before the current turn and returns what the model is sent; the transcript
 * semantics are what OpenClaw asks of an engine on turns admitted through the gateway (else it
 * uses its legacy engine for the turn).
 */
export interface OpenClawContextEngine {
  info: {
    id: string;
    name: string;
    version?: string;
    ownsCompaction?: boolean;
    transcriptSemantics?: {
      currentTurnFence: 'before-current-turn-entry-v1';
      turnAdvancementIdempotency: 'atomic-idempotent-v1';
    };
  };
  ingest(params: { sessionId: string; sessionKey?: string; message: unknown }): Promise<{
    ingested: boolean;
  }>;
  assemble(params: {
    sessionId: string;
    sessionKey?: string;
    messages: unknown[];
    tokenBudget?: number;
  }): Promise<{ messages: unknown[]; estimatedTokens: number }>;
  compact(params: Record<string, unknown>): Promise<unknown>;
  commitTurn(params: {
    advancementKey: string;
    sessionId: string;
    sessionKey?: string;
    messages: unknown[];
  }): Promise<{ status: 'committed' | 'duplicate' }>;
}

export interface OpenClawPluginApi {
  id: string;
  pluginConfig?: Record<string, unknown>;
  /** OpenClaw's whole config (this plugin reads which context engine is selected). */
  config?: { plugins?: { slots?: { contextEngine?: string } } };
  /** Registers a context engine under `id` (OpenClaw 2026.3 and later). */
  registerContextEngine?(id: string, factory: () => OpenClawContextEngine): void;
  logger: PluginLogger;
  runtime?: {
    state?: { resolveStateDir?: () => string };
    system?: OpenClawSystemRuntime;
    /** The gateway's own model (the agent's provider and credentials). */
    llm?: {
      complete(params: {
        messages: { role: 'user'; content: string }[];
        systemPrompt?: string;
        temperature?: number;
        purpose?: string;
        signal?: AbortSignal;
      }): Promise<{ text: string; model?: string }>;
    };
  };
  registerTool(
    tool: AgentTool | ((context: ToolFactoryContext) => AgentTool | AgentTool[] | null | undefined),
    options?: { name?: string; names?: string[]; optional?: boolean },
  ): void;
  registerService(service: {
    id: string;
    start: () => void | Promise<void>;
    stop?: () => void | Promise<void>;
  }): void;
  on(
    hook: 'before_prompt_build',
    handler: (
      event: BeforePromptBuildEvent,
      context: AgentHookContext,
    ) => Promise<BeforePromptBuildResult | undefined>,
    options?: HookOptions,
  ): void;
  on(
    hook: 'before_message_write',
    handler: (
      event: BeforeMessageWriteEvent,
      context: { agentId?: string; sessionKey?: string },
    ) => BeforeMessageWriteResult | undefined,
    options?: HookOptions,
  ): void;
  on(
    hook: 'agent_end',
    handler: (event: AgentEndEvent, context: AgentHookContext) => Promise<void>,
    options?: HookOptions,
  ): void;
  on(
    hook: 'after_tool_call',
    handler: (event: AfterToolCallEvent, context: ToolHookContext) => Promise<void> | void,
    options?: HookOptions,
  ): void;
}

export interface PluginEntry {
  id: string;
  name: string;
  description: string;
  register(api: OpenClawPluginApi): void;
}
