import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { CtxbusError } from '@ctxbus/core/contract';
import { isNode, LineCounter, parseDocument } from 'yaml';
import { z } from 'zod';

// Seed 003's global config, ~/.config/context-bus/config.yaml: which models to switch through,
// at which usage, how strict a switch is about the handoff, and who is told. Every key is
// optional; what is missing takes the seed's value.

const percent = z.number().min(0).max(100);
const model = z.string().min(1).max(100);

export const handoffConfigSchema = z.strictObject({
  /** The agent's workspace, holding .context-bus/ (`~` expanded); default: the current directory. */
  workspace: z.string().min(1).nullish(),
  models: z
    .strictObject({
      primary: model.default('opus'),
      secondary: model.default('codex'),
      tertiary: model.nullish(),
    })
    .prefault({}),
  thresholds: z
    .strictObject({
      /** Usage at which the monitor switches to the next model. */
      switch_to_secondary: percent.default(95),
      /** Away from the primary, the monitor switches back once its runtime reports it at or below this. */
      switch_back: percent.default(50),
      /** Usage from which heartbeats and the monitor write rolling-summary.md. */
      proactive_summary: percent.default(80),
    })
    // At or above switch_back the monitor would switch back to a model it had just left.
    .refine((thresholds) => thresholds.switch_back < thresholds.switch_to_secondary, {
      message:
        'switch_back must be below switch_to_secondary (else the monitor switches back at once)',
      path: ['switch_back'],
    })
    .prefault({}),
  safety: z
    .strictObject({
      max_handoff_age_minutes: z
        .number()
        .positive()
        .max(7 * 24 * 60)
        .default(5),
      /** A switch waits for a heartbeat when the handoff is not marked ready. */
      require_handoff_ready: z.boolean().default(true),
      /** A switch asks for a final heartbeat and waits for it (else it only checks). */
      retry_on_incomplete: z.boolean().default(true),
      max_wait_seconds: z.number().min(0).max(3_600).default(60),
    })
    .prefault({}),
  notifications: z
    .strictObject({
      /** Publish heartbeats and switches to the hub (when one is configured). */
      enabled: z.boolean().default(true),
      /** `telegram`: switches are also marked for the Telegram bot to push (it serves the chats). */
      channel: z.enum(['bus', 'telegram']).default('bus'),
      telegram: z
        .strictObject({ chat_id: z.union([z.string(), z.number()]).transform(String).default('') })
        .prefault({}),
    })
    .prefault({}),
});

export type HandoffConfig = z.infer<typeof handoffConfigSchema>;

/** The seed's values: what a missing file means. */
export const DEFAULT_HANDOFF_CONFIG: HandoffConfig = handoffConfigSchema.parse({});

/** $CONTEXT_BUS_CONFIG, else $XDG_CONFIG_HOME/context-bus/config.yaml, else ~/.config/context-bus/config.yaml. */
export function handoffConfigPath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.CONTEXT_BUS_CONFIG) return resolve(env.CONTEXT_BUS_CONFIG);
  return join(env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'context-bus', 'config.yaml');
}

function expandHome(path: string): string {
  return path === '~' || path.startsWith('~/') ? join(homedir(), path.slice(1)) : path;
}

/** Parses config.yaml text; errors are `validation_failed`, `FILE:LINE:COL: FIELD: problem`. */
export function parseHandoffConfig(text: string, file = 'config.yaml'): HandoffConfig {
  const counter = new LineCounter();
  const document = parseDocument(text, { lineCounter: counter, prettyErrors: false });
  const at = (offset: number) => {
    const { line, col } = counter.linePos(offset);
    return `${file}:${line}:${col}`;
  };
  const syntax = document.errors[0];
  if (syntax) {
    throw new CtxbusError(
      'validation_failed',
      `${at(syntax.pos[0])}: ${syntax.message.split('\n')[0]}`,
    );
  }
  const parsed = handoffConfigSchema.safeParse(document.toJS() ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = (issue?.path ?? []).map((key) => (typeof key === 'symbol' ? String(key) : key));
    // The node at the path, else its nearest ancestor the file has.
    let offset = 0;
    for (let depth = path.length; depth >= 0; depth--) {
      const node = document.getIn(path.slice(0, depth), true);
      if (isNode(node) && node.range) {
        offset = node.range[0];
        break;
      }
    }
    const unknown =
      issue?.code === 'unrecognized_keys' ? `unknown key ${issue.keys.join(', ')}` : undefined;
    throw new CtxbusError(
      'validation_failed',
      `${at(offset)}: ${path.join('.') || 'config'}: ${unknown ?? issue?.message ?? 'invalid'}`,
      { details: { file, field: path.join('.') } },
    );
  }
  const config = parsed.data;
  return config.workspace ? { ...config, workspace: expandHome(config.workspace) } : config;
}

/** The config at `path` (default `handoffConfigPath()`); the seed's defaults when there is none. */
export function loadHandoffConfig(path = handoffConfigPath()): HandoffConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return DEFAULT_HANDOFF_CONFIG;
    throw new CtxbusError('validation_failed', `${path}: ${(error as Error).message}`);
  }
  return parseHandoffConfig(text, path);
}

/** The model after `current` in primary -> secondary -> tertiary; null at the end of the chain. */
export function nextModel(config: HandoffConfig, current: string): string | null {
  const chain = [config.models.primary, config.models.secondary, config.models.tertiary].filter(
    (name): name is string => Boolean(name),
  );
  const index = chain.indexOf(current);
  if (index === -1) return config.models.secondary;
  return chain[index + 1] ?? null;
}
