import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { CtxbusError } from '@ctxbus/core/contract';

/** An agent id: 1-64 lowercase letters, digits, dots, dashes or underscores, no `..`. */
export const AGENT_ID_PATTERN = /^[a-z0-9][a-z0-9._-]{0,63}$/;

/** The directory's layout, as absolute paths (see the package README for the contract). */
export interface SharedContextPaths {
  /** The shared-context directory itself. */
  root: string;
  priorities: string;
  prioritiesInbox: string;
  agentOutputs: string;
  staging: string;
  stagingArchive: string;
  feedback: string;
  feedbackInbox: string;
  roundtable: string;
  crossSignals: string;
  kpis: string;
  rubrics: string;
  /** What the curator has merged and rolled up (curator-only). */
  curatorState: string;
  agentOutputDir(agent: string): string;
  stagingDir(agent: string): string;
  kpiFile(agent: string): string;
  /** `roundtable/<YYYY-MM-DD>.md` */
  roundtableFile(date: string): string;
  /** `cross-signals/<YYYY-MM-DD>.json` */
  crossSignalsFile(date: string): string;
  /** `feedback/<YYYY-Www>.jsonl` */
  feedbackWeekFile(week: string): string;
  /** `roundtable/weekly-<YYYY-Www>.md` */
  weeklyFile(week: string): string;
}

export interface SharedContextPathOptions {
  /** The directory (an override, e.g. OpenClaw's `sharedContextDir`); `~` is expanded. */
  dir?: string;
  /** The home directory for the default and for `~` (default: `os.homedir()`). */
  home?: string;
}

/** `~/.openclaw/workspace/shared-context`, relative to a home directory. */
export const DEFAULT_SHARED_CONTEXT_SUBDIR = join('.openclaw', 'workspace', 'shared-context');

/** Throws `validation_failed` unless `agent` is a valid agent id; returns it. */
export function assertAgentId(agent: string): string {
  if (typeof agent !== 'string' || !AGENT_ID_PATTERN.test(agent) || agent.includes('..')) {
    throw new CtxbusError(
      'validation_failed',
      `invalid agent id ${JSON.stringify(agent)}: use 1-64 lowercase letters, digits, '.', '_' or '-', starting with a letter or digit, without '..'`,
      { details: { field: 'agent', value: agent } },
    );
  }
  return agent;
}

const DATE = /^\d{4}-\d{2}-\d{2}$/;
const WEEK = /^\d{4}-W\d{2}$/;

function checked(value: string, pattern: RegExp, what: string): string {
  if (!pattern.test(value)) {
    throw new CtxbusError('validation_failed', `invalid ${what} ${JSON.stringify(value)}`, {
      details: { field: what, value },
    });
  }
  return value;
}

/**
 * The absolute paths of a shared-context directory: `dir` when given (absolute, or relative
 * to the working directory, `~` expanded), else `~/.openclaw/workspace/shared-context/`.
 * Agent ids, dates and weeks are validated, so no helper ever yields a path outside the root.
 */
export function sharedContextPaths(options: SharedContextPathOptions = {}): SharedContextPaths {
  const home = options.home ?? homedir();
  const given = options.dir?.trim();
  if (given !== undefined && (given === '' || given.includes('\u0000'))) {
    throw new CtxbusError('validation_failed', 'the shared-context dir must be a non-empty path', {
      details: { field: 'dir' },
    });
  }
  let root: string;
  if (given === undefined) root = join(home, DEFAULT_SHARED_CONTEXT_SUBDIR);
  else if (given === '~' || given.startsWith('~/')) root = join(home, given.slice(1));
  else root = isAbsolute(given) ? resolve(given) : resolve(process.cwd(), given);
  const at = (...parts: string[]) => join(root, ...parts);
  return {
    root,
    priorities: at('priorities.md'),
    prioritiesInbox: at('priorities.inbox.md'),
    agentOutputs: at('agent-outputs'),
    staging: at('staging'),
    stagingArchive: at('staging-archive'),
    feedback: at('feedback'),
    feedbackInbox: at('feedback', 'inbox.jsonl'),
    roundtable: at('roundtable'),
    crossSignals: at('cross-signals'),
    kpis: at('kpis'),
    rubrics: at('rubrics'),
    curatorState: at('.curator-state.json'),
    agentOutputDir: (agent) => at('agent-outputs', assertAgentId(agent)),
    stagingDir: (agent) => at('staging', assertAgentId(agent)),
    kpiFile: (agent) => at('kpis', `${assertAgentId(agent)}.json`),
    roundtableFile: (date) => at('roundtable', `${checked(date, DATE, 'date')}.md`),
    crossSignalsFile: (date) => at('cross-signals', `${checked(date, DATE, 'date')}.json`),
    feedbackWeekFile: (week) => at('feedback', `${checked(week, WEEK, 'week')}.jsonl`),
    weeklyFile: (week) => at('roundtable', `weekly-${checked(week, WEEK, 'week')}.md`),
  };
}

/** `YYYY-MM-DD` of an instant, in UTC. */
export function isoDate(now: Date): string {
  return now.toISOString().slice(0, 10);
}

/** The ISO 8601 week of an instant, in UTC: `2026-W05`. */
export function isoWeek(now: Date): string {
  const day = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
  const weekday = day.getUTCDay() || 7;
  day.setUTCDate(day.getUTCDate() + 4 - weekday);
  const yearStart = Date.UTC(day.getUTCFullYear(), 0, 1);
  const week = Math.ceil(((day.getTime() - yearStart) / 86_400_000 + 1) / 7);
  return `${day.getUTCFullYear()}-W${String(week).padStart(2, '0')}`;
}

/** Monday 00:00 UTC to the next Monday of the ISO week an instant falls in. */
export function isoWeekRange(now: Date): { start: Date; end: Date } {
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
  start.setUTCDate(start.getUTCDate() - ((start.getUTCDay() || 7) - 1));
  const end = new Date(start);
  end.setUTCDate(end.getUTCDate() + 7);
  return { start, end };
}
