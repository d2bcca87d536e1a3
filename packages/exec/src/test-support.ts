import { mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';

// This package's one local test helper (it sits below test/kit): temporary directories that
// are removed after each test, and a wait for a condition that names what it waited for.

const made: string[] = [];

afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A fresh directory (its real path), removed after the test. */
export function tempDir(prefix = 'ctxbus-exec-'): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  made.push(dir);
  return dir;
}

/** Waits until `check` holds, or fails naming `what` (never a sleep standing in for a wait). */
export async function waitUntil(
  check: () => boolean,
  what: string,
  timeoutMs = 90_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Whether a process is gone (a zombie waiting to be reaped by init counts as gone). */
export function processGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return true;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

/** The node binary running the tests (children get a fixed PATH, so name it absolutely). */
export const NODE = process.execPath;

/**
 * The live processes whose command line has `tag` as an argument, by their pid on this
 * machine (a pid a process reads inside a PID namespace is the namespace's, not this one).
 */
export function processesTagged(tag: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (args.includes(tag) && !processGone(Number(entry))) found.push(Number(entry));
    } catch {
      // Gone since the listing.
    }
  }
  return found;
}
