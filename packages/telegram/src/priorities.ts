import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

// Seed 001: `shared-context/priorities.md` has a canonical top section that a curator keeps,
// and automated inputs appended below it with timestamps. /priorities shows the canonical part:
// everything above the first thematic break (a line of ---, *** or ___) or the first heading
// that announces the appended inputs (inbox, automated, appended, proposed, incoming).

const APPENDED_HEADING = /^#{1,6}\s+.*\b(inbox|automated|appended|proposed|incoming)\b/i;
const THEMATIC_BREAK = /^ {0,3}([-*_])( *\1){2,} *$/;

/** The canonical section of a priorities.md text. */
export function canonicalPriorities(markdown: string): string {
  const lines = markdown.replace(/\r\n/g, '\n').split('\n');
  // A front matter block is not the section.
  let start = 0;
  if (lines[0]?.trim() === '---') {
    const end = lines.indexOf('---', 1);
    if (end > 0) start = end + 1;
  }
  const kept: string[] = [];
  for (const line of lines.slice(start)) {
    if (THEMATIC_BREAK.test(line) || (kept.some((l) => l.trim()) && APPENDED_HEADING.test(line)))
      break;
    kept.push(line);
  }
  return kept.join('\n').trim();
}

/** Reads `<dir>/priorities.md`; null when the file is not there. */
export async function readPriorities(dir: string): Promise<string | null> {
  try {
    return canonicalPriorities(await readFile(join(dir, 'priorities.md'), 'utf8'));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}
