import { readdirSync, rmSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';

/** Which files of a directory pruneFiles removes. */
export interface PruneOptions {
  /** Only files whose names end with this (`.json`, `.jsonl`). */
  extension: string;
  /** How many of the most recently written are kept. */
  keep: number;
  /** Also removes any not written for longer than this. */
  maxAgeMs?: number;
  /** A path never removed (it still counts among the kept). */
  spare?: string;
  now?: number;
}

/**
 * Keeps a directory of per-session files bounded however many sessions come and go: removes
 * those past the `keep` most recently written (and those older than `maxAgeMs`). Returns the
 * names it removed; never throws (a failed prune tries again at the next new session).
 */
export function pruneFiles(dir: string, options: PruneOptions): string[] {
  const { extension, keep, maxAgeMs, spare, now = Date.now() } = options;
  const removed: string[] = [];
  try {
    const files = readdirSync(dir)
      .filter((name) => name.endsWith(extension))
      .flatMap((name) => {
        const stat = statSync(join(dir, name), { throwIfNoEntry: false });
        return stat?.isFile() ? [{ name, usedAt: stat.mtimeMs }] : [];
      })
      .sort((a, b) => b.usedAt - a.usedAt || a.name.localeCompare(b.name));
    const spared = spare === undefined ? null : basename(spare);
    for (const [rank, { name, usedAt }] of files.entries()) {
      if (name === spared) continue;
      const old = maxAgeMs !== undefined && now - usedAt > maxAgeMs;
      if (rank < keep && !old) continue;
      rmSync(join(dir, name), { force: true });
      removed.push(name);
    }
  } catch {
    // what is left is removed at the next new session
  }
  return removed;
}
