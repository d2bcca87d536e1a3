import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { CtxbusError } from '@ctxbus/core/contract';
import { isStale, readHandoff, updateHandoff, writeFileAtomic } from './handoff-file.js';
import type { HandoffPaths } from './handoff-paths.js';
import type { Handoff, HandoffContent } from './handoff-schema.js';
import { modelNameSchema } from './handoff-schema.js';

// What an agent does with its handoff (seed 003): a heartbeat records where the work stands, a
// switch moves the agent to another model, and the resuming model is told whose work it
// continues.

/** Recent actions kept in the handoff (seed 003: the last five). */
export const RECENT_ACTIONS = 5;

export interface HeartbeatInput {
  /** The model writing (becomes `author` and, on a first heartbeat, `model.current`). */
  model: string;
  usagePercent?: number;
  /** New actions, appended; only the last five are kept. */
  actions?: string[];
  /** Replace the lists when given; otherwise they stay. */
  nextSteps?: string[];
  decisions?: string[];
  blockers?: string[];
  task?: { description?: string; status?: string; project?: string | null };
  /** Added to files_touched (once each). */
  files?: string[];
  /** Complete enough for another model to resume from (default true). */
  ready?: boolean;
}

/**
 * The author of the handoff `ctxbus handoff init` writes: no model has worked yet, so the first
 * heartbeat still names the current model (as on a workspace without a handoff).
 */
export const INIT_AUTHOR = 'ctxbus-init';

const EMPTY_CONTEXT: HandoffContent['context'] = {
  recent_actions: [],
  decisions: [],
  next_steps: [],
  blockers: [],
};

/**
 * The first handoff of a workspace (`handoff init`): valid (checksummed, sequence 1), naming
 * the model expected to start, not ready (nothing to resume yet). Null when one exists.
 */
export async function startHandoff(
  paths: HandoffPaths,
  model: string,
  options: { now?: Date } = {},
): Promise<Handoff | null> {
  if (existsSync(paths.handoff)) return null;
  return updateHandoff(
    paths,
    () => ({
      author: INIT_AUTHOR,
      handoff_ready: false,
      model: { current: model, previous: null, usage_percent: null, switch_reason: null },
      task: { description: 'not started', status: 'not_started', project: null },
      context: EMPTY_CONTEXT,
      files_touched: [],
    }),
    { event: 'init', ...(options.now && { now: options.now }) },
  );
}

function heartbeatContent(current: Handoff | null, input: HeartbeatInput): HandoffContent {
  const context = current?.context ?? EMPTY_CONTEXT;
  const started = current === null || current.author === INIT_AUTHOR;
  // A model switched away from may still be running (a late hook, a last turn): what it says
  // is not the current model's state, and its usage would make the monitor switch away from
  // a model that never ran.
  // (A name that is no model name is refused by the file's schema, naming the field.)
  const named = modelNameSchema.safeParse(input.model).success;
  if (!started && current && named && input.model !== current.model.current) {
    throw new CtxbusError(
      'conflict',
      `${input.model} is not the current model (${current.model.current} is${current.model.previous === input.model ? `, since the switch from ${input.model}` : ''}): its heartbeat is not recorded; \`ctxbus handoff switch --to ${input.model}\` first if it should take over`,
      { details: { reason: 'not_current', current: current.model.current } },
    );
  }
  return {
    author: input.model,
    handoff_ready: input.ready ?? true,
    model: {
      current: started ? input.model : (current?.model.current ?? input.model),
      previous: current?.model.previous ?? null,
      usage_percent: input.usagePercent ?? current?.model.usage_percent ?? null,
      switch_reason: current?.model.switch_reason ?? null,
    },
    task: {
      // The first heartbeat after `init` starts the work: its placeholder task does not stay.
      description: input.task?.description ?? (started ? '' : (current?.task.description ?? '')),
      status:
        input.task?.status ?? (started ? 'in_progress' : (current?.task.status ?? 'in_progress')),
      project:
        input.task?.project !== undefined ? input.task.project : (current?.task.project ?? null),
    },
    context: {
      recent_actions: [...context.recent_actions, ...(input.actions ?? [])].slice(-RECENT_ACTIONS),
      decisions: input.decisions ?? context.decisions,
      next_steps: input.nextSteps ?? context.next_steps,
      blockers: input.blockers ?? context.blockers,
    },
    files_touched: [...new Set([...(current?.files_touched ?? []), ...(input.files ?? [])])].slice(
      -500,
    ),
  };
}

/** Time, injected: tests turn it by hand instead of waiting. */
export interface Clock {
  now(): Date;
  sleep(ms: number): Promise<void>;
}

export const systemClock: Clock = {
  now: () => new Date(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

export interface HeartbeatOptions {
  now?: Date;
  force?: boolean;
  /** From this usage on (seed 003: 80%), rolling-summary.md is written too. */
  summaryAtPercent?: number;
}

/**
 * Records where the work stands (creates the handoff on the first call), answers a pending
 * heartbeat request (a switch waiting for it), and above `summaryAtPercent` writes the
 * rolling summary.
 */
export async function heartbeat(
  paths: HandoffPaths,
  input: HeartbeatInput,
  options: HeartbeatOptions = {},
): Promise<Handoff> {
  const { summaryAtPercent, ...update } = options;
  const handoff = await updateHandoff(paths, (current) => heartbeatContent(current, input), {
    event: 'heartbeat',
    ...update,
  });
  rmSync(paths.heartbeatRequest, { force: true });
  if (summaryDue(handoff, summaryAtPercent)) {
    writeRollingSummary(paths, summaryOf(handoff), options.now);
  }
  return handoff;
}

/**
 * Takes a handoff that fails only its checksum (seed 003's own scripts hash bytes that are not
 * in the file, so no reader can check theirs; or a person edited it) as it is: the same
 * content and timestamp, signed, one sequence on; the history says `adopt` (when). Its
 * timestamp stays the content's, so a stale file stays stale: a switch refuses it (seed 003:
 * the handoff is less than 5 minutes old) until a heartbeat renews it, or with --force. A file
 * that is not JSON or not a v2 handoff is refused, and one that passes its checks is left as it
 * is.
 */
export async function adoptHandoff(
  paths: HandoffPaths,
  options: { now?: Date } = {},
): Promise<{ handoff: Handoff; adopted: boolean }> {
  const verified = (() => {
    try {
      return readHandoff(paths);
    } catch {
      return null;
    }
  })();
  if (verified) return { handoff: verified, adopted: false };
  if (!existsSync(paths.handoff)) {
    throw new CtxbusError('not_found', `${paths.handoff} does not exist: nothing to adopt`);
  }
  const handoff = await updateHandoff(
    paths,
    (current) => {
      const { schema_version, sequence, timestamp, checksum, ...content } = current as Handoff;
      return content;
    },
    { event: 'adopt', adopt: true, ...(options.now && { now: options.now }) },
  );
  return { handoff, adopted: true };
}

/** Whether the usage reached the proactive-summary threshold. */
export function summaryDue(handoff: Handoff, atPercent: number | undefined): boolean {
  const usage = handoff.model.usage_percent;
  return atPercent !== undefined && usage !== null && usage >= atPercent;
}

/** The rolling summary of a handoff: its task, recent actions, decisions, next steps, blockers. */
export function summaryOf(handoff: Handoff): RollingSummary {
  const task = handoff.task.description || 'No task recorded';
  const usage = handoff.model.usage_percent;
  return {
    author: handoff.author,
    tldr: `${task} [${handoff.task.status}]`,
    focus: `${handoff.model.current}${usage !== null ? ` at ${usage}% of its limit` : ''}${handoff.task.project ? `, in ${handoff.task.project}` : ''}${handoff.handoff_ready ? '' : ' (handoff not marked ready)'}.`,
    progress: handoff.context.recent_actions,
    decisions: handoff.context.decisions,
    nextSteps: handoff.context.next_steps,
    openItems: handoff.context.blockers,
  };
}

/** What a waiting switch leaves in `.context-bus/heartbeat-request.json` for the agent. */
export interface HeartbeatRequest {
  requested_at: string;
  /** The sequence the next heartbeat must go beyond. */
  after_sequence: number;
  to: string;
  reason: string;
}

export interface SwitchInput {
  to: string;
  reason: string;
  /** A handoff older than this is refused unless `force` (default 5 min, the seed's). */
  maxAgeMs?: number;
  force?: boolean;
  /**
   * Hand over a handoff that fails only its checksum (seed 003's scripts wrote it) as it is,
   * unverified and said so, instead of refusing it or, forced, handing over nothing.
   */
  adopt?: boolean;
  /**
   * When the handoff is missing, stale or (with `requireReady`) not ready: ask for a final
   * heartbeat (heartbeat-request.json) and wait up to this long for one (default 0: no wait).
   */
  waitMs?: number;
  /** A handoff not marked ready is worth waiting for (default true). */
  requireReady?: boolean;
  /** How often to look for the heartbeat while waiting (default 500 ms). */
  pollMs?: number;
  /** Told when the request is written, before the wait (to say why nothing happens). */
  onRequest?: (request: HeartbeatRequest) => void;
  clock?: Clock;
  /** A fixed time instead of a clock (no waiting then). */
  now?: Date;
}

export interface SwitchResult {
  handoff: Handoff;
  /** What was wrong but did not stop the switch (not ready; no heartbeat came; forced). */
  warnings: string[];
  /** Whether a final heartbeat was asked for, and whether it came. */
  finalHeartbeat: 'not-needed' | 'received' | 'timed-out';
}

function readOrNull(paths: HandoffPaths, force: boolean | undefined): Handoff | null {
  try {
    return readHandoff(paths);
  } catch (error) {
    if (force) return null;
    throw error;
  }
}

/**
 * Seed 003's forced final heartbeat: when the handoff is not fit to switch on, leaves a request
 * for the agent and waits until a heartbeat moves the sequence on with a fresh, ready handoff,
 * or the time is up. The request is removed either way.
 */
async function awaitFinalHeartbeat(
  paths: HandoffPaths,
  input: SwitchInput,
  clock: Clock,
  maxAgeMs: number,
): Promise<SwitchResult['finalHeartbeat']> {
  const requireReady = input.requireReady ?? true;
  const fit = (handoff: Handoff | null) =>
    handoff !== null &&
    !isStale(handoff, maxAgeMs, clock.now()) &&
    (handoff.handoff_ready || !requireReady);
  // No .context-bus/ here: nothing was set up (handoff init, a heartbeat), so no agent reads
  // a request here; waiting would only delay the refusal.
  if (!existsSync(paths.dir)) return 'not-needed';
  const current = readOrNull(paths, input.force);
  const waitMs = input.waitMs ?? 0;
  if (fit(current) || waitMs <= 0) return 'not-needed';
  const afterSequence = current?.sequence ?? 0;
  const request: HeartbeatRequest = {
    requested_at: clock.now().toISOString(),
    after_sequence: afterSequence,
    to: input.to,
    reason: input.reason,
  };
  mkdirSync(paths.dir, { recursive: true });
  writeFileAtomic(paths.heartbeatRequest, `${JSON.stringify(request, null, 2)}\n`);
  input.onRequest?.(request);
  const deadline = clock.now().getTime() + waitMs;
  try {
    while (clock.now().getTime() < deadline) {
      await clock.sleep(Math.min(input.pollMs ?? 500, deadline - clock.now().getTime()));
      const next = readOrNull(paths, input.force);
      if (next && next.sequence > afterSequence && fit(next)) return 'received';
    }
    return 'timed-out';
  } finally {
    rmSync(paths.heartbeatRequest, { force: true });
  }
}

function noHandoff(paths: HandoffPaths): CtxbusError {
  return new CtxbusError(
    'not_found',
    `no handoff in ${paths.dir}: run ctxbus handoff init here and let the agent heartbeat (ctxbus handoff heartbeat), or --force`,
  );
}

/**
 * Moves the agent to model `to` (seed 003's pre-switch): first, when the handoff is not fit,
 * asks for a final heartbeat and waits up to `waitMs`; then the handoff must exist, pass its
 * checksum and be fresh, or the switch is refused (`not_found`, `validation_failed`,
 * `conflict`) unless `force`. One not marked ready switches anyway, with a warning.
 */
/** Whether the handoff passes its checks as it is. */
function verified(paths: HandoffPaths): boolean {
  try {
    readHandoff(paths);
    return true;
  } catch {
    return false;
  }
}

export async function switchModel(paths: HandoffPaths, input: SwitchInput): Promise<SwitchResult> {
  const clock: Clock = input.now
    ? { now: () => input.now as Date, sleep: systemClock.sleep }
    : (input.clock ?? systemClock);
  const maxAgeMs = input.maxAgeMs ?? 5 * 60_000;
  const warnings: string[] = [];
  // Nothing set up here: refused before the wait, and before the lock makes the directory.
  if (!input.force && !existsSync(paths.dir)) throw noHandoff(paths);
  const finalHeartbeat = await awaitFinalHeartbeat(paths, input, clock, maxAgeMs);
  if (finalHeartbeat === 'timed-out') {
    warnings.push(
      `no final heartbeat came within ${Math.round((input.waitMs ?? 0) / 1000)} s: the handoff may be incomplete`,
    );
  }
  const now = clock.now();
  let handedOver: Handoff | null = null;
  const handoff = await updateHandoff(
    paths,
    (current) => {
      handedOver = current;
      if (current && input.adopt && !verified(paths)) {
        warnings.push('the handoff fails its checksum: handed over as it is, unverified');
      }
      if (current?.model.current === input.to) {
        throw new CtxbusError(
          'conflict',
          `${input.to} is the current model already: nothing to switch (\`--back\` still returns to ${current.model.previous ?? 'the model before'})`,
          { details: { reason: 'already_current' } },
        );
      }
      if (!current) {
        if (!input.force) throw noHandoff(paths);
        warnings.push('no usable handoff: the new model starts without one');
      } else if (isStale(current, maxAgeMs, now)) {
        const minutes = Math.round((now.getTime() - Date.parse(current.timestamp)) / 60_000);
        const age = minutes < 0 ? `dated ${-minutes} min ahead` : `${minutes} min old`;
        if (!input.force) {
          throw new CtxbusError(
            'conflict',
            `the handoff is ${age} (limit ${Math.round(maxAgeMs / 60_000)} min): run a heartbeat first, or --force`,
            { details: { reason: 'stale', ageMinutes: minutes } },
          );
        }
        warnings.push(`the handoff is ${age}; switched anyway (forced)`);
      }
      if (current && !current.handoff_ready) {
        warnings.push('the handoff is not marked ready: check its next steps before going on');
      }
      const base = current ?? heartbeatContent(null, { model: input.to });
      return {
        // A stale handoff switched by force hands over content as old as it was: it keeps its
        // time, so the next switch still sees it stale (as an adopted file does).
        keepTimestamp: current !== null && isStale(current, maxAgeMs, now),
        author: input.to,
        handoff_ready: current?.handoff_ready ?? false,
        model: {
          current: input.to,
          previous: current?.model.current ?? null,
          usage_percent: null,
          // Seed 003's `auto_threshold_incomplete`: the resuming model is told to check.
          switch_reason: warnings.length ? `${input.reason} (incomplete handoff)` : input.reason,
        },
        task: base.task,
        context: base.context,
        files_touched: base.files_touched,
      };
    },
    {
      event: 'switch',
      now,
      ...(input.force !== undefined && { force: input.force }),
      ...(input.adopt && { adopt: true }),
    },
  );
  // The next model reads rolling-summary.md (seed 003): a switch before the proactive summary
  // (a manual one, a low usage) writes it from what was handed over.
  if (handedOver) writeRollingSummary(paths, summaryOf(handedOver), now);
  return { handoff, warnings, finalHeartbeat };
}

export interface RollingSummary {
  author: string;
  tldr: string;
  focus: string;
  progress: string[];
  decisions: string[];
  nextSteps: string[];
  openItems: string[];
}

/** rolling-summary.md with the seed's front matter (token_count estimated, 4 chars a token). */
export function writeRollingSummary(
  paths: HandoffPaths,
  summary: RollingSummary,
  now = new Date(),
): string {
  const bullets = (items: string[]) =>
    items.length ? items.map((item) => `- ${item}`) : ['- None'];
  const numbered = (items: string[]) =>
    items.length ? items.map((item, index) => `${index + 1}. ${item}`) : ['- None'];
  const body = [
    '# Agent Handoff Summary',
    '',
    '## TL;DR',
    summary.tldr,
    '',
    '## Current Focus',
    summary.focus,
    '',
    '## Recent Progress',
    ...bullets(summary.progress),
    '',
    '## Key Decisions Made',
    ...numbered(summary.decisions),
    '',
    '## Immediate Next Steps',
    ...numbered(summary.nextSteps),
    '',
    '## Open Items',
    ...bullets(summary.openItems),
    '',
  ].join('\n');
  const text = [
    '---',
    'schema_version: 2',
    `generated: ${now.toISOString()}`,
    `author: ${summary.author}`,
    `token_count: ${Math.ceil(body.length / 4)}`,
    '---',
    '',
    body,
  ].join('\n');
  mkdirSync(paths.dir, { recursive: true });
  writeFileAtomic(paths.summary, text);
  return text;
}
