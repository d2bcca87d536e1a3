import {
  chmodSync,
  closeSync,
  existsSync,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';

/**
 * Sleeps this thread for `ms` (a short wait inside synchronous file work: a lock held by
 * another process, which an await could not wait for).
 */
export function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Makes `path` and its missing parents, one at a time, each with `mode`. Not Node's
 * `mkdirSync(path, { recursive: true })`, which loops forever (a core busy, SIGTERM ignored)
 * where the file system answers mkdir with ENOENT under a parent that exists (/proc/x): here
 * that is one error.
 */
export function makeDirectory(path: string, mode: number): void {
  const missing: string[] = [];
  for (let at = resolve(path); !existsSync(at); at = dirname(at)) {
    missing.unshift(at);
    if (dirname(at) === at) break;
  }
  for (const directory of missing) mkdirSync(directory, { mode });
}

export interface AtomicWriteOptions {
  /** The file's permissions, whatever the umask (default 0o644; 0o600 for anything secret). */
  mode?: number;
  /**
   * Also fsync the file before the rename and its directory after: the new content survives a
   * crash of the machine, not only of the process (slower; for files that are the record).
   */
  durable?: boolean;
  /**
   * When `path` is a symbolic link, replace the file it names and keep the link (a user's
   * dotfiles, linked into place); by default the link itself is replaced by the new file.
   */
  followLink?: boolean;
}

/**
 * Replaces `path` so that a reader sees the old file or the new one, never part of one, and a
 * process killed mid-write leaves the old file: a temporary file beside it (named with a
 * leading dot, so directory scanners skip it), then a rename. The directory must exist.
 */
export function writeFileAtomic(
  path: string,
  data: string,
  options: AtomicWriteOptions = {},
): void {
  const mode = options.mode ?? 0o644;
  const target = options.followLink ? linkTarget(path) : path;
  const temporary = join(dirname(target), `.${basename(target)}.${temporarySuffix()}.tmp`);
  try {
    const fd = openSync(temporary, 'wx', mode);
    try {
      writeSync(fd, data);
      if (options.durable) fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    chmodSync(temporary, mode);
    renameSync(temporary, target);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
  if (options.durable) syncDirectory(dirname(target));
}

/** The file a symbolic link at `path` names (`path` itself when it is no link). */
function linkTarget(path: string): string {
  try {
    if (!lstatSync(path).isSymbolicLink()) return path;
  } catch {
    return path;
  }
  try {
    return realpathSync(path);
  } catch {
    // A link to a file not there yet: the file it names, one step.
    return resolve(dirname(path), readlinkSync(path));
  }
}

/**
 * 12 random hex digits. Not node:crypto: loading it costs a hook ~5 ms of CPU per run
 * (measured), and the name needs no secrecy: it is created exclusively (`wx`, which also
 * refuses a symlink planted in its place), so a clash fails the write instead of sharing a file.
 */
function temporarySuffix(): string {
  return Math.floor(Math.random() * 2 ** 48)
    .toString(16)
    .padStart(12, '0');
}

function syncDirectory(dir: string): void {
  try {
    const fd = openSync(dir, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // Some filesystems refuse fsync on a directory; the rename itself is still atomic.
  }
}
