import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { splitPriorities } from '@ctxbus/shared-context';

// Seed 001: `shared-context/priorities.md` has a canonical section the curator keeps
// (`## CANONICAL (curator)`) and automated inputs below it. /priorities shows the canonical
// part, by the directory's own rule (@ctxbus/shared-context), so the bot, the agents' injection
// and the curator never disagree on what it is.

/** The canonical section of a priorities.md text ('' when it has none yet). */
export function canonicalPriorities(markdown: string): string {
  return splitPriorities(markdown).canonical.trim();
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
