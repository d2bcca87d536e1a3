import { randomBytes } from 'node:crypto';
import {
  closeSync,
  fstatSync,
  linkSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { writeFileAtomic as writeAtomic } from '@ctxbus/client/files';
import { CtxbusError, hashValue, parseOrThrow } from '@ctxbus/core/contract';
import type { HistoryEntry } from './handoff-history.js';
import { appendHistory, openHistory, readHistory } from './handoff-history.js';
import type { HandoffPaths } from './handoff-paths.js';
import type { Handoff, HandoffContent } from './handoff-schema.js';
import { HANDOFF_SCHEMA_VERSION, handoffSchema } from './handoff-schema.js';

// The `.context-bus/` directory of seed 003. Every write takes the lock, reads the current file
// (checking its checksum), writes the next one to a temporary file, fsyncs it and renames it
// over the old one, then appends a line to history.jsonl: a reader sees the old file or the new
// one, never half of one, and a `kill -9` at any point leaves the last good file.

/** `sha256:` + the SHA-256 of the document's canonical JSON, the checksum field left out. */
export function checksumOf(document: Omit<Handoff, 'checksum'> | Handoff): string {
  const { checksum: _ignored, ...rest } = document as Handoff;
  return `sha256:${hashValue(rest)}`;
}

function corrupt(path: string, reason: string, why: string): CtxbusError {
  return new CtxbusError('validation_failed', `${path} ${why}`, { details: { path, reason } });
}

/**
 * The handoff, checked: null when there is none yet. A file that is not JSON, breaks the schema
 * or fails its checksum is a `validation_failed` error naming why (`details.reason`: json,
 * schema or checksum); nothing here ever repairs it silently.
 */
export function readHandoff(paths: HandoffPaths): Handoff | null {
  let text: string;
  try {
    text = readFileSync(paths.handoff, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw corrupt(paths.handoff, 'json', 'is not JSON');
  }
  const handoff = asHandoff(paths.handoff, raw);
  if (checksumOf(handoff) !== handoff.checksum) throw checksumFailed(paths.handoff);
  return handoff;
}

function checksumFailed(path: string): CtxbusError {
  return corrupt(
    path,
    'checksum',
    "fails its checksum: it was changed outside ctxbus or damaged (if you or seed 003's own scripts wrote it, `ctxbus handoff adopt` takes it as it is; a heartbeat with --force starts over)",
  );
}

/**
 * `raw` as a v2 handoff, or a `schema` error naming its first problem. A handoff whose only
 * fault is its checksum's form (seed 003's example has `sha256:abc123...`) fails its checksum.
 */
function asHandoff(path: string, raw: unknown): Handoff {
  const parsed = handoffSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  if (parsed.error.issues.every((issue) => issue.path.join('.') === 'checksum')) {
    throw checksumFailed(path);
  }
  const issue = parsed.error.issues[0];
  throw corrupt(
    path,
    'schema',
    `is not a v2 handoff: ${issue?.path.join('.') || 'document'}: ${issue?.message ?? 'invalid'}`,
  );
}

/**
 * The handoff as the file holds it, its checksum not checked (any string, as seed 003's own
 * scripts write one over bytes nobody can hash again): for adopting a file written outside
 * ctxbus. Null when there is none; a file that is not JSON or not a v2 handoff is refused.
 */
export function readHandoffUnchecked(paths: HandoffPaths): Handoff | null {
  try {
    return readHandoff(paths);
  } catch (error) {
    if (!CtxbusError.isInstance(error)) throw error;
    const reason = (error.details as { reason?: string } | undefined)?.reason;
    if (reason !== 'checksum' && reason !== 'schema') throw error;
  }
  const raw = JSON.parse(readFileSync(paths.handoff, 'utf8')) as Record<string, unknown>;
  return asHandoff(paths.handoff, { ...raw, checksum: checksumOf(raw as Handoff) });
}

/** How far ahead of this clock a handoff's time may be (another machine's clock) and count. */
export const FUTURE_SKEW_MS = 5 * 60_000;

/**
 * Whether the handoff is older than `maxAgeMs` at `now`, or dated ahead of it by more than a
 * clock's skew: a file dated 2099 is no fresh handoff, whatever its age reads as.
 */
export function isStale(handoff: Handoff, maxAgeMs: number, now: Date): boolean {
  const age = now.getTime() - Date.parse(handoff.timestamp);
  return age > maxAgeMs || age < -FUTURE_SKEW_MS;
}

export interface LockOptions {
  /** How long to wait for another writer (default 10 s); then a `conflict` error. */
  timeoutMs?: number;
  /** A lock older than this, or whose process is gone, is taken over (default 30 s). */
  staleMs?: number;
}

/**
 * A `.lock` that is not a plain file (a directory, a symlink, a fifo) was never made by a
 * writer, and would block every one of them: it is moved aside, kept for whoever looks.
 * Returns whether it was.
 */
function setAsideForeignLock(lockPath: string): boolean {
  try {
    if (lstatSync(lockPath).isFile()) return false;
  } catch {
    return false; // released meanwhile
  }
  renameSync(lockPath, `${lockPath}.not-a-lock-${Date.now()}-${process.pid}`);
  return true;
}

/** Which lock file was judged: an inode is reused at once, so its content too. */
export interface LockIdentity {
  inode: number;
  text: string;
}

/**
 * `.lock` when its holder is gone (its process dead, or the lock older than `staleMs`), else
 * null. Read through one descriptor, so the inode is the file judged.
 */
function goneHolderLock(lockPath: string, staleMs: number): LockIdentity | null {
  let text: string;
  let modified: number;
  let inode: number;
  let fd: number | undefined;
  try {
    fd = openSync(lockPath, 'r');
    const stats = fstatSync(fd);
    [modified, inode] = [stats.mtimeMs, stats.ino];
    text = readFileSync(fd, 'utf8');
  } catch {
    return null; // released meanwhile: just try again
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  const judged = { inode, text };
  if (Date.now() - modified > staleMs) return judged;
  // A lock is made whole (see takeLock): one without a pid was left by a writer killed between
  // creating and writing it (an older ctxbus), or by something else. A moment's grace, then gone.
  const pid = Number(text.trim().split(' ')[0]);
  if (!Number.isInteger(pid) || pid <= 0) {
    return Date.now() - modified > NO_PID_GRACE_MS ? judged : null;
  }
  try {
    process.kill(pid, 0);
    return null;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH' ? judged : null;
  }
}

/**
 * Removes the gone holder's `.lock`, the file judged (`stale`), and nothing else. Writers
 * waiting on one stale lock each judge it gone; a plain removal by the slower one deleted the
 * lock the quicker one had taken meanwhile, and both wrote. The lock is renamed aside (only one
 * rename takes a given file) and compared, inode and content (each lock names its writer and a
 * nonce): a newer lock caught that way goes back.
 */
export function removeGoneLock(lockPath: string, stale: LockIdentity): void {
  const aside = `${lockPath}.gone-${process.pid}-${randomBytes(6).toString('hex')}`;
  try {
    renameSync(lockPath, aside);
  } catch {
    return; // removed or replaced meanwhile: try to take it again
  }
  try {
    if (lstatSync(aside).ino === stale.inode && readFileSync(aside, 'utf8') === stale.text) return;
    // A live writer's lock: put it back. (A third writer taking the lock in the instant it was
    // away is the one interleaving left; each of the two before needs its own stale lock.)
    try {
      linkSync(aside, lockPath);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EPERM' || code === 'ENOTSUP' || code === 'EOPNOTSUPP') {
        renameSync(aside, lockPath);
      }
    }
  } finally {
    rmSync(aside, { force: true });
  }
}

/** How long a lock without a pid may be in the making (by an older ctxbus) before it is gone. */
const NO_PID_GRACE_MS = 2_000;

/**
 * Creates `.lock` holding this process's pid, or false when another writer holds it. The lock
 * is a hard link to a temporary file already written, so it is never seen empty: created
 * empty and then written, a writer killed in between left a lock that read as "being written"
 * until it went stale, past every other writer's wait. Where hard links are refused, the lock
 * is created exclusively and written.
 */
function takeLock(lockPath: string): boolean {
  // pid first (as seed-era readers take it), then when and a nonce: no two locks read alike.
  const line = `${process.pid} ${Date.now()} ${randomBytes(4).toString('hex')}\n`;
  const temp = `${lockPath}.${process.pid}.${randomBytes(6).toString('hex')}`;
  writeFileSync(temp, line, { mode: 0o600 });
  try {
    linkSync(temp, lockPath);
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP') throw error;
    return takeLockExclusively(lockPath, line);
  } finally {
    rmSync(temp, { force: true });
  }
}

function takeLockExclusively(lockPath: string, line: string): boolean {
  let fd: number;
  try {
    fd = openSync(lockPath, 'wx', 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
  try {
    writeSync(fd, line);
  } finally {
    closeSync(fd);
  }
  return true;
}

/** Runs `fn` holding `.lock` (created whole and exclusively; a dead holder's lock is taken over). */
export async function withLock<T>(
  paths: HandoffPaths,
  fn: () => T,
  options: LockOptions = {},
): Promise<T> {
  const { timeoutMs = 10_000, staleMs = 30_000 } = options;
  mkdirSync(paths.dir, { recursive: true });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (takeLock(paths.lock)) {
      try {
        return fn();
      } finally {
        rmSync(paths.lock, { force: true });
      }
    }
    if (setAsideForeignLock(paths.lock)) continue;
    const gone = goneHolderLock(paths.lock, staleMs);
    if (gone !== null) {
      removeGoneLock(paths.lock, gone);
      continue;
    }
    if (Date.now() > deadline) {
      throw new CtxbusError(
        'conflict',
        `${paths.lock} is held by another writer (pid ${readFileSync(paths.lock, 'utf8').split(' ')[0]}) for over ${timeoutMs} ms`,
      );
    }
    // Another writer holds it for a few milliseconds: wait a little, with jitter.
    await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 20));
  }
}

/** Writes `text` to `path` atomically and durably: temp file, fsync, rename, fsync of the directory. */
export function writeFileAtomic(path: string, text: string): void {
  writeAtomic(path, text, { mode: 0o600, durable: true });
}

export interface UpdateOptions extends LockOptions {
  now?: Date;
  /** What history.jsonl records (heartbeat, switch, ...). */
  event: string;
  /** Replace a file that fails its checks instead of refusing (says so in the history). */
  force?: boolean;
  /**
   * Take a file that fails only its checksum as it is (seed 003's scripts wrote it), its own
   * timestamp kept: its content is as old as that, so the staleness check still applies.
   */
  adopt?: boolean;
}

/** The highest sequence history.jsonl names (0: none). */
function lastSequence(paths: HandoffPaths): number {
  return readHistory(paths).reduce(
    (highest, entry) =>
      Number.isSafeInteger(entry.sequence) ? Math.max(highest, entry.sequence) : highest,
    0,
  );
}

/**
 * The one way the handoff changes: under the lock, `update` gets the current (checked) handoff
 * and returns the content of the next; the sequence, timestamp and checksum are the file's own.
 */
export async function updateHandoff(
  paths: HandoffPaths,
  update: (current: Handoff | null) => HandoffContent & { keepTimestamp?: boolean },
  options: UpdateOptions,
): Promise<Handoff> {
  return withLock(
    paths,
    () => {
      let current: Handoff | null;
      try {
        current = options.adopt ? readHandoffUnchecked(paths) : readHandoff(paths);
      } catch (error) {
        if (!options.force) throw error;
        current = null;
      }
      const content = update(current);
      const now = (options.now ?? new Date()).toISOString();
      const unsigned = {
        schema_version: HANDOFF_SCHEMA_VERSION,
        // A file replaced by force (unreadable) goes on from the history's last sequence: back
        // at 1, a later switch's sequence repeats one a reader already saw.
        sequence: (current?.sequence ?? lastSequence(paths)) + 1,
        // Content as old as the current one's (adopted, or handed over stale) keeps its time.
        timestamp: (options.adopt || content.keepTimestamp) && current ? current.timestamp : now,
        author: content.author,
        handoff_ready: content.handoff_ready,
        model: content.model,
        task: content.task,
        context: content.context,
        files_touched: content.files_touched,
      } satisfies Omit<Handoff, 'checksum'>;
      const checksum = checksumOf(unsigned);
      // The seed's field order, checksum fourth.
      // What a heartbeat or switch was given is checked here: a bad field is validation_failed
      // naming it (the CLI's exit 2), not the schema's raw report.
      const next: Handoff = parseOrThrow(
        handoffSchema,
        {
          schema_version: unsigned.schema_version,
          sequence: unsigned.sequence,
          timestamp: unsigned.timestamp,
          checksum,
          author: unsigned.author,
          handoff_ready: unsigned.handoff_ready,
          model: unsigned.model,
          task: unsigned.task,
          context: unsigned.context,
          files_touched: unsigned.files_touched,
        },
        'handoff',
      );
      const history = openHistory(paths);
      try {
        writeFileAtomic(paths.handoff, `${JSON.stringify(next, null, 2)}\n`);
      } catch (error) {
        closeSync(history);
        throw error;
      }
      const entry: HistoryEntry = {
        sequence: next.sequence,
        // When it was written (an adopted handoff keeps the time of its content).
        timestamp: now,
        event: options.force && !current ? `${options.event} (forced)` : options.event,
        author: next.author,
        model: next.model.current,
        checksum: next.checksum,
      };
      appendHistory(history, entry);
      return next;
    },
    options,
  );
}
