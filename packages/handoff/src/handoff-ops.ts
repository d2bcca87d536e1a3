import { mkdirSync } from 'node:fs';
import { CtxbusError } from '@ctxbus/core/contract';
import type { HandoffPaths } from './handoff-file.js';
import { isStale, updateHandoff, writeFileAtomic } from './handoff-file.js';
import type { Handoff, HandoffContent } from './handoff-schema.js';

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

function heartbeatContent(current: Handoff | null, input: HeartbeatInput): HandoffContent {
  const context = current?.context ?? {
    recent_actions: [],
    decisions: [],
    next_steps: [],
    blockers: [],
  };
  return {
    author: input.model,
    handoff_ready: input.ready ?? true,
    model: {
      current: current?.model.current ?? input.model,
      previous: current?.model.previous ?? null,
      usage_percent: input.usagePercent ?? current?.model.usage_percent ?? null,
      switch_reason: current?.model.switch_reason ?? null,
    },
    task: {
      description: input.task?.description ?? current?.task.description ?? '',
      status: input.task?.status ?? current?.task.status ?? 'in_progress',
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

/** Records where the work stands; creates the handoff on the first call. */
export function heartbeat(
  paths: HandoffPaths,
  input: HeartbeatInput,
  options: { now?: Date; force?: boolean } = {},
): Promise<Handoff> {
  return updateHandoff(paths, (current) => heartbeatContent(current, input), {
    event: 'heartbeat',
    ...options,
  });
}

export interface SwitchInput {
  to: string;
  reason: string;
  /** A handoff older than this is refused unless `force` (default 30 min). */
  maxAgeMs?: number;
  force?: boolean;
  now?: Date;
}

export interface SwitchResult {
  handoff: Handoff;
  /** What was wrong but did not stop the switch (not ready; forced past a check). */
  warnings: string[];
}

/**
 * Moves the agent to model `to`: the handoff must exist, pass its checksum and be fresh, or
 * the switch is refused (`conflict`, or `validation_failed` for a damaged file) unless `force`.
 * A handoff not marked ready switches anyway, with a warning: the new model should check it.
 */
export async function switchModel(paths: HandoffPaths, input: SwitchInput): Promise<SwitchResult> {
  const now = input.now ?? new Date();
  const maxAgeMs = input.maxAgeMs ?? 30 * 60_000;
  const warnings: string[] = [];
  const handoff = await updateHandoff(
    paths,
    (current) => {
      if (!current) {
        if (!input.force) {
          throw new CtxbusError(
            'not_found',
            `no handoff in ${paths.dir}: run ctxbus handoff heartbeat first (or --force)`,
          );
        }
        warnings.push('no usable handoff: the new model starts without one');
      } else if (isStale(current, maxAgeMs, now)) {
        const minutes = Math.round((now.getTime() - Date.parse(current.timestamp)) / 60_000);
        if (!input.force) {
          throw new CtxbusError(
            'conflict',
            `the handoff is ${minutes} min old (limit ${Math.round(maxAgeMs / 60_000)} min): run a heartbeat first, or --force`,
            { details: { reason: 'stale', ageMinutes: minutes } },
          );
        }
        warnings.push(`the handoff is ${minutes} min old; switched anyway (forced)`);
      }
      if (current && !current.handoff_ready) {
        warnings.push('the handoff is not marked ready: check its next steps before going on');
      }
      const base = current ?? heartbeatContent(null, { model: input.to });
      return {
        author: input.to,
        handoff_ready: current?.handoff_ready ?? false,
        model: {
          current: input.to,
          previous: current?.model.current ?? null,
          usage_percent: null,
          switch_reason: input.reason,
        },
        task: base.task,
        context: base.context,
        files_touched: base.files_touched,
      };
    },
    { event: 'switch', now, ...(input.force !== undefined && { force: input.force }) },
  );
  return { handoff, warnings };
}

/** What the resuming model is told first (seed 003: "Continuing from X's work on ..."). */
export function resumeNote(handoff: Handoff): string | null {
  if (!handoff.model.previous) return null;
  const lines = [
    `Continuing from ${handoff.model.previous}'s work on ${handoff.task.description || 'the current task'}${handoff.model.switch_reason ? ` (switched: ${handoff.model.switch_reason})` : ''}.`,
  ];
  const list = (title: string, items: string[]) => {
    if (items.length) lines.push(`${title}:`, ...items.map((item) => `- ${item}`));
  };
  list('Recent actions', handoff.context.recent_actions);
  list('Decisions', handoff.context.decisions);
  list('Next steps', handoff.context.next_steps);
  list('Blockers', handoff.context.blockers);
  return lines.join('\n');
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
