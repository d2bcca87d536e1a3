import { createHash } from 'node:crypto';
import { existsSync, readFileSync, renameSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { ContextEntry, ContextSection } from '@ctxbus/core';
import { markdownFormatter, plainLine } from '@ctxbus/core/contract';
import { z } from 'zod';
import { bootstrapSharedContext } from './bootstrap.js';
import type { CrossSignalsReport } from './cross-signals.js';
import { detectCrossSignals } from './cross-signals.js';
import type { FeedbackEntry } from './feedback.js';
import { feedbackEntrySchema, readFeedbackFile } from './feedback.js';
import { policyAppend, policyWrite, readTextOrNull } from './files.js';
import { parseDocument } from './front-matter.js';
import type { LlmOption } from './llm.js';
import { listAgentOutputs, titleOf, walkFiles, withoutEntitiesSection } from './outputs.js';
import type { SharedContextPaths } from './paths.js';
import { AGENT_ID_PATTERN, assertAgentId, isoDate, isoWeek } from './paths.js';
import { assertWriteAllowed, prepareParent } from './policy.js';
import { addToAutomated, addToCanonical, parseInbox, splitPriorities } from './priorities.js';

const shortHash = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 12);

const curatorStateSchema = z.object({
  version: z.literal(1),
  /** Ids of the priorities-inbox entries already merged into priorities.md. */
  mergedInbox: z.array(z.string()),
  /** Bytes of feedback/inbox.jsonl already rolled into the weekly files. */
  feedbackOffset: z.int().nonnegative(),
});

type CuratorState = z.infer<typeof curatorStateSchema>;

function readState(paths: SharedContextPaths, warnings: string[]): CuratorState {
  const text = readTextOrNull(paths.curatorState);
  const empty: CuratorState = { version: 1, mergedInbox: [], feedbackOffset: 0 };
  if (text === null) return empty;
  try {
    return curatorStateSchema.parse(JSON.parse(text));
  } catch {
    warnings.push('.curator-state.json was unreadable; starting from the markers in priorities.md');
    return empty;
  }
}

export interface CurateOptions {
  now: Date;
  /** The curator's agent id (default `curator`). */
  agent?: string;
  /** The cross-signal enhancer (off unless given). */
  llm?: LlmOption;
  /** Cross-signal window (default 7 days). */
  windowDays?: number;
  /** Token budget of the roundtable (default 6000). */
  roundtableTokens?: number;
}

export interface CurateResult {
  date: string;
  /** Staging files merged into the canonical section, then archived (relative paths). */
  stagedMerged: string[];
  archived: string[];
  /** Headings of the inbox entries merged this run. */
  inboxMerged: string[];
  feedbackRolled: number;
  prioritiesChanged: boolean;
  roundtable: string;
  crossSignals: string;
  warnings: string[];
}

/**
 * A staged file's line in priorities.md. Without front matter (written by hand) its title is
 * its first heading or its name, as an agent output's, and its date the file's.
 */
function stagedLine(
  relPath: string,
  text: string,
  modified: Date,
): { line: string; marker: string } {
  const { meta, body } = parseDocument(text);
  const agent = relPath.split('/')[1] ?? '?';
  const title = titleOf(meta, body, relPath.split('/').at(-1) ?? relPath);
  const first = body
    .split('\n')
    .filter((line) => !/^#\s/.test(line))
    .map((line) => plainLine(line))
    .find((line) => line.length > 0);
  const stamp = (
    typeof meta.timestamp === 'string' ? meta.timestamp : modified.toISOString()
  ).slice(0, 10);
  const marker = `<!-- staged:${shortHash(`${relPath}\u0000${text}`)} -->`;
  const summary = first && first !== title ? ` — ${first.slice(0, 240)}` : '';
  return {
    line: `- **${plainLine(title)}**${summary} _(staged by ${agent}, ${stamp})_ ${marker}`,
    marker,
  };
}

/** Moves a merged staging file under `staging-archive/<date>/`, never over another file. */
function archive(paths: SharedContextPaths, relPath: string, date: string, agent: string): string {
  const rest = relPath.slice('staging/'.length);
  for (let attempt = 1; ; attempt++) {
    const suffix = attempt === 1 ? '' : `.${attempt}`;
    const target = `staging-archive/${date}/${rest}${suffix}`;
    const absolute = assertWriteAllowed(paths, target, { agent, mode: 'create', curator: true });
    if (existsSync(absolute)) continue;
    prepareParent(paths, target, absolute);
    renameSync(join(paths.root, ...relPath.split('/')), absolute);
    return target;
  }
}

function feedbackSince(paths: SharedContextPaths, from: Date): FeedbackEntry[] {
  const seen = new Set<string>();
  const entries: FeedbackEntry[] = [];
  const files = walkFiles(paths.feedback)
    .filter((file) => /^\d{4}-W\d{2}\.jsonl$/.test(file) || file === 'inbox.jsonl')
    .map((file) => join(paths.feedback, file));
  for (const file of files) {
    for (const { entry, line } of readFeedbackFile(file).entries) {
      if (seen.has(line) || Date.parse(entry.timestamp) < from.getTime()) continue;
      seen.add(line);
      entries.push(entry);
    }
  }
  return entries.sort(
    (a, b) => b.timestamp.localeCompare(a.timestamp) || a.subject.localeCompare(b.subject),
  );
}

/** Feedback (inbox and weekly files, deduplicated) from `from` on, newest first. */
export function recentFeedback(paths: SharedContextPaths, from: Date): FeedbackEntry[] {
  return feedbackSince(paths, from);
}

function rollFeedback(
  paths: SharedContextPaths,
  state: CuratorState,
  agent: string,
  warnings: string[],
): number {
  if (!existsSync(paths.feedbackInbox)) return 0;
  const size = statSync(paths.feedbackInbox).size;
  if (size < state.feedbackOffset) {
    warnings.push(
      'feedback/inbox.jsonl is shorter than what was rolled up: it was truncated; rolling it again from the start',
    );
    state.feedbackOffset = 0;
  }
  const buffer = readFileSync(paths.feedbackInbox);
  const end = buffer.lastIndexOf(0x0a) + 1;
  if (end <= state.feedbackOffset) return 0;
  const fresh = buffer.subarray(state.feedbackOffset, end).toString('utf8');
  let rolled = 0;
  const weekLines = new Map<string, Set<string>>();
  fresh.split('\n').forEach((line) => {
    if (line.trim() === '') return;
    const parsed = readFeedbackLine(line);
    if (!parsed) {
      warnings.push(`feedback/inbox.jsonl: skipped an invalid line: ${line.slice(0, 80)}`);
      return;
    }
    const week = isoWeek(new Date(parsed.timestamp));
    let existing = weekLines.get(week);
    if (!existing) {
      existing = new Set(readFeedbackFile(paths.feedbackWeekFile(week)).entries.map((e) => e.line));
      weekLines.set(week, existing);
    }
    if (existing.has(line)) return;
    policyAppend(paths, `feedback/${week}.jsonl`, `${line}\n`, {
      agent,
      mode: 'append',
      curator: true,
    });
    existing.add(line);
    rolled++;
  });
  state.feedbackOffset = end;
  return rolled;
}

function readFeedbackLine(line: string): FeedbackEntry | null {
  try {
    const parsed = feedbackEntrySchema.safeParse(JSON.parse(line));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

function bulletEntries(text: string, prefix: string): ContextEntry[] {
  const entries: ContextEntry[] = [];
  const notes: string[] = [];
  for (const line of text.split('\n')) {
    const bullet = /^\s*(?:[-*+]|\d+\.)\s+(.+)$/.exec(line);
    if (bullet?.[1] && !/^\s{2,}/.test(line)) {
      // `**Title** — detail _(note)_` reads as a title and its body.
      const text = plainLine(bullet[1]).replace(/(^|\s)_([^_]+)_(?=\s|$)/g, '$1$2');
      const cut = /^(.+?)(?: — |: )(.+)$/.exec(text);
      const title = cut?.[1] ?? text;
      const body = cut?.[2] ?? '';
      entries.push({
        id: `${prefix}:${entries.length}`,
        refs: [],
        title,
        body,
        summary: body || title,
        meta: {},
      });
    } else if (line.trim()) {
      notes.push(line.trim());
    }
  }
  if (notes.length > 0) {
    const body = notes.join('\n');
    entries.unshift({
      id: `${prefix}:notes`,
      refs: [],
      title: 'Notes',
      body,
      summary: plainLine(body).slice(0, 200),
      meta: {},
    });
  }
  return entries;
}

/** The roundtable's sections, most important first; the builder trims from the end. */
function roundtableSections(
  paths: SharedContextPaths,
  now: Date,
  signals: CrossSignalsReport,
): ContextSection[] {
  const date = isoDate(now);
  const { canonical, rest } = splitPriorities(readTextOrNull(paths.priorities) ?? '');
  const automated = bulletEntries(rest.replace(/^##.*$/gm, ''), 'inputs').slice(-10);
  const dayStart = new Date(`${date}T00:00:00.000Z`);
  const outputs = listAgentOutputs(paths, {
    from: dayStart,
    to: new Date(dayStart.getTime() + 86_400_000),
  });
  const feedback = feedbackSince(paths, new Date(now.getTime() - 7 * 86_400_000)).slice(0, 20);
  const excerpt = (body: string) =>
    withoutEntitiesSection(body)
      .split('\n')
      .filter((line) => line.trim())
      .slice(0, 3)
      .join('\n');
  return [
    {
      id: 'priorities',
      title: 'Priorities (canonical)',
      entries: bulletEntries(canonical, 'priority'),
    },
    { id: 'inputs', title: 'Recent priority inputs', entries: automated },
    {
      id: 'outputs',
      title: `Agent outputs (${date})`,
      entries: outputs.map((output) => ({
        id: output.relPath,
        refs: [],
        title: output.title,
        body: excerpt(output.body),
        summary: plainLine(excerpt(output.body)).slice(0, 160),
        meta: {
          runtime: output.agent,
          createdAt: output.timestamp.toISOString(),
          tags: output.tags,
          label: output.agent,
        },
      })),
    },
    {
      id: 'signals',
      title: 'Cross-signals',
      entries: signals.signals.slice(0, 20).map((signal) => ({
        id: `signal:${signal.key}`,
        refs: [],
        title: signal.label,
        body: `${signal.counts.agents} agents (${signal.agents.join(', ')}), ${signal.counts.files} files`,
        summary: `${signal.counts.agents} agents`,
        meta: {},
      })),
    },
    {
      id: 'feedback',
      title: 'Recent feedback',
      entries: feedback.map((entry, index) => ({
        id: `feedback:${index}`,
        refs: [],
        title: `${entry.verdict}: ${entry.subject}`,
        body: entry.reason ?? '',
        summary: entry.reason?.slice(0, 120) ?? '',
        meta: { runtime: entry.agent, createdAt: entry.timestamp },
      })),
    },
  ];
}

const ROUNDTABLE_TRIM = [
  { section: 'feedback', action: 'compact' },
  { section: 'outputs', action: 'compact' },
  { section: 'feedback', action: 'drop', keep: 5 },
  { section: 'signals', action: 'drop', keep: 5 },
  { section: 'inputs', action: 'drop', keep: 3 },
  { section: 'outputs', action: 'drop', keep: 5 },
  { section: 'feedback', action: 'drop' },
  { section: 'signals', action: 'drop' },
  { section: 'inputs', action: 'drop' },
  { section: 'outputs', action: 'drop' },
] as const;

/**
 * The daily curator (seed 001, task 6). In order: bootstraps what is missing; merges each
 * staging file into the canonical section of `priorities.md` (one line with a `staged:`
 * marker; other lines are never touched) and archives it under `staging-archive/<date>/`;
 * merges the priorities-inbox entries not merged before into the automated-inputs section
 * (the inbox is never truncated; merged ids are kept in `.curator-state.json` and as markers);
 * rolls new `feedback/inbox.jsonl` lines into `feedback/<YYYY-Www>.jsonl`; writes
 * `cross-signals/<date>.json` and `roundtable/<date>.md` (built with core's context builder,
 * within `roundtableTokens`). Deterministic for a given `now` and directory; a rerun changes
 * nothing but regenerating the same files.
 */
export async function curateDaily(
  paths: SharedContextPaths,
  options: CurateOptions,
): Promise<CurateResult> {
  const agent = assertAgentId(options.agent ?? 'curator');
  const now = options.now;
  const date = isoDate(now);
  const warnings: string[] = [];
  bootstrapSharedContext(paths);
  const state = readState(paths, warnings);
  const original = readTextOrNull(paths.priorities) ?? '';
  let priorities = original;

  const stagedMerged: string[] = [];
  const archived: string[] = [];
  const staged = walkFiles(paths.staging)
    .filter((file) => file.endsWith('.md'))
    .map((file) => `staging/${file}`)
    .filter((relPath) => {
      const owner = relPath.split('/')[1] ?? '';
      const ok = AGENT_ID_PATTERN.test(owner) && relPath.split('/').length >= 3;
      if (!ok) warnings.push(`skipped ${relPath}: not under staging/<agent>/`);
      return ok;
    });
  const added: string[] = [];
  for (const relPath of staged) {
    const file = join(paths.root, ...relPath.split('/'));
    const { line, marker } = stagedLine(relPath, readFileSync(file, 'utf8'), statSync(file).mtime);
    if (!priorities.includes(marker) && !added.some((entry) => entry.includes(marker)))
      added.push(line);
    stagedMerged.push(relPath);
  }
  priorities = addToCanonical(priorities, added);

  const inbox = parseInbox(readTextOrNull(paths.prioritiesInbox) ?? '');
  for (const heading of inbox.malformed)
    warnings.push(`priorities.inbox.md: skipped a malformed entry: ${heading}`);
  const merged = new Set(state.mergedInbox);
  const inboxMerged: string[] = [];
  const inboxLines: string[] = [];
  for (const entry of inbox.entries) {
    const id = shortHash(`${entry.heading}\n${entry.text}`);
    const marker = `<!-- inbox:${id} -->`;
    if (merged.has(id) || priorities.includes(marker)) {
      merged.add(id);
      continue;
    }
    const [first = '', ...more] = entry.text.split('\n');
    inboxLines.push(
      `- ${entry.timestamp} **${entry.agent}**: ${first} ${marker}`,
      ...more.map((line) => (line.trim() ? `  ${line}` : '')),
    );
    merged.add(id);
    inboxMerged.push(entry.heading);
  }
  priorities = addToAutomated(priorities, inboxLines);

  const prioritiesChanged = priorities !== original;
  if (prioritiesChanged)
    policyWrite(paths, 'priorities.md', priorities, { agent, mode: 'overwrite', curator: true });
  for (const relPath of stagedMerged) archived.push(archive(paths, relPath, date, agent));

  const feedbackRolled = rollFeedback(paths, state, agent, warnings);
  const nextState: CuratorState = {
    version: 1,
    mergedInbox: [...merged].sort(),
    feedbackOffset: state.feedbackOffset,
  };
  policyWrite(paths, '.curator-state.json', `${JSON.stringify(nextState, null, 2)}\n`, {
    agent,
    mode: 'overwrite',
    curator: true,
  });

  const signals = await detectCrossSignals(paths, {
    now,
    ...(options.windowDays !== undefined && { windowDays: options.windowDays }),
    ...(options.llm && { llm: options.llm }),
  });
  warnings.push(...signals.warnings);

  // The builder brings the tokenizer (megabytes, about 0.5 s to load), which only the digest
  // needs: loaded here, so that importing this package (the OpenClaw plugin does) stays light.
  const { buildContext } = await import('@ctxbus/core');
  const built = buildContext(roundtableSections(paths, now, signals), markdownFormatter, {
    tokenBudget: options.roundtableTokens ?? 6_000,
    safetyMargin: 0,
    trimOrder: ROUNDTABLE_TRIM,
    header: {
      title: `Roundtable ${date}`,
      lines: [`_Daily digest by the shared-context curator (${now.toISOString()})._`],
    },
  });
  const roundtable = `roundtable/${date}.md`;
  policyWrite(paths, roundtable, `${built.text}\n`, { agent, mode: 'overwrite', curator: true });
  return {
    date,
    stagedMerged,
    archived,
    inboxMerged,
    feedbackRolled,
    prioritiesChanged,
    roundtable,
    crossSignals: signals.relPath ?? `cross-signals/${date}.json`,
    warnings,
  };
}
