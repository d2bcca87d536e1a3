import {
  closeSync,
  constants as fsConstants,
  fstatSync,
  fsyncSync,
  openSync,
  readFileSync,
  readSync,
  writeSync,
} from 'node:fs';
import { CtxbusError } from '@ctxbus/core/light';
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

const APPEND_NO_FOLLOW =
  fsConstants.O_RDWR | fsConstants.O_APPEND | fsConstants.O_CREAT | fsConstants.O_NOFOLLOW;

/**
 * history.jsonl opened to append (see appendHistory), never through a link: the directory is
 * ctxbus's, and a linked history.jsonl took the entries to wherever it pointed. Opened before
 * the handoff is written, so a refusal changes nothing.
 */
export function openHistory(paths: HandoffPaths): number {
  try {
    return openSync(paths.history, APPEND_NO_FOLLOW, 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ELOOP') throw error;
    throw new CtxbusError(
      'forbidden',
      `${paths.history} is a symbolic link: the handoff's history is written only as a file of its own`,
      { details: { reason: 'symlink', path: paths.history } },
    );
  }
}

/**
 * Appends one entry on a line of its own to `fd` (openHistory's), fsyncs and closes it. A torn
 * last line (a crash mid-append, or a line another tool left open) gets its end first: glued
 * to it, the entry was unreadable.
 */
export function appendHistory(fd: number, entry: HistoryEntry): void {
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
