import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { createClient } from '@ctxbus/client';
import type { ContextItemInput } from '@ctxbus/core/contract';
import { CtxbusError, LIMITS } from '@ctxbus/core/contract';
import { sliceText } from '@ctxbus/core/light';
import type { Handoff, HandoffConfig, HandoffPaths, MonitorAction } from '@ctxbus/handoff';
import {
  handoffConfigPath,
  handoffPaths,
  loadHandoffConfig,
  readHandoff,
  resumeNote,
} from '@ctxbus/handoff';
import { configDir } from '../credentials.js';
import { findHubUrl, hubUrl, runtimeToken } from '../hub-target.js';
import { type MonitorJob, monitorJobName } from './handoff-schedule.js';

// `ctxbus handoff ...`: seed 003's model-switch handoff in an agent's workspace
// (`.context-bus/`), optionally published to the hub so the other runtimes see the switch.

export interface CommonOptions {
  workspace?: string;
  config?: string;
  json?: boolean;
  url?: string;
  token?: string;
  /** true: --publish; false: --no-publish; undefined: config.yaml decides. */
  publish?: boolean;
}

function configOf(options: CommonOptions): HandoffConfig {
  return loadHandoffConfig(options.config ? resolve(options.config) : handoffConfigPath());
}

function workspaceOf(options: CommonOptions, config?: HandoffConfig): string {
  return resolve(options.workspace ?? config?.workspace ?? process.cwd());
}

/** What every subcommand works on: the config, the workspace it names, its handoff files. */
export function targetOf(options: CommonOptions) {
  const config = configOf(options);
  const workspace = workspaceOf(options, config);
  return { config, workspace, paths: handoffPaths(workspace) };
}

const HEARTBEAT_RULES_MARKER = '<!-- ctxbus handoff rules -->';

const HEARTBEAT_RULES = `${HEARTBEAT_RULES_MARKER}
## Context Bus (model-switch handoff)

- At session start, read \`.context-bus/handoff.json\`. If \`model.previous\` is set, you are
  continuing another model's work: read \`.context-bus/rolling-summary.md\` and say
  "Continuing from <previous>'s work on <task>".
- After each meaningful step, record it: \`ctxbus handoff heartbeat --model <you> --action "..."\`
  (with \`--next\`, \`--decision\`, \`--blocker\`, \`--usage\` when they change).
- When \`.context-bus/heartbeat-request.json\` exists, a model switch is waiting for your final
  heartbeat: write one now, with your next steps (the switch goes ahead without it after
  config.yaml's \`safety.max_wait_seconds\`).
- Never edit \`.context-bus/\` by hand: every file there is checksummed.
`;

/** Creates `.context-bus/` and puts the rules in HEARTBEAT.md (added once, never replacing it). */
export function init(workspace: string): {
  kind: 'openclaw' | 'project';
  heartbeatFile: string;
  added: boolean;
} {
  const openclaw =
    existsSync(join(workspace, 'AGENTS.md')) && existsSync(join(workspace, 'HEARTBEAT.md'));
  const heartbeatFile = join(workspace, 'HEARTBEAT.md');
  const current = existsSync(heartbeatFile) ? readFileSync(heartbeatFile, 'utf8') : null;
  let added = false;
  if (current === null) {
    writeFileSync(heartbeatFile, `# Heartbeat\n\n${HEARTBEAT_RULES}`);
    added = true;
  } else if (!current.includes(HEARTBEAT_RULES_MARKER)) {
    writeFileSync(heartbeatFile, `${current.replace(/\n*$/, '\n\n')}${HEARTBEAT_RULES}`);
    added = true;
  }
  return { kind: openclaw ? 'openclaw' : 'project', heartbeatFile, added };
}

/**
 * The handoff as a status item keyed per workspace: the newest supersedes the last. A switch is
 * an `attention` item, the seed's notification ("Switched opus -> codex (96%). Context
 * preserved."), which the Telegram bot pushes to its chats; heartbeats are background.
 */
export function handoffItem(
  workspace: string,
  handoff: Handoff,
  event: 'heartbeat' | 'switch',
  config: HandoffConfig,
  usageBefore: number | null = null,
): ContextItemInput {
  const switched = event === 'switch' && handoff.model.previous;
  const note = resumeNote(handoff);
  const task = handoff.task.description || 'no task';
  const incomplete = handoff.model.switch_reason?.endsWith('(incomplete handoff)');
  const content = [
    note ??
      `Model ${handoff.model.current}${handoff.model.usage_percent !== null ? ` at ${handoff.model.usage_percent}% of its limit` : ''}.`,
    // The resume note lists the next steps already.
    !note && handoff.context.next_steps.length
      ? `Next: ${handoff.context.next_steps.join('; ')}`
      : '',
  ]
    .filter(Boolean)
    .join('\n');
  return {
    type: 'status',
    // Each field within the hub's limits: a long task or a large handoff is cut for the bus
    // (the workspace's handoff.json keeps it whole), never a publish the hub refuses.
    title: clip(
      switched
        ? `Switched ${handoff.model.previous} -> ${handoff.model.current}${usageBefore !== null ? ` (${usageBefore}%)` : ''}: ${task}. ${incomplete ? 'Handoff incomplete: check it.' : 'Context preserved.'}`
        : `${handoff.model.current} working on ${task}`,
      LIMITS.titleChars,
    ),
    // What a runtime shown summaries only (OpenClaw's plain text) needs of the handoff.
    summary: clip(
      handoffSummary(handoff) || content.split('\n', 1)[0] || task,
      LIMITS.summaryChars,
    ),
    content: clip(content, HANDOFF_CONTENT_CHARS),
    key: handoffKey(workspace),
    relevanceTags: [
      'handoff',
      modelTag(handoff.model.current),
      ...(switched ? ['model-switch'] : []),
      ...(switched && config.notifications.channel === 'telegram' ? ['telegram'] : []),
    ],
    ...(switched && { urgency: 'attention' as const }),
  };
}

/** The most a handoff's item carries of its text (the hub takes up to 100,000 characters). */
const HANDOFF_CONTENT_CHARS = 20_000;

function clip(text: string, length: number): string {
  return text.length <= length ? text : `${sliceText(text, length - 1)}\u2026`;
}

/** Next steps, blockers and decisions in one line: what the next model must know first. */
function handoffSummary(handoff: Handoff): string {
  const { next_steps: next, blockers, decisions } = handoff.context;
  return [
    next.length ? `Next: ${next.join('; ')}` : '',
    blockers.length ? `Blocked: ${blockers.join('; ')}` : '',
    decisions.length ? `Decided: ${decisions.join('; ')}` : '',
  ]
    .filter(Boolean)
    .join('. ');
}

/** A model's name as a tag: no spaces, commas or invisible characters, at most 64 characters. */
export function modelTag(model: string): string {
  const tag = model
    .normalize('NFKC')
    .replace(/[\s,\p{C}]+/gu, '-')
    .replace(/^-+|-+$/g, '');
  return sliceText(tag, LIMITS.tagChars) || 'model';
}

/**
 * The bus key of a workspace's handoff: its directory's name and a short hash of its whole
 * path, stable for the workspace and distinct between two of the same name, without putting
 * the path (a home directory, a client's name) on the team's bus.
 */
export function handoffKey(workspace: string): string {
  const name =
    basename(workspace)
      .replace(/[^A-Za-z0-9._-]+/g, '_')
      .replace(/^[._-]+|_+$/g, '')
      .slice(0, 60) || 'workspace';
  const digest = createHash('sha256').update(resolve(workspace)).digest('hex').slice(0, 12);
  return `handoff/${name}-${digest}`;
}

/** A hub URL and a runtime token for it, from the environment or saved: publishing can work. */
function hubKnown(): boolean {
  const url = findHubUrl(undefined);
  if (url === null) return false;
  try {
    runtimeToken(url, undefined);
    return true;
  } catch {
    return false;
  }
}

/**
 * Publishes a heartbeat or switch to the hub: always with --publish (or --url/--token), never
 * with --no-publish, else when config.yaml's notifications are enabled and a hub and a token
 * are known ($CTXBUS_URL and $CTXBUS_TOKEN, or saved ones). A hub that fails is a warning only: the handoff is saved.
 */
export async function publish(
  options: CommonOptions,
  config: HandoffConfig,
  workspace: string,
  handoff: Handoff,
  event: 'heartbeat' | 'switch',
  usageBefore: number | null = null,
): Promise<void> {
  const asked = options.publish === true || Boolean(options.url || options.token);
  if (options.publish === false) return;
  if (!asked && !(config.notifications.enabled && hubKnown())) return;
  try {
    const url = hubUrl(options.url);
    await createClient({ url, token: runtimeToken(url, options.token) }).write(
      handoffItem(workspace, handoff, event, config, usageBefore),
    );
  } catch (error) {
    const message = `the handoff is saved, but not published to the hub: ${(error as Error).message}`;
    // Asked for (--publish, --url, --token): a failure is the command's, with its exit code.
    if (asked) {
      throw new CtxbusError(CtxbusError.isInstance(error) ? error.code : 'unavailable', message, {
        cause: error,
      });
    }
    process.stderr.write(`ctxbus: warning: ${message}\n`);
  }
}

export function describe(paths: HandoffPaths, handoff: Handoff, now: Date): string[] {
  const age = Math.round((now.getTime() - Date.parse(handoff.timestamp)) / 60_000);
  const when = age < 0 ? `dated ${-age} min ahead of this clock` : `${age} min old`;
  return [
    `${paths.handoff}: sequence ${handoff.sequence}, ${when}, checksum ok, ${handoff.handoff_ready ? 'ready' : 'NOT ready'}`,
    `model: ${handoff.model.current}${handoff.model.usage_percent !== null ? ` (${handoff.model.usage_percent}%)` : ''}${handoff.model.previous ? `, previously ${handoff.model.previous}${handoff.model.switch_reason ? ` (${handoff.model.switch_reason})` : ''}` : ''}`,
    `task: ${handoff.task.description || '-'} [${handoff.task.status}]`,
    ...handoff.context.next_steps.map((step) => `next: ${step}`),
    ...handoff.context.blockers.map((blocker) => `blocker: ${blocker}`),
  ];
}

/**
 * Where `handoff switch` goes: `--to` (with `--reason`), or `--back` to the model before the
 * current one (the reason says so unless given).
 */
export function switchTarget(
  options: { to?: string; back?: boolean; reason?: string },
  current: Handoff | null,
): { to: string; reason: string } {
  if (options.back && options.to) {
    throw new CtxbusError('validation_failed', 'give --to or --back, not both');
  }
  if (options.back) {
    const previous = current?.model.previous;
    if (!current || !previous) {
      throw new CtxbusError(
        'conflict',
        'nothing to switch back to: the handoff names no previous model (model.previous)',
      );
    }
    return {
      to: previous,
      reason: options.reason ?? `switch_back: from ${current.model.current} to ${previous}`,
    };
  }
  if (!options.to || !options.reason) {
    throw new CtxbusError(
      'validation_failed',
      'handoff switch needs --to <model> and --reason <text> (or --back)',
    );
  }
  return { to: options.to, reason: options.reason };
}

/** The usage the handoff reports now (for the switch notice); null when it says none. */
export function readUsage(paths: HandoffPaths): number | null {
  try {
    return readHandoff(paths)?.model.usage_percent ?? null;
  } catch {
    return null; // the switch itself says what is wrong with the file
  }
}

/**
 * What the scheduler runs: this CLI (the Node binary and entry script running now), `handoff
 * monitor --once` on the workspace, with `extra` options (`--usage-from openclaw`), and the
 * same config.yaml and credentials directory.
 */
export function monitorCommand(workspace: string, options: CommonOptions, extra: string[] = []) {
  const entry = process.argv[1];
  if (!entry) throw new CtxbusError('internal', 'cannot tell which script runs the ctxbus CLI');
  const config = options.config ? resolve(options.config) : handoffConfigPath();
  return {
    execStart: [
      process.execPath,
      resolve(entry),
      'handoff',
      'monitor',
      '--once',
      '--workspace',
      workspace,
      ...extra,
    ],
    environment: [
      ['CONTEXT_BUS_CONFIG', config],
      ['CTXBUS_CONFIG_DIR', configDir()],
    ] as Array<[string, string]>,
  };
}

/** The scheduled job for a workspace's monitor, every `everyMinutes`. */
export function monitorJob(
  workspace: string,
  paths: HandoffPaths,
  options: CommonOptions,
  everyMinutes: number,
  extra: string[] = [],
): MonitorJob {
  return {
    ...monitorCommand(workspace, options, extra),
    name: monitorJobName(handoffKey(workspace)),
    workspace,
    everyMinutes,
    logPath: join(paths.dir, 'monitor.log'),
  };
}

function sourceNote(source: string): string {
  return source === 'agent' ? '' : ` (${source})`;
}

export function monitorLine(
  paths: HandoffPaths,
  config: HandoffConfig,
  action: MonitorAction,
): string {
  switch (action.action) {
    case 'none':
      return `monitor: nothing to do (${action.reason})`;
    case 'ok':
      return `monitor: ${action.handoff.model.current} at ${action.usage.percent}%${sourceNote(action.usage.source)} (summary from ${config.thresholds.proactive_summary}%, switch at ${config.thresholds.switch_to_secondary}%)`;
    case 'prepared':
      return `monitor: ${action.handoff.model.current} at ${action.usage.percent}%${sourceNote(action.usage.source)}: ${paths.summary} written`;
    case 'switched':
    case 'switched-back':
      return `monitor: ${action.action === 'switched' ? 'switched' : 'switched back'} ${action.from} -> ${action.result.handoff.model.current} (${action.result.handoff.model.switch_reason})`;
    case 'stuck':
      return `monitor: ${action.reason}`;
  }
}

// For the command's actions, which import this module when they run.
export {
  adoptHandoff,
  heartbeat,
  monitorOnce,
  readHistory,
  startHandoff,
  switchModel,
  switchSafety,
} from '@ctxbus/handoff';
export { readHandoff, resumeNote };
