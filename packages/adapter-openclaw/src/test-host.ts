// Shared by this package's tests: a real hub in process (the test kit's), and a recorder of
// what the plugin registers with OpenClaw (the real OpenClaw loads it in test/e2e). Not built.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CtxbusClient } from '@ctxbus/client';
import { createClient } from '@ctxbus/client';
import type { RunningHub } from '@ctxbus/hub';
import { mintToken, startHub } from '@ctxbus/hub';
import type { Store } from '@ctxbus/store';
import { REPO_CAPABILITIES, startInProcessHub } from '@ctxbus/test-kit/in-process-hub';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import type {
  AfterToolCallEvent,
  AgentEndEvent,
  AgentHookContext,
  AgentTool,
  BeforeMessageWriteEvent,
  BeforeMessageWriteResult,
  BeforePromptBuildResult,
  OpenClawContextEngine,
  OpenClawPluginApi,
  ToolFactoryContext,
  ToolHookContext,
} from './openclaw-sdk.js';

export { REPO_CAPABILITIES } from '@ctxbus/test-kit/in-process-hub';

export interface TestHub {
  url: string;
  store: Store;
  running: RunningHub;
  mint(runtime: string, teamId?: string): Promise<string>;
  client(runtime: string): Promise<CtxbusClient>;
  close(): Promise<void>;
}

export async function startTestHub(): Promise<TestHub> {
  const hub = await startInProcessHub(
    { startHub, mintToken },
    { hub: { capabilities: { file: REPO_CAPABILITIES, pollMs: 0 } } },
  );
  const mint = async (runtime: string, teamId?: string) => (await hub.mint(runtime, teamId)).token;
  return {
    url: hub.url,
    store: hub.store,
    running: hub.running,
    mint,
    client: async (runtime) => createClient({ url: hub.url, token: await mint(runtime) }),
    close: () => hub.close(),
  };
}

/** What a test file of the plugin works with: set before each of its tests. */
export interface PluginTestbed {
  hub: TestHub;
  /** OpenClaw's runtime token. */
  token: string;
  /** Claude Code's side of the team: a writer, a reader, a worker over REST. */
  claude: CtxbusClient;
  /** The plugin's state directory, fresh for each test. */
  stateDir: string;
}

/**
 * One hub for the file (OpenClaw's token, Claude Code's client) and a fresh state directory for
 * each test, handed to `use` whenever either changes.
 */
export function usePluginTestbed(prefix: string, use: (bed: PluginTestbed) => void): void {
  let bed: Omit<PluginTestbed, 'stateDir'> | undefined;
  let stateDir = '';
  beforeAll(async () => {
    const hub = await startTestHub();
    bed = { hub, token: await hub.mint('openclaw'), claude: await hub.client('claude-code') };
  });
  afterAll(() => bed?.hub.close());
  beforeEach(() => {
    stateDir = mkdtempSync(join(tmpdir(), prefix));
    if (bed) use({ ...bed, stateDir });
  });
  afterEach(() => rmSync(stateDir, { recursive: true, force: true }));
}

/** A URL where nothing listens: a port the OS handed out and that was closed again. */
export async function closedPortUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 9;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

type PromptHandler = (
  event: { prompt: string; messages: unknown[] },
  context: AgentHookContext,
) => Promise<BeforePromptBuildResult | undefined>;
type EndHandler = (event: AgentEndEvent, context: AgentHookContext) => Promise<void>;
type WriteHandler = (
  event: BeforeMessageWriteEvent,
  context: { agentId?: string; sessionKey?: string },
) => BeforeMessageWriteResult | undefined;
type ToolHandler = (event: AfterToolCallEvent, context: ToolHookContext) => Promise<void> | void;
type ToolFactory = (context: ToolFactoryContext) => AgentTool | AgentTool[] | null | undefined;

/** What the plugin registered, and a way to run it as OpenClaw would. */
export interface RecordingHost {
  api: OpenClawPluginApi;
  logs: { level: string; message: string }[];
  hooks: { name: string; timeoutMs: number | undefined }[];
  toolNames: string[] | undefined;
  /** Every tool factory's names, in registration order. */
  toolGroups: (string[] | undefined)[];
  services: { id: string; start: () => void | Promise<void>; stop?: () => void | Promise<void> }[];
  /** The context engines registered, by id (made by their factories). */
  engines: Map<string, OpenClawContextEngine>;
  /** `before_prompt_build` for a user prompt (default "hello"), with the session's history. */
  promptBuild(
    context: AgentHookContext,
    prompt?: string,
    messages?: unknown[],
  ): Promise<BeforePromptBuildResult | undefined>;
  /** `before_message_write`: the message OpenClaw would append to the session's history. */
  writeMessage(message: unknown, context: AgentHookContext): unknown;
  agentEnd(event: AgentEndEvent, context: AgentHookContext): Promise<void>;
  afterToolCall(event: AfterToolCallEvent, context: ToolHookContext): Promise<void>;
  tools(context: ToolFactoryContext): AgentTool[];
}

/**
 * `runtime`: what the host offers as `api.runtime` (its model helper, say); the gateway's model
 * itself is outside this package's tests, so a test gives the answers it would.
 */
/** The plugin's hub timeout in the recording host unless a test sets one (the config's maximum). */
export const TEST_HUB_TIMEOUT_MS = 10_000;

export function recordingHost(
  pluginConfig: Record<string, unknown>,
  runtime?: OpenClawPluginApi['runtime'],
  openclawConfig?: OpenClawPluginApi['config'],
): RecordingHost {
  const logs: { level: string; message: string }[] = [];
  const hooks: { name: string; timeoutMs: number | undefined }[] = [];
  let prompt: PromptHandler | undefined;
  let end: EndHandler | undefined;
  let write: WriteHandler | undefined;
  let afterTool: ToolHandler | undefined;
  const factories: ToolFactory[] = [];
  const toolGroups: (string[] | undefined)[] = [];
  const services: RecordingHost['services'] = [];
  const engines = new Map<string, OpenClawContextEngine>();
  const log = (level: string) => (message: string) => logs.push({ level, message });
  const api = {
    id: 'ctxbus',
    // The hub's answers may take seconds on a loaded machine: a test's hub gets the longest
    // wait the config allows unless the test sets one (a case about a hung hub sets it short).
    pluginConfig: { timeoutMs: TEST_HUB_TIMEOUT_MS, ...pluginConfig },
    ...(runtime && { runtime }),
    ...(openclawConfig && { config: openclawConfig }),
    logger: { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') },
    registerTool(tool: ToolFactory, options?: { names?: string[] }) {
      factories.push(tool);
      toolGroups.push(options?.names);
    },
    registerService(service: RecordingHost['services'][number]) {
      services.push(service);
    },
    registerContextEngine(id: string, factory: () => OpenClawContextEngine) {
      engines.set(id, factory());
    },
    on(
      name: string,
      handler: PromptHandler | EndHandler | ToolHandler | WriteHandler,
      options?: { timeoutMs?: number },
    ) {
      hooks.push({ name, timeoutMs: options?.timeoutMs });
      if (name === 'before_prompt_build') prompt = handler as PromptHandler;
      if (name === 'agent_end') end = handler as EndHandler;
      if (name === 'before_message_write') write = handler as unknown as WriteHandler;
      if (name === 'after_tool_call') afterTool = handler as ToolHandler;
    },
  } as unknown as OpenClawPluginApi;
  return {
    api,
    logs,
    hooks,
    get toolNames() {
      return toolGroups[0];
    },
    toolGroups,
    services,
    engines,
    promptBuild: (context, text = 'hello', messages = []) =>
      prompt ? prompt({ prompt: text, messages }, context) : Promise.resolve(undefined),
    writeMessage(message, context) {
      const result = write?.({ message }, context);
      if (result?.block) return null;
      return result?.message ?? message;
    },
    agentEnd: (event, context) => (end ? end(event, context) : Promise.resolve()),
    afterToolCall: async (event, context) => {
      await afterTool?.(event, context);
    },
    tools(context) {
      return factories.flatMap((factory) => {
        const made = factory(context);
        return made ? (Array.isArray(made) ? made : [made]) : [];
      });
    },
  };
}

/** An assistant reply as OpenClaw's transcript holds it. */
export function reply(text: string): unknown[] {
  return [
    { role: 'user', content: [{ type: 'text', text: 'go on' }] },
    { role: 'assistant', content: [{ type: 'text', text }] },
  ];
}
