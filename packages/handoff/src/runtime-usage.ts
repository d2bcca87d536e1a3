import { readFileSync } from 'node:fs';
import { CtxbusError } from '@ctxbus/core/contract';
import { z } from 'zod';
import { withLock, writeFileAtomic } from './handoff-file.js';
import type { HandoffPaths } from './handoff-paths.js';
import type { Handoff } from './handoff-schema.js';

// Usage as the runtime reports it (seed 003's "session_status -> usage %"), not only as the
// agent says in a heartbeat: Claude Code gives its status line command the plan's rate limits,
// OpenClaw prints its providers' usage windows (`openclaw status --usage --json`). The latest
// report per model lives in `.context-bus/usage.json`; the monitor prefers it to the
// heartbeat's number when it is newer, and reads the primary's to switch back.

/** Where a usage number came from. */
export const USAGE_SOURCES = ['claude-code-statusline', 'openclaw-status', 'manual'] as const;
export type UsageSource = (typeof USAGE_SOURCES)[number];

const percent = z.number().min(0).max(100);

export const usageReportSchema = z.strictObject({
  /** The most used window's share, 0-100. */
  usage_percent: percent,
  /** Which window that is (`five_hour`, `seven_day`, `5h`, `Week`...). */
  window: z.string().max(100).nullable(),
  /** When that window resets (ISO 8601); after it, the model's usage counts as 0. */
  resets_at: z.iso.datetime({ offset: true }).nullable(),
  source: z.enum(USAGE_SOURCES),
  reported_at: z.iso.datetime({ offset: true }),
});

export type UsageReport = z.infer<typeof usageReportSchema>;

const usageFileSchema = z.strictObject({
  schema_version: z.literal(1),
  /** The latest report per model name (as config.yaml's `models` name them). */
  models: z.record(z.string().min(1).max(100), usageReportSchema),
});

type UsageFile = z.infer<typeof usageFileSchema>;

/** Every model's latest runtime report; empty when none came yet. A damaged file is refused. */
export function readUsageReports(paths: HandoffPaths): Record<string, UsageReport> {
  let text: string;
  try {
    text = readFileSync(paths.usage, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw error;
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new CtxbusError('validation_failed', `${paths.usage} is not JSON`);
  }
  const parsed = usageFileSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new CtxbusError(
      'validation_failed',
      `${paths.usage}: ${issue?.path.join('.') || 'document'}: ${issue?.message ?? 'invalid'}`,
    );
  }
  return parsed.data.models;
}

/** Records `model`'s usage as its runtime reported it (the latest report wins). */
export async function recordUsage(
  paths: HandoffPaths,
  model: string,
  report: UsageReport,
): Promise<UsageReport> {
  const checked = usageReportSchema.parse(report);
  await withLock(paths, () => {
    let models: Record<string, UsageReport>;
    try {
      models = readUsageReports(paths);
    } catch {
      models = {}; // a damaged file is replaced by the next report: it holds no one's work
    }
    const next: UsageFile = { schema_version: 1, models: { ...models, [model]: checked } };
    writeFileAtomic(paths.usage, `${JSON.stringify(next, null, 2)}\n`);
  });
  return checked;
}

/** A report's usage at `now`: 0 once its window has reset. */
export function usageAt(report: UsageReport, now: Date): number {
  if (report.resets_at !== null && Date.parse(report.resets_at) <= now.getTime()) return 0;
  return report.usage_percent;
}

/** The usage the monitor acts on for a model, and where it came from. */
export interface CurrentUsage {
  percent: number;
  source: UsageSource | 'agent';
}

/**
 * A report's usage at `now`, when it says something about the time since `since` (ms): made
 * after it, or its window reset after it (then 0). Null for an older report: it describes a
 * model that may have moved on since (to its limit, or back from it).
 */
export function usageSince(
  report: UsageReport | undefined,
  since: number,
  now: Date,
): { percent: number; source: UsageSource } | null {
  if (!report) return null;
  const reset = report.resets_at !== null ? Date.parse(report.resets_at) : null;
  const fresh =
    Date.parse(report.reported_at) > since ||
    (reset !== null && reset > since && reset <= now.getTime());
  return fresh ? { percent: usageAt(report, now), source: report.source } : null;
}

/**
 * The current model's usage: its runtime's report since it became current (`since`, ms) when
 * there is one (the runtime measures; the agent only says), else the heartbeat's number; null
 * when neither says.
 */
export function currentUsage(
  handoff: Handoff,
  reports: Record<string, UsageReport>,
  since: number,
  now: Date,
): CurrentUsage | null {
  const runtime = usageSince(reports[handoff.model.current], since, now);
  if (runtime) return runtime;
  const agent = handoff.model.usage_percent;
  return agent === null ? null : { percent: agent, source: 'agent' };
}

/** The most used of some windows, as a report (null when there are none). */
function busiest(
  windows: Array<{ window: string; percent: number; resetsAt: string | null }>,
  source: UsageSource,
  now: Date,
): UsageReport | null {
  const top = windows.reduce<(typeof windows)[number] | null>(
    (best, window) => (best === null || window.percent > best.percent ? window : best),
    null,
  );
  if (!top) return null;
  return {
    usage_percent: Math.min(100, Math.max(0, top.percent)),
    window: top.window,
    resets_at: top.resetsAt,
    source,
    reported_at: now.toISOString(),
  };
}

const statusLineWindow = z
  .looseObject({
    used_percentage: z.number(),
    /** Unix seconds. */
    resets_at: z.number().nullish(),
  })
  .nullish();

/**
 * What Claude Code (2.1.x) writes on its status line command's stdin, the fields read here:
 * `model {id, display_name}`, `context_window {used_percentage, context_window_size}`, and,
 * for plan sessions only, `rate_limits {five_hour, seven_day, spend_limit}` each
 * `{used_percentage, resets_at}` (Unix seconds). Everything else is let through.
 */
export const claudeStatusLineSchema = z.looseObject({
  session_id: z.string().optional(),
  model: z.looseObject({ id: z.string(), display_name: z.string().optional() }).optional(),
  context_window: z
    .looseObject({
      used_percentage: z.number().nullish(),
      context_window_size: z.number().nullish(),
    })
    .optional(),
  rate_limits: z
    .looseObject({
      five_hour: statusLineWindow,
      seven_day: statusLineWindow,
      spend_limit: statusLineWindow,
    })
    .optional(),
});

export type ClaudeStatusLine = z.infer<typeof claudeStatusLineSchema>;

/** Parses the status line's stdin; a `validation_failed` error for anything else. */
export function parseClaudeStatusLine(text: string): ClaudeStatusLine {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new CtxbusError('validation_failed', 'the status line input is not JSON');
  }
  const parsed = claudeStatusLineSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new CtxbusError(
      'validation_failed',
      `the status line input: ${issue?.path.join('.') || 'document'}: ${issue?.message ?? 'invalid'}`,
    );
  }
  return parsed.data;
}

/**
 * The plan usage in Claude Code's status line input: its most used rate-limit window. Null
 * when Claude Code reports none (an API key, Bedrock or Vertex session: `rate_limits` absent).
 */
export function usageFromClaudeStatusLine(input: ClaudeStatusLine, now: Date): UsageReport | null {
  const limits = input.rate_limits ?? {};
  const windows = (['five_hour', 'seven_day', 'spend_limit'] as const).flatMap((name) => {
    const window = limits[name];
    if (!window) return [];
    const resetsAt =
      typeof window.resets_at === 'number' ? new Date(window.resets_at * 1000).toISOString() : null;
    return [{ window: name, percent: window.used_percentage, resetsAt }];
  });
  return busiest(windows, 'claude-code-statusline', now);
}

const openClawWindow = z.looseObject({
  label: z.string(),
  usedPercent: z.number(),
  /** Milliseconds since the epoch. */
  resetAt: z.number().optional(),
});

/**
 * What `openclaw status --usage --json` (2026.9.x) prints, the fields read here: `usage
 * {updatedAt, providers: [{provider, displayName, windows: [{label, usedPercent, resetAt}],
 * error}]}` (its `ProviderUsageSnapshot`); `usage` is absent when nothing was fetched.
 */
export const openClawStatusSchema = z.looseObject({
  usage: z
    .looseObject({
      updatedAt: z.number().optional(),
      providers: z.array(
        z.looseObject({
          provider: z.string(),
          displayName: z.string().optional(),
          windows: z.array(openClawWindow),
          error: z.string().optional(),
        }),
      ),
    })
    .nullish(),
});

export type OpenClawStatus = z.infer<typeof openClawStatusSchema>;

/** Parses `openclaw status --usage --json` output. */
export function parseOpenClawStatus(text: string): OpenClawStatus {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new CtxbusError('validation_failed', 'openclaw status --usage --json printed no JSON');
  }
  const parsed = openClawStatusSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new CtxbusError(
      'validation_failed',
      `openclaw status: ${issue?.path.join('.') || 'document'}: ${issue?.message ?? 'invalid'}`,
    );
  }
  return parsed.data;
}

/**
 * The usage OpenClaw reports for `provider` (default: the first provider with windows): its
 * most used window. Null when OpenClaw reports none (no subscription credentials, an error).
 */
export function usageFromOpenClawStatus(
  status: OpenClawStatus,
  now: Date,
  provider?: string,
): UsageReport | null {
  const providers = status.usage?.providers ?? [];
  const chosen = provider
    ? providers.find((candidate) => candidate.provider === provider)
    : providers.find((candidate) => candidate.windows.length > 0);
  if (!chosen) return null;
  const windows = chosen.windows.map((window) => ({
    window: window.label,
    percent: window.usedPercent,
    resetsAt: window.resetAt !== undefined ? new Date(window.resetAt).toISOString() : null,
  }));
  return busiest(windows, 'openclaw-status', now);
}
