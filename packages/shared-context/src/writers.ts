import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CtxbusError } from '@ctxbus/core/contract';
import type { FeedbackEntry } from './feedback.js';
import { assertInboxText, feedbackLine, parseFeedbackEntry } from './feedback.js';
import { policyAppend, policyWrite, readTextOrNull, redactedForDisk } from './files.js';
import { renderFrontMatter } from './front-matter.js';
import type { SharedContextPaths } from './paths.js';
import { assertAgentId, isoDate, isoWeek } from './paths.js';

/** Where a writer put its file: absolute and relative to the root. */
export interface WrittenFile {
  path: string;
  relPath: string;
  /** False when an identical file was there already (a retried write). */
  created: boolean;
}

/** A file-name slug: lowercase ASCII letters, digits and dashes, at most 60 characters. */
export function slugify(title: string): string {
  const slug = title
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 60)
    .replace(/-+$/g, '');
  return slug || 'untitled';
}

function checkedTitle(title: string): string {
  const clean = title.replace(/\s+/g, ' ').trim();
  if (clean.length === 0 || clean.length > 300) {
    throw new CtxbusError('validation_failed', 'a title is 1-300 characters', {
      details: { field: 'title' },
    });
  }
  return clean;
}

function checkedList(values: readonly string[] | undefined, field: string): string[] {
  const list = [...new Set((values ?? []).map((value) => value.trim()).filter(Boolean))];
  if (list.length > 32 || list.some((value) => value.length > 100 || value.includes('\n'))) {
    throw new CtxbusError(
      'validation_failed',
      `${field}: at most 32 one-line values of 100 characters`,
      {
        details: { field },
      },
    );
  }
  return list;
}

/**
 * Writes `text` at `dir/<base>.md`, or `<base>-2.md`… when a different file holds the name;
 * an identical file is left as it is (a retried write creates nothing).
 */
function writeUnique(
  paths: SharedContextPaths,
  relDir: string,
  base: string,
  text: string,
  agent: string,
): WrittenFile {
  for (let attempt = 1; attempt <= 100; attempt++) {
    const relPath = `${relDir}/${attempt === 1 ? base : `${base}-${attempt}`}.md`;
    const absolute = join(paths.root, ...relPath.split('/'));
    if (existsSync(absolute)) {
      if (readFileSync(absolute, 'utf8') === redactedForDisk(text))
        return { path: absolute, relPath, created: false };
      continue;
    }
    const path = policyWrite(paths, relPath, text, { agent, mode: 'create' });
    return { path, relPath, created: true };
  }
  throw new CtxbusError('limit_reached', `too many files named ${base} in ${relDir}`);
}

export interface AgentOutputInput {
  agent: string;
  title: string;
  /** Markdown. */
  body: string;
  tags?: readonly string[];
  entities?: readonly string[];
  /** Where the output came from (a session, a tool); recorded in the front matter. */
  source?: string;
  now?: Date;
}

/**
 * Writes an agent's output to `agent-outputs/<agent>/<YYYY-MM-DD>/<slug>.md` with a small
 * front matter: title, timestamp, agent, tags, entities, provenance.
 */
export function writeAgentOutput(paths: SharedContextPaths, input: AgentOutputInput): WrittenFile {
  const agent = assertAgentId(input.agent);
  const now = input.now ?? new Date();
  const title = checkedTitle(input.title);
  const text = `${renderFrontMatter({
    title,
    timestamp: now.toISOString(),
    agent,
    tags: checkedList(input.tags, 'tags'),
    entities: checkedList(input.entities, 'entities'),
    provenance: { writer: 'shared-context', ...(input.source && { source: input.source }) },
  })}\n${input.body.trim()}\n`;
  return writeUnique(paths, `agent-outputs/${agent}/${isoDate(now)}`, slugify(title), text, agent);
}

export interface StagedInput {
  agent: string;
  title: string;
  body: string;
  now?: Date;
}

/**
 * Proposes a change to the canonical priorities: `staging/<agent>/<YYYY-MM-DD>-<slug>.md`,
 * which the daily curator merges into `priorities.md` and then archives.
 */
export function stageForCurator(paths: SharedContextPaths, input: StagedInput): WrittenFile {
  const agent = assertAgentId(input.agent);
  const now = input.now ?? new Date();
  const title = checkedTitle(input.title);
  const text = `${renderFrontMatter({ title, timestamp: now.toISOString(), agent })}\n${input.body.trim()}\n`;
  return writeUnique(paths, `staging/${agent}`, `${isoDate(now)}-${slugify(title)}`, text, agent);
}

export interface AppendFeedbackOptions {
  /** `inbox` (default): `feedback/inbox.jsonl`; `week`: the curator's weekly roll-up. */
  file?: 'inbox' | 'week';
  /** Needed for `week`. */
  curator?: boolean;
}

/**
 * Appends one validated line to `feedback/inbox.jsonl` (any agent), or, for the curator, to
 * `feedback/<YYYY-Www>.jsonl` of the entry's ISO week. Returns the relative path.
 */
export function appendFeedback(
  paths: SharedContextPaths,
  entry: FeedbackEntry | Record<string, unknown>,
  options: AppendFeedbackOptions = {},
): string {
  const valid = parseFeedbackEntry(entry);
  const relPath =
    options.file === 'week'
      ? `feedback/${isoWeek(new Date(valid.timestamp))}.jsonl`
      : 'feedback/inbox.jsonl';
  policyAppend(paths, relPath, feedbackLine(valid), {
    agent: valid.agent,
    mode: 'append',
    ...(options.curator && { curator: true }),
  });
  return relPath;
}

export interface PrioritiesInboxInput {
  agent: string;
  text: string;
  now?: Date;
}

/**
 * Appends an entry to `priorities.inbox.md`: a `## <ISO timestamp> <agent>` heading and the
 * text (no line of which may start with `#`). Returns the heading.
 */
export function appendPrioritiesInbox(
  paths: SharedContextPaths,
  input: PrioritiesInboxInput,
): string {
  const agent = assertAgentId(input.agent);
  const body = assertInboxText(input.text);
  const heading = `## ${(input.now ?? new Date()).toISOString()} ${agent}`;
  const current = readTextOrNull(paths.prioritiesInbox) ?? '';
  const lead =
    current === '' || current.endsWith('\n\n') ? '' : current.endsWith('\n') ? '\n' : '\n\n';
  policyAppend(paths, 'priorities.inbox.md', `${lead}${heading}\n${body}\n`, {
    agent,
    mode: 'append',
  });
  return heading;
}

/** Replaces `kpis/<agent>.json` with a snapshot (last write wins). */
export function writeKpiSnapshot(
  paths: SharedContextPaths,
  input: { agent: string; metrics: Record<string, number | string | boolean | null>; now?: Date },
): string {
  const agent = assertAgentId(input.agent);
  const text = `${JSON.stringify({ agent, timestamp: (input.now ?? new Date()).toISOString(), metrics: input.metrics }, null, 2)}\n`;
  return policyWrite(paths, `kpis/${agent}.json`, text, { agent, mode: 'overwrite' });
}
