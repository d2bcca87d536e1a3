import {
  chmodSync,
  closeSync,
  ftruncateSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import type { DatabaseSync } from 'node:sqlite';
import { makeDirectory, sleepSync } from '@ctxbus/client/files';
import { CtxbusError } from '@ctxbus/core/light';

// The per-user data directory ($CTXBUS_DATA, else the platform's place) is shared with the
// adapters, which write turn-context snapshots under it.
export { defaultDataDir } from '@ctxbus/client/turn-log';

export function databasePath(dataDir: string): string {
  return join(dataDir, 'ctxbus.db');
}

interface LockInfo {
  pid: number;
  url?: string;
  startedAt?: string;
}

function lockPath(dataDir: string): string {
  return join(dataDir, 'hub.lock');
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The hub holding the data directory, if one is running. */
export function runningHub(dataDir: string): LockInfo | null {
  try {
    const info = JSON.parse(readFileSync(lockPath(dataDir), 'utf8')) as LockInfo;
    return Number.isInteger(info.pid) && info.pid !== process.pid && alive(info.pid) ? info : null;
  } catch {
    return null;
  }
}

/**
 * Refuses to touch a data directory a running hub holds open; `instead` says what to do (a
 * second `serve` uses the running hub, an offline command goes through it).
 */
export function assertNoHub(
  dataDir: string,
  instead = 'use --url with an admin token instead',
): void {
  const hub = runningHub(dataDir);
  if (hub) {
    throw new CtxbusError(
      'conflict',
      `a hub (pid ${hub.pid}${hub.url ? `, ${hub.url}` : ''}) is serving ${dataDir}; ${instead}`,
    );
  }
}

export interface DataDirLock {
  update(info: Omit<LockInfo, 'pid'>): void;
  release(): void;
}

/**
 * An exclusive lock on `<dataDir>/hub.lock.db` (SQLite's, so the operating system's: gone
 * with the process), or the conflict of another hub holding it.
 */
function holdExclusive(
  dataDir: string,
  instead: string,
  cannot: (error: unknown) => CtxbusError,
): DatabaseSync {
  const { DatabaseSync } = process.getBuiltinModule('node:sqlite');
  // Two starters can each hold the file's shared lock on the way to the exclusive one, and
  // both be refused: each tries again a few times, at random moments, before it gives way.
  for (let attempt = 1; ; attempt++) {
    let database: DatabaseSync | undefined;
    try {
      database = new DatabaseSync(join(dataDir, 'hub.lock.db'), { timeout: 0 });
      database.exec('PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE');
      return database;
    } catch (error) {
      database?.close();
      const busy = /locked|busy/i.test((error as Error).message);
      if (busy && attempt < EXCLUSIVE_TRIES) {
        sleepSync(5 + Math.random() * 20);
        continue;
      }
      throw busy ? heldBy(dataDir, instead) : cannot(error);
    }
  }
}

/** How many times a starter tries for the exclusive lock (some 150 ms in all). */
const EXCLUSIVE_TRIES = 10;

/** The conflict of a data directory another hub holds (or is taking). */
function heldBy(dataDir: string, instead: string): CtxbusError {
  const hub = runningHub(dataDir);
  return new CtxbusError(
    'conflict',
    hub
      ? `a hub (pid ${hub.pid}${hub.url ? `, ${hub.url}` : ''}) is serving ${dataDir}; ${instead}`
      : `another hub is starting on ${dataDir}; ${instead}`,
  );
}

/** Takes the data directory for this hub process; a stale lock (dead pid) is replaced. */
export function lockDataDir(dataDir: string): DataDirLock {
  const cannot = (error: unknown) =>
    new CtxbusError(
      'internal',
      `cannot use the data directory ${dataDir}: ${(error as Error).message}`,
      { retryable: false },
    );
  try {
    // Private items and webhook secrets live here: the owner alone may look in.
    makeDirectory(dataDir, 0o700);
    const stat = statSync(dataDir);
    if ((stat.mode & 0o077) !== 0 && stat.uid === process.getuid?.()) chmodSync(dataDir, 0o700);
  } catch (error) {
    throw cannot(error);
  }
  const instead =
    'use that hub (stop it first to serve this directory again), or serve another directory with --data';
  assertNoHub(dataDir, instead);
  // The exclusive lock is the operating system's, on hub.lock.db, held while this process
  // lives (a killed hub's goes with it): two hubs started at once cannot both pass, as they
  // could when each checked hub.lock, then replaced it. hub.lock only says who holds it.
  const exclusive = holdExclusive(dataDir, instead, cannot);
  const path = lockPath(dataDir);
  let fd: number;
  try {
    rmSync(path, { force: true });
    fd = openSync(path, 'wx', 0o600);
  } catch (error) {
    exclusive.close();
    throw cannot(error);
  }
  const write = (info: Omit<LockInfo, 'pid'>) => {
    ftruncateSync(fd, 0);
    writeSync(fd, JSON.stringify({ pid: process.pid, ...info }), 0);
  };
  write({ startedAt: new Date().toISOString() });
  return {
    update: write,
    release() {
      try {
        closeSync(fd);
      } catch {}
      try {
        exclusive.close();
      } catch {}
      const holder = (() => {
        try {
          return (JSON.parse(readFileSync(path, 'utf8')) as LockInfo).pid;
        } catch {
          return null;
        }
      })();
      if (holder === process.pid) rmSync(path, { force: true });
    },
  };
}
