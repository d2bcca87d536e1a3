import { closeSync, fsyncSync, openSync, readFileSync, writeSync } from 'node:fs';
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

/** Appends one entry and fsyncs it. */
export function appendHistory(paths: HandoffPaths, entry: HistoryEntry): void {
  const fd = openSync(paths.history, 'a', 0o600);
  try {
    writeSync(fd, `${JSON.stringify(entry)}\n`);
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
