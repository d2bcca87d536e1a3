import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { constants } from 'node:os';
import { fromWholeLine, toWholeLine } from './output-cut.js';

// Runs one argv (no shell) in its own process group with stdin closed, under a hard timeout
// and an inactivity timeout; a timeout or a cancel ends the WHOLE group (SIGTERM, then SIGKILL
// after a grace period). Whatever is left of the group when the command exits is killed too,
// so nothing it started outlives it. A process that starts its own session escapes the group:
// when argv is bwrap with a PID namespace and --die-with-parent (the sandbox, or
// pidNamespaceArgv), `pidNamespace: true` makes a timeout or cancel signal every process in the
// namespace instead, and the namespace (so everything in it) ends with bwrap, with the command,
// and with the worker, even when the worker is killed with SIGKILL.

export type OutputStream = 'stdout' | 'stderr';

export interface RunCommandOptions {
  argv: readonly string[];
  cwd: string;
  /** The child's whole environment (build it with scrubEnv); nothing is inherited. */
  env: Readonly<Record<string, string>>;
  /** Longest the command may run. */
  timeoutMs: number;
  /** Longest it may go without writing to stdout or stderr. */
  inactivityMs: number;
  /** Most bytes kept per stream: the first and last halves, with a marker between. */
  maxOutputBytes: number;
  /** Aborting cancels the command (its process group is ended). */
  signal?: AbortSignal;
  /** Progress: each chunk as it arrives, until `maxProgressBytes` have been passed on. */
  onOutput?: (stream: OutputStream, chunk: string) => void;
  /** Most bytes passed to onOutput over both streams (default: 2 x maxOutputBytes). */
  maxProgressBytes?: number;
  /** Between SIGTERM and SIGKILL (default 2 s). */
  killGraceMs?: number;
  /**
   * argv runs the command through bwrap in a PID namespace of its own with --die-with-parent:
   * SIGTERM goes to every process inside (bwrap's own two are spared until the SIGKILL, which
   * ends the namespace), and bwrap's exit status 128+N after a timeout or cancel is reported
   * as the signal N. Default false.
   */
  pidNamespace?: boolean;
  /** Open descriptors the child gets as fds 3, 4, ... (the sandbox's working directory). */
  passFds?: readonly number[];
}

export interface RunCommandResult {
  /** null when the command was ended by a signal or never started. */
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  durationMs: number;
  /** From the call to the child's `spawn` event (null: it never started). */
  spawnMs: number | null;
  stdout: string;
  stderr: string;
  truncated: boolean;
  timedOut: 'hard' | 'inactivity' | null;
  canceled: boolean;
  /** Why it could not start (ENOENT and the like), else null. */
  error: string | null;
}

/** Keeps the head and tail of a stream within a byte budget. */
class CappedOutput {
  private readonly head: Buffer[] = [];
  private headBytes = 0;
  private tail: Buffer[] = [];
  private tailBytes = 0;
  dropped = 0;

  constructor(
    private readonly headLimit: number,
    private readonly tailLimit: number,
  ) {}

  push(chunk: Buffer): void {
    let rest = chunk;
    if (this.headBytes < this.headLimit) {
      const take = Math.min(this.headLimit - this.headBytes, rest.length);
      this.head.push(rest.subarray(0, take));
      this.headBytes += take;
      rest = rest.subarray(take);
    }
    if (rest.length === 0) return;
    this.tail.push(rest);
    this.tailBytes += rest.length;
    while (this.tailBytes > this.tailLimit) {
      const first = this.tail[0] as Buffer;
      const excess = this.tailBytes - this.tailLimit;
      if (first.length <= excess) {
        this.tail.shift();
        this.tailBytes -= first.length;
        this.dropped += first.length;
      } else {
        this.tail[0] = first.subarray(excess);
        this.tailBytes -= excess;
        this.dropped += excess;
      }
    }
  }

  text(): string {
    const whole = Buffer.concat([...this.head, ...this.tail]);
    if (this.dropped === 0) return whole.toString('utf8');
    // Cut at line breaks (fromWholeLine): no piece of a secret beside the cut.
    const head = toWholeLine(Buffer.concat(this.head).toString('utf8'));
    const tail = fromWholeLine(Buffer.concat(this.tail).toString('utf8'));
    const cut = this.dropped + whole.length - Buffer.byteLength(head) - Buffer.byteLength(tail);
    return `${head}\n…[truncated ${cut} bytes]…\n${tail}`;
  }
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: the group is gone already.
  }
}

/** The parent of each process, from /proc (Linux; empty where /proc cannot be read). */
function parents(): Map<number, number> {
  const found = new Map<number, number>();
  let entries: string[] = [];
  try {
    entries = readdirSync('/proc');
  } catch {
    return found;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      found.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // Gone since the listing.
    }
  }
  return found;
}

/**
 * Every process inside the PID namespace bwrap (`leader`) made: the descendants of its child,
 * the namespace's init (orphans inside are re-parented to that init, so nothing is missed).
 */
function namespaceMembers(leader: number): number[] {
  const children = new Map<number, number[]>();
  for (const [pid, ppid] of parents()) children.set(ppid, [...(children.get(ppid) ?? []), pid]);
  const queue = (children.get(leader) ?? []).flatMap((init) => children.get(init) ?? []);
  const members: number[] = [];
  for (let pid = queue.shift(); pid !== undefined; pid = queue.shift()) {
    members.push(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return members;
}

function signalEach(pids: readonly number[], signal: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // ESRCH: gone already.
    }
  }
}

/** bwrap's status for a command ended by signal N is 128+N: the signal's name, or null. */
function signalFromStatus(code: number | null): NodeJS.Signals | null {
  if (code === null || code <= 128) return null;
  const entry = Object.entries(constants.signals).find(([, number]) => number === code - 128);
  return (entry?.[0] as NodeJS.Signals | undefined) ?? null;
}

/** Runs argv as described in the module comment; never throws for the command's failures. */
export function runCommand(options: RunCommandOptions): Promise<RunCommandResult> {
  const started = performance.now();
  const half = Math.max(0, Math.floor(options.maxOutputBytes / 2));
  const outputs = {
    stdout: new CappedOutput(half, options.maxOutputBytes - half),
    stderr: new CappedOutput(half, options.maxOutputBytes - half),
  };
  const grace = options.killGraceMs ?? 2_000;
  let progressLeft = options.maxProgressBytes ?? options.maxOutputBytes * 2;
  const finish = (
    partial: Partial<RunCommandResult> & Pick<RunCommandResult, 'exitCode' | 'signal'>,
  ): RunCommandResult => ({
    durationMs: performance.now() - started,
    spawnMs: null,
    stdout: outputs.stdout.text(),
    stderr: outputs.stderr.text(),
    truncated: outputs.stdout.dropped > 0 || outputs.stderr.dropped > 0,
    timedOut: null,
    canceled: false,
    error: null,
    ...partial,
  });
  const [program, ...args] = options.argv;
  if (program === undefined) {
    return Promise.resolve(finish({ exitCode: null, signal: null, error: 'empty argv' }));
  }
  if (options.signal?.aborted) {
    return Promise.resolve(finish({ exitCode: null, signal: null, canceled: true }));
  }

  let child: ReturnType<typeof spawn>;
  try {
    child = spawn(program, args, {
      cwd: options.cwd,
      env: { ...options.env },
      shell: false,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe', ...(options.passFds ?? [])],
      windowsHide: true,
    });
  } catch (cause) {
    // Arguments Node refuses before trying (a NUL byte, say).
    const error = cause instanceof Error ? cause.message : String(cause);
    return Promise.resolve(finish({ exitCode: null, signal: null, error }));
  }

  return new Promise((resolve) => {
    let spawnMs: number | null = null;
    let timedOut: RunCommandResult['timedOut'] = null;
    let canceled = false;
    let error: string | null = null;
    let exited: { code: number | null; signal: NodeJS.Signals | null } | null = null;
    let settled = false;
    let killTimer: NodeJS.Timeout | undefined;
    let closeTimer: NodeJS.Timeout | undefined;
    let inactivityTimer: NodeJS.Timeout | undefined;

    const terminate = () => {
      const pid = child.pid;
      if (pid === undefined || killTimer !== undefined) return;
      const inside = options.pidNamespace ? namespaceMembers(pid) : [];
      // In a namespace, SIGTERM to bwrap would end it (and so everything inside) at once.
      if (inside.length > 0) signalEach(inside, 'SIGTERM');
      else killGroup(pid, 'SIGTERM');
      killTimer = setTimeout(() => killGroup(pid, 'SIGKILL'), grace);
      killTimer.unref?.();
    };
    const hardTimer = setTimeout(() => {
      timedOut ??= 'hard';
      terminate();
    }, options.timeoutMs);
    const armInactivity = () => {
      clearTimeout(inactivityTimer);
      if (exited) return;
      inactivityTimer = setTimeout(() => {
        timedOut ??= 'inactivity';
        terminate();
      }, options.inactivityMs);
    };
    const onAbort = () => {
      canceled = true;
      terminate();
    };
    options.signal?.addEventListener('abort', onAbort, { once: true });

    const settle = () => {
      if (settled) return;
      settled = true;
      clearTimeout(hardTimer);
      clearTimeout(inactivityTimer);
      clearTimeout(killTimer);
      clearTimeout(closeTimer);
      options.signal?.removeEventListener('abort', onAbort);
      child.stdout?.destroy();
      child.stderr?.destroy();
      // bwrap reports a command ended by a signal as 128+N; after our own kill, it was ours.
      const ours = options.pidNamespace && (timedOut !== null || canceled) && !exited?.signal;
      const relayed = ours ? signalFromStatus(exited?.code ?? null) : null;
      resolve(
        finish({
          exitCode: relayed ? null : (exited?.code ?? null),
          signal: relayed ?? exited?.signal ?? null,
          spawnMs,
          timedOut,
          canceled,
          error,
        }),
      );
    };

    child.once('spawn', () => {
      spawnMs = performance.now() - started;
      armInactivity();
    });
    for (const stream of ['stdout', 'stderr'] as const) {
      child[stream]?.on('data', (chunk: Buffer) => {
        armInactivity();
        outputs[stream].push(chunk);
        if (options.onOutput && progressLeft > 0) {
          const part = chunk.length > progressLeft ? chunk.subarray(0, progressLeft) : chunk;
          progressLeft -= part.length;
          options.onOutput(stream, part.toString('utf8'));
        }
      });
    }
    child.once('error', (cause) => {
      error = cause.message;
      // A spawn failure emits no exit; a failure later (a kill error) is followed by one.
      if (spawnMs === null) settle();
    });
    child.once('exit', (code, signal) => {
      exited = { code, signal };
      clearTimeout(hardTimer);
      clearTimeout(inactivityTimer);
      // Whatever the command left behind in its group ends with it.
      if (child.pid !== undefined) killGroup(child.pid, 'SIGKILL');
      // The pipes close once every holder is gone; one that left the group may hold them.
      closeTimer = setTimeout(settle, grace);
      closeTimer.unref?.();
    });
    child.once('close', settle);
  });
}
