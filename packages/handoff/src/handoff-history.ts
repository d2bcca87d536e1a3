import {
  closeSync,
  fstatSync,
  fsyncSync,
  openSync,
  readFileSync,
  readSync,
  writeSync,
} from 'node:fs';
import type { HandoffPaths } from './handoff-paths.js';

// history.jsonl: one line per write of the handoff, append-only.

/** One line of history.jsonl. */
export interface HistoryEntry {
  sequence: number;
  timestamp: string;
  event: string;
  author: string;
  model: string;
  checksum: string;
}

/**
 * Appends one entry on a line of its own and fsyncs it. A torn last line (a crash mid-append,
 * or a line another tool left open) gets its end first: glued to it, the entry was unreadable.
 */
export function appendHistory(paths: HandoffPaths, entry: HistoryEntry): void {
  const fd = openSync(paths.history, 'a+', 0o600);
  try {
    const { size } = fstatSync(fd);
    const last = Buffer.alloc(1);
    const open = size > 0 && readSync(fd, last, 0, 1, size - 1) === 1 && last[0] !== 0x0a;
    writeSync(fd, `${open ? '\n' : ''}${JSON.stringify(entry)}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** history.jsonl's entries; a torn last line (a crash mid-append) is left out. */
export function readHistory(paths: HandoffPaths): HistoryEntry[] {
  let text: string;
  try {
    text = readFileSync(paths.history, 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as HistoryEntry];
      } catch {
        return [];
      }
    });
}
