import type { CtxbusClient } from '@ctxbus/client';
import { createClient } from '@ctxbus/client';
import { CONTEXT_ENGINE_ID, ctxbusContextEngine } from './context-engine.js';
import type { HookDeps } from './hooks.js';
import {
  afterToolCall,
  agentEnd,
  BLOCK_OPEN,
  beforeMessageWrite,
  beforePromptBuild,
  DEFAULT_AGENT_ID,
  deliver,
} from './hooks.js';
import { livePushService, recordSessionTurn } from './live-service.js';
import type { OpenClawPluginApi } from './openclaw-sdk.js';
import type { ResolvedConfig } from './plugin-config.js';
import { resolvePluginConfig } from './plugin-config.js';
import type { SharedContextSetup } from './shared-context.js';
import {
  gatewayModel,
  SHARED_CONTEXT_TOOL_NAMES,
  setUpSharedContext,
  sharedContextBridgeService,
  sharedContextTools,
} from './shared-context.js';
import { agentTools, PLUGIN_TOOL_NAMES, pluginLogger, toAgentTool } from './tools.js';

export interface RegisterOptions {
  env?: Record<string, string | undefined>;
  now?: () => Date;
}

/** Tool calls may wait on the hub longer than a turn's start should. */
const TOOL_TIMEOUT_MS = 10_000;

/**
 * Wires ctxbus into OpenClaw: `before_prompt_build` injects the team context, `agent_end`
 * records the turn through the outbox, and the ctxbus tools are registered per calling agent.
 * A wrong config is logged and leaves OpenClaw as it was; a missing or unreachable hub never
 * fails a turn.
 */
export function registerCtxbus(
  api: OpenClawPluginApi,
  options: RegisterOptions = {},
): HookDeps | null {
  let config: ResolvedConfig;
  try {
    config = resolvePluginConfig(api.pluginConfig, {
      ...(options.env && { env: options.env }),
      ...(api.runtime?.state?.resolveStateDir && {
        openclawStateDir: api.runtime.state.resolveStateDir(),
      }),
    });
  } catch (error) {
    api.logger.error(`ctxbus: plugin disabled: ${(error as Error).message}`);
    return null;
  }
  const { token } = config;
  if (!token) {
    api.logger.warn(
      'ctxbus: no hub token (plugins.entries.ctxbus.config.token or CTXBUS_TOKEN); turns go on without team context and writes wait in the outbox',
    );
  }
  const client = token
    ? createClient({ url: config.url, token, timeoutMs: config.timeoutMs, retries: 0 })
    : null;
  const toolClient = token
    ? createClient({ url: config.url, token, timeoutMs: TOOL_TIMEOUT_MS })
    : null;
  const now = options.now ?? (() => new Date());
  let shared: SharedContextSetup | undefined;
  try {
    shared = setUpSharedContext(config, now);
  } catch (error) {
    api.logger.error(`ctxbus: shared-context directory disabled: ${(error as Error).message}`);
  }
  const deps: HookDeps = {
    client,
    config,
    logger: api.logger,
    now,
    ...(shared && { localContext: shared.read }),
    contextEngine: api.config?.plugins?.slots?.contextEngine === CONTEXT_ENGINE_ID,
  };
  // Gateway turns write the bare prompt to the history: the engine shows each earlier prompt with
  // the block it was sent with (selected by `ctxbus install openclaw`: plugins.slots.contextEngine).
  api.registerContextEngine?.(CONTEXT_ENGINE_ID, () =>
    ctxbusContextEngine({ stateDir: config.stateDir, open: BLOCK_OPEN, logger: api.logger }),
  );
  api.on(
    'before_prompt_build',
    async (event, context) => {
      // The live push's sessions: any session that had a turn (this instance or an earlier one).
      recordSessionTurn(
        config.stateDir,
        { sessionKey: context.sessionKey, agentId: context.agentId ?? DEFAULT_AGENT_ID },
        now(),
      );
      try {
        return await beforePromptBuild(deps, context, event);
      } catch (error) {
        api.logger.warn(`ctxbus: no team context this turn: ${(error as Error).message}`);
        return undefined;
      }
    },
    // Our own requests give up after timeoutMs; the host's budget is a backstop.
    { timeoutMs: config.timeoutMs * 2 + 500 },
  );
  // The injected block is written into the session's history with the prompt it went before.
  api.on('before_message_write', (event, context) => beforeMessageWrite(event, context));
  api.on('agent_end', (event, context) => agentEnd(deps, event, context));
  // Each tool result becomes a tool snippet of the agent's later turns (seed 002's source 4).
  api.on('after_tool_call', (event, context) => afterToolCall(deps, event, context));
  api.registerTool(
    (context) => (toolClient ? agentTools(toolClient, config, api.logger, context) : null),
    { names: [...PLUGIN_TOOL_NAMES] },
  );
  if (shared) {
    const { paths } = shared;
    const log = pluginLogger(api.logger);
    const llm = gatewayModel(api, config.sharedContext.semantic);
    api.registerTool(
      (context) =>
        sharedContextTools(
          paths,
          { session: context.agentId, fallback: DEFAULT_AGENT_ID },
          now,
          llm,
        ).map((tool) => toAgentTool(() => tool, log)),
      { names: [...SHARED_CONTEXT_TOOL_NAMES] },
    );
    if (client) api.registerService(sharedContextBridgeService(paths, client, config, log));
  }
  registerLivePush(api, client, config, now);
  // Whatever waited in the outbox while the hub was away goes out now (not awaited).
  if (client) deliver(deps, []).catch(() => undefined);
  return deps;
}

/** The live push's gateway service, when the install turned it on and the host can push. */
function registerLivePush(
  api: OpenClawPluginApi,
  client: CtxbusClient | null,
  config: ResolvedConfig,
  now: () => Date,
): void {
  if (!config.livePush) return;
  const system = api.runtime?.system;
  if (!client || !system?.enqueueSystemEvent || !system.requestHeartbeat) {
    api.logger.warn(
      `ctxbus: live push is on but ${client ? 'this OpenClaw has no system events' : 'there is no hub token'}; items reach sessions at their next turn`,
    );
    return;
  }
  api.registerService(
    livePushService({ client, system, stateDir: config.stateDir, logger: api.logger, now }),
  );
}
