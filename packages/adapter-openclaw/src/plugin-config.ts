import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { defaultDataDir } from '@ctxbus/client/turn-log';
import { DEFAULT_HUB_URL, parseOrThrow, tagSchema } from '@ctxbus/core/contract';
import { z } from 'zod';

/** The plugin's id in OpenClaw (`plugins.entries.ctxbus`). */
export const PLUGIN_ID = 'ctxbus';
/** The default budget of the context each turn gets, in tokens (the `openclaw` resolver's). */
export const DEFAULT_TOKEN_BUDGET = 2_000;

/** An OpenClaw agent id, as `agents.list[].id` spells it. */
const agentIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'an agent id is 1-64 letters, digits, . _ -');

const agentSettingsSchema = z.strictObject({
  inject: z
    .boolean()
    .optional()
    .describe('Inject the team context into this agent’s turns (default true).'),
  tags: z
    .array(tagSchema)
    .max(16)
    .optional()
    .describe('Tags added to everything this agent writes to the bus.'),
  watchTags: z
    .array(tagSchema)
    .max(16)
    .optional()
    .describe(
      'Show this agent only changes carrying one of these tags in its "changed since your last turn" list (default: every change). The team bundle is not filtered.',
    ),
});

/**
 * `plugins.entries.ctxbus.config` in openclaw.json. Every field is optional: the hub URL and
 * token fall back to $CTXBUS_URL and $CTXBUS_TOKEN, so a config can hold no secret.
 */
export const pluginConfigSchema = z.strictObject({
  url: z.url().optional().describe('Hub URL (default: $CTXBUS_URL, else the local hub).'),
  token: z
    .string()
    .min(1)
    .optional()
    .describe('Runtime token for openclaw (default: $CTXBUS_TOKEN).'),
  tokenBudget: z
    .int()
    .min(200)
    .max(32_000)
    .optional()
    .describe(`Tokens of context injected per turn (default ${DEFAULT_TOKEN_BUDGET}).`),
  timeoutMs: z
    .int()
    .min(50)
    .max(10_000)
    .optional()
    .describe('How long a turn waits for the hub before going on without it (default 1500).'),
  stateDir: z
    .string()
    .optional()
    .describe('Where the outbox and per-agent state live (default: <OpenClaw state dir>/ctxbus).'),
  captureDecisions: z
    .boolean()
    .optional()
    .describe('Record lines "Decision: ..." of a reply as team decisions (default true).'),
  agents: z
    .record(agentIdSchema, agentSettingsSchema)
    .optional()
    .describe('Per-agent settings, by OpenClaw agent id.'),
  sharedContextEnabled: z
    .boolean()
    .optional()
    .describe('Use the shared-context directory (seed 001): inject priorities (default false).'),
  sharedContextDir: z
    .string()
    .optional()
    .describe('The shared-context directory (default ~/.openclaw/workspace/shared-context).'),
  turnSnapshots: z
    .boolean()
    .optional()
    .describe(
      'Record each turn context (seed 002) under <dataDir>/agents/<agent>/context/<session>.jsonl for `ctxbus replay` (default: $CTXBUS_TURN_SNAPSHOTS, else false).',
    ),
  dataDir: z
    .string()
    .optional()
    .describe(
      'The ctxbus data directory for turn snapshots and context_build_error audit lines (default: $CTXBUS_DATA, else the platform data directory).',
    ),
  sharedContextMaxInjectChars: z
    .int()
    .min(200)
    .max(60_000)
    .optional()
    .describe('Most characters of priorities and roundtable injected per turn (default 4000).'),
  crossSignalsSemanticEnabled: z
    .boolean()
    .optional()
    .describe(
      "Let the gateway's own model merge fuzzy duplicates in cross-signals (seed 001's semantic enhancer; default false).",
    ),
  livePush: z
    .boolean()
    .optional()
    .describe(
      'Push blocking items other runtimes write (and approval requests for a person) into active OpenClaw sessions as system events, with a heartbeat so an idle session takes a turn at once (default false; `ctxbus install openclaw --live`).',
    ),
  crossSignalsSemanticTimeoutMs: z
    .int()
    .min(1_000)
    .max(600_000)
    .optional()
    .describe(
      'How long the semantic enhancer may take before the deterministic result stands (default 15000).',
    ),
});

export type PluginConfig = z.infer<typeof pluginConfigSchema>;
export type AgentSettings = z.infer<typeof agentSettingsSchema>;

export interface ResolvedConfig {
  url: string;
  token: string | undefined;
  tokenBudget: number;
  timeoutMs: number;
  stateDir: string;
  captureDecisions: boolean;
  agents: Record<string, AgentSettings>;
  sharedContext: {
    enabled: boolean;
    dir: string | undefined;
    maxInjectChars: number;
    /** Seed 001's semantic enhancer: the gateway's model, off unless enabled. */
    semantic: { enabled: boolean; timeoutMs: number };
  };
  /** Live push into active sessions (`ctxbus install openclaw --live`). */
  livePush: boolean;
  /** Seed 002's turn log: where snapshots and failed builds go, and whether snapshots are on. */
  turnLog: { dataDir: string; snapshots: boolean };
}

type Env = Record<string, string | undefined>;

function expandHome(path: string): string {
  return path === '~' || path.startsWith('~/') ? join(homedir(), path.slice(1)) : path;
}

/**
 * The plugin's settings from its OpenClaw config and the environment. Throws a
 * `validation_failed` CtxbusError naming the field when the config is wrong.
 */
export function resolvePluginConfig(
  raw: unknown,
  options: { env?: Env; openclawStateDir?: string } = {},
): ResolvedConfig {
  const env = options.env ?? process.env;
  const config = parseOrThrow(pluginConfigSchema, raw ?? {}, `plugins.entries.${PLUGIN_ID}.config`);
  const stateRoot =
    options.openclawStateDir ?? env.OPENCLAW_STATE_DIR ?? join(homedir(), '.openclaw');
  const stateDir = expandHome(config.stateDir ?? join(stateRoot, 'ctxbus'));
  const sharedDir = config.sharedContextDir ? expandHome(config.sharedContextDir) : undefined;
  return {
    url: config.url ?? env.CTXBUS_URL ?? DEFAULT_HUB_URL,
    token: config.token ?? env.CTXBUS_TOKEN,
    tokenBudget: config.tokenBudget ?? DEFAULT_TOKEN_BUDGET,
    timeoutMs: config.timeoutMs ?? 1_500,
    stateDir: isAbsolute(stateDir) ? stateDir : join(stateRoot, stateDir),
    captureDecisions: config.captureDecisions ?? true,
    agents: config.agents ?? {},
    sharedContext: {
      enabled: config.sharedContextEnabled ?? false,
      dir: sharedDir,
      maxInjectChars: config.sharedContextMaxInjectChars ?? 4_000,
      semantic: {
        enabled: config.crossSignalsSemanticEnabled ?? false,
        timeoutMs: config.crossSignalsSemanticTimeoutMs ?? 15_000,
      },
    },
    livePush: config.livePush ?? false,
    turnLog: {
      dataDir: config.dataDir ? expandHome(config.dataDir) : defaultDataDir(env),
      snapshots: config.turnSnapshots ?? /^(1|true|yes|on)$/i.test(env.CTXBUS_TURN_SNAPSHOTS ?? ''),
    },
  };
}

/** The JSON Schema of the config, as openclaw.plugin.json's `configSchema` holds it. */
export function pluginConfigJsonSchema(): Record<string, unknown> {
  const { $schema: _ignored, ...schema } = z.toJSONSchema(pluginConfigSchema, {
    io: 'input',
    target: 'draft-07',
  }) as Record<string, unknown>;
  return schema;
}
