// The child processes of the side-by-side task benchmark: peer-process.ts (a peer's worker or a
// producer) and `ctxbus worker`, each read line by line.
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { spawnCli, waitUntil } from '@ctxbus/test-kit';

const PEER_SCRIPT = fileURLToPath(new URL('./peer-process.ts', import.meta.url));

/** Long enough for 1,000 tasks at a few per second on a loaded machine: a hang guard only. */
export const RUN_GUARD_MS = 900_000;

export interface Child {
  name: string;
  process: ChildProcess;
  pid: number;
  stderr(): string;
  /** Fails when the process has exited (it should live until stopped). */
  alive(): void;
  stop(): Promise<void>;
}

function wrap(name: string, child: ChildProcess, onLine: (line: string) => void): Child {
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  if (child.stdout) createInterface({ input: child.stdout }).on('line', onLine);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    name,
    process: child,
    pid: child.pid ?? 0,
    stderr: () => stderr,
    alive() {
      if (child.exitCode !== null || child.signalCode !== null)
        throw new Error(`${name} exited (${child.exitCode ?? child.signalCode}): ${stderr}`);
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** node peer-process.ts ARGS; each stdout line goes to `onLine`. */
export function startPeer(name: string, args: string[], onLine: (line: string) => void): Child {
  const child = spawn(process.execPath, [PEER_SCRIPT, ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  return wrap(name, child, onLine);
}

/** A real `ctxbus worker` process. */
export function startCtxbusWorker(name: string, args: string[], env: NodeJS.ProcessEnv): Child {
  const run = spawnCli(['worker', ...args], { env, timeoutMs: RUN_GUARD_MS * 2 });
  run.done.catch(() => {});
  return wrap(name, run.child, () => {});
}

/** Waits until `check` holds, failing at once when one of `children` has died. */
export function waitWhileAlive(
  children: readonly Child[],
  check: () => boolean | Promise<boolean>,
  what: string,
): Promise<void> {
  return waitUntil(
    () => {
      for (const child of children) child.alive();
      return check();
    },
    what,
    { timeoutMs: RUN_GUARD_MS },
  );
}
