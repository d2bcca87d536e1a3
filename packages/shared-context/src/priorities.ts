import { AUTOMATED_HEADING, CANONICAL_HEADING } from './bootstrap.js';

const HEADING_2 = /^##\s/;

/** The `[start, end)` line range of the `##` section whose heading line is `heading`. */
export function sectionRange(lines: readonly string[], heading: string): [number, number] | null {
  const start = lines.findIndex((line) => line.trim() === heading);
  if (start < 0) return null;
  let end = start + 1;
  while (end < lines.length && !HEADING_2.test(lines[end] ?? '')) end++;
  return [start, end];
}

/** Inserts lines at the end of a section (after its last non-blank line). */
function insertInSection(
  lines: string[],
  range: [number, number],
  added: readonly string[],
): string[] {
  let at = range[1];
  while (at > range[0] + 1 && (lines[at - 1] ?? '').trim() === '') at--;
  const after = lines.slice(at);
  const needsGap = after.length > 0 && (after[0] ?? '').trim() !== '';
  return [...lines.slice(0, at), ...added, ...(needsGap ? [''] : []), ...after];
}

/**
 * Adds lines to the end of the canonical section of `priorities.md`, leaving every other line
 * as it is. A file without the section gets it back, after its `#` title.
 */
export function addToCanonical(text: string, added: readonly string[]): string {
  if (added.length === 0) return text;
  let lines = text.replace(/\r\n/g, '\n').split('\n');
  let range = sectionRange(lines, CANONICAL_HEADING);
  if (!range) {
    const title = lines.findIndex((line) => /^#\s/.test(line));
    const at = title < 0 ? 0 : title + 1;
    lines = [...lines.slice(0, at), '', CANONICAL_HEADING, '', ...lines.slice(at)];
    range = sectionRange(lines, CANONICAL_HEADING) as [number, number];
  }
  return insertInSection(lines, range, added).join('\n');
}

/** Adds lines to the end of the automated-inputs section (created at the end when missing). */
export function addToAutomated(text: string, added: readonly string[]): string {
  if (added.length === 0) return text;
  let lines = text.replace(/\r\n/g, '\n').split('\n');
  let range = sectionRange(lines, AUTOMATED_HEADING);
  if (!range) {
    while (lines.length > 0 && (lines.at(-1) ?? '').trim() === '') lines.pop();
    lines = [...lines, '', AUTOMATED_HEADING, ''];
    range = sectionRange(lines, AUTOMATED_HEADING) as [number, number];
  }
  const result = insertInSection(lines, range, added);
  return result.at(-1) === '' ? result.join('\n') : `${result.join('\n')}\n`;
}

/** Drops HTML comments (template notes, merge markers) and runs of blank lines. */
export function withoutComments(text: string): string {
  return text
    .replace(/<!--[\s\S]*?-->/g, '')
    .split('\n')
    .map((line) => line.trimEnd())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/** The canonical section's body and the rest of the file (title line dropped), comment-free. */
export function splitPriorities(text: string): { canonical: string; rest: string } {
  const lines = text.replace(/\r\n/g, '\n').split('\n');
  const range = sectionRange(lines, CANONICAL_HEADING);
  const withoutTitle = (list: string[]) => list.filter((line) => !/^#\s/.test(line));
  if (!range) return { canonical: '', rest: withoutComments(withoutTitle(lines).join('\n')) };
  const canonical = withoutComments(lines.slice(range[0] + 1, range[1]).join('\n'));
  const rest = withoutComments(
    withoutTitle([...lines.slice(0, range[0]), ...lines.slice(range[1])]).join('\n'),
  );
  return { canonical, rest };
}

/** One parsed entry of `priorities.inbox.md`. */
export interface InboxEntry {
  timestamp: string;
  agent: string;
  text: string;
  heading: string;
}

const ENTRY_HEADING =
  /^## (\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})) ([a-z0-9][a-z0-9._-]{0,63})\s*$/;

/**
 * The inbox's entries in file order. Text before the first `## ` heading is the preamble;
 * a `## ` heading that is not `## <ISO timestamp> <agent>` is reported and its text skipped.
 */
export function parseInbox(text: string): { entries: InboxEntry[]; malformed: string[] } {
  const entries: InboxEntry[] = [];
  const malformed: string[] = [];
  let current: { heading: string; timestamp: string; agent: string; lines: string[] } | null = null;
  let skipping = false;
  const flush = () => {
    if (current) {
      const body = current.lines.join('\n').trim();
      if (body)
        entries.push({
          timestamp: current.timestamp,
          agent: current.agent,
          text: body,
          heading: current.heading,
        });
      else malformed.push(`${current.heading} (no text)`);
    }
    current = null;
  };
  for (const line of text.replace(/\r\n/g, '\n').split('\n')) {
    if (line.startsWith('## ')) {
      flush();
      const match = ENTRY_HEADING.exec(line);
      if (match?.[1] && match[2] && !Number.isNaN(Date.parse(match[1]))) {
        current = { heading: line.trim(), timestamp: match[1], agent: match[2], lines: [] };
        skipping = false;
      } else {
        malformed.push(line.trim());
        skipping = true;
      }
      continue;
    }
    if (current && !skipping) (current as { lines: string[] }).lines.push(line);
  }
  flush();
  return { entries, malformed };
}
