import { mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';

// This package's one local test helper (it sits below test/kit): temporary directories that
// are removed after each test, and a wait for a condition that names what it waited for.

/**
 * A fresh directory (its real path), removed when the test that made it ends. The hook is the
 * test's own: a module-level afterEach here would be registered by the first file of a worker
 * only (vitest loads this module once per worker), and later files' directories were left.
 */
export function tempDir(prefix = 'ctxbus-exec-'): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
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
