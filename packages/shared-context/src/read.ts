import { readFile } from 'node:fs/promises';
import type { SharedContextPaths } from './paths.js';
import { isoDate } from './paths.js';
import { splitPriorities, withoutComments } from './priorities.js';

/** Roundtable sections that repeat `priorities.md` (see the curator). */
const ROUNDTABLE_PRIORITY_SECTIONS = ['Priorities (canonical)', 'Recent priority inputs'];

export interface InjectionOptions {
  /** Cap on the returned text (default 4000 characters). */
  maxChars?: number;
  /** Picks today's roundtable (default: the current time). */
  now?: Date;
}

async function readOrNull(path: string): Promise<string | null> {
  try {
    return await readFile(path, 'utf8');
  } catch {
    return null;
  }
}

/** Below this many characters of room, an over-long line is left out rather than cut. */
const MIN_PARTIAL_LINE = 40;

/**
 * The lines of `text` that fit in `maxChars`, cut at a line boundary. A line too long for the
 * room left is cut inside (at a space when there is one near the end) and ends in `…`, so one
 * long line does not hide everything after the heading.
 */
export function capAtLine(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const kept: string[] = [];
  let length = 0;
  for (const line of text.split('\n')) {
    const separator = kept.length > 0 ? 1 : 0;
    if (length + separator + line.length > maxChars) {
      const partial = cutLine(line, maxChars - length - separator - 1);
      if (partial !== null) kept.push(`${partial}…`);
      break;
    }
    kept.push(line);
    length += separator + line.length;
  }
  return kept.join('\n').trimEnd();
}

/** At most `room` characters of `line`, ended at a word when one ends near the cut. */
function cutLine(line: string, room: number): string | null {
  if (room < MIN_PARTIAL_LINE) return null;
  let end = room;
  // Never half a surrogate pair.
  if (/[\uD800-\uDBFF]/.test(line.charAt(end - 1))) end--;
  const space = line.lastIndexOf(' ', end);
  if (space > end - MIN_PARTIAL_LINE / 2 && space > 0) end = space;
  const cut = line.slice(0, end).trimEnd();
  return cut.length > 0 ? cut : null;
}

/**
 * What an agent reads before it acts (seed 001, task 4): the canonical priorities first, then
 * the automated inputs, then today's roundtable when there is one, as Markdown capped at
 * `maxChars` (cut at a line; an over-long one inside, marked `…`). Comments (template notes, curator markers) are left out. Null
 * when there is nothing to say (no directory, only empty templates). Never throws: a missing
 * or unreadable file counts as absent. Callers time-box it (it reads two small files).
 */
export async function readSharedContextInjection(
  paths: SharedContextPaths,
  options: InjectionOptions = {},
): Promise<string | null> {
  const maxChars = options.maxChars ?? 4_000;
  if (maxChars <= 0) return null;
  const date = isoDate(options.now ?? new Date());
  const [priorities, roundtable] = await Promise.all([
    readOrNull(paths.priorities),
    readOrNull(paths.roundtableFile(date)),
  ]);
  const parts: string[] = [];
  if (priorities !== null) {
    const { canonical, rest } = splitPriorities(priorities);
    const inputs = rest
      .split('\n')
      .filter((line) => !/^##\s+Automated inputs\s*$/.test(line))
      .join('\n')
      .trim();
    if (canonical) parts.push(`## Shared priorities\n${canonical}`);
    if (inputs)
      parts.push(
        `## Priority inputs (automated, not yet curated)\n${inputs.replace(/^## /gm, '### ')}`,
      );
  }
  if (roundtable !== null) {
    // The priorities are above already: the roundtable's copies of them are left out.
    const body = withoutComments(roundtable)
      .replace(/^# .*\n?/, '')
      .split(/\n(?=## )/)
      .filter(
        (part) =>
          !ROUNDTABLE_PRIORITY_SECTIONS.some((title) => part.trim().startsWith(`## ${title}\n`)),
      )
      .join('\n')
      .trim();
    if (body) parts.push(`## Today's roundtable (${date})\n${body.replace(/^## /gm, '### ')}`);
  }
  if (parts.length === 0) return null;
  const text = capAtLine(`# Shared context\n\n${parts.join('\n\n')}`, maxChars);
  return text.length > 0 ? text : null;
}
