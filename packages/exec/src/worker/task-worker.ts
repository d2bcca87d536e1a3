import type { KeyObject } from 'node:crypto';
import { createPublicKey } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CapabilitiesFile, Logger, Task, TaskError } from '@ctxbus/core';
import { DEFAULT_TASK_LEASE_MS, TASK_LIMITS } from '@ctxbus/core/contract';
import { backoffDelay, CtxbusError, createBackoff } from '@ctxbus/core/light';
import { closeInheritedDescriptors } from '../inherited-fds.js';
import { fromWholeLine, toWholeLine } from '../output-cut.js';
import type { ExecutionPlan, ExecutionPolicy } from '../prepare-execution.js';
import { executePlan, prepareExecution } from '../prepare-execution.js';
import type { RunCommandResult } from '../run-command.js';
import { detectPidNamespace, detectSandbox } from '../sandbox.js';

// The task worker behind `ctxbus worker` (`@ctxbus/exec/worker`): runs code_execution tasks routed to this runtime. It announces itself
// (presence feeds the router), long-polls its claim (the hub wakes one waiting worker per new
// task, so idle workers do not all race for it), holds a lease that it renews at a third, runs the command through @ctxbus/exec's
// checks (deny by default, policy from the worker's own capabilities.yaml: a hub cannot widen
// it), and posts the result with its fencing token.

/** How long one claim waits on the hub for a task before the worker asks again. */
const CLAIM_WAIT_MS = 20_000;

/** A claim as the worker makes it (without the long poll's wait). */
export interface ClaimNext {
  workerId: string;
  capabilities: string[];
  leaseMs: number;
}

/** What the worker needs from a hub (CtxbusClient implements it). */
export interface WorkerHubApi {
  announce(body: {
    instanceId: string;
    kind: 'worker';
    capabilities: string[];
    capacity: number;
    ttlSeconds: number;
  }): Promise<unknown>;
  leave(instanceId: string): Promise<void>;
  /**
   * Takes a task, or null. With `waitMs`, a hub with none waiting holds the call until one it
   * can take comes in (or the time runs out); `signal` ends the call.
   */
  claimTask(
    body: { workerId: string; capabilities: string[]; leaseMs: number; waitMs?: number },
    signal?: AbortSignal,
  ): Promise<Task | null>;
  renewTask(id: string, body: { token: number; leaseMs: number }): Promise<Task>;
  /**
   * Says the command is about to start: from then on the hub never runs it again by itself (a
   * lost lease fails the task, `worker_lost`). A repeat is harmless.
   */
  startTask(id: string, body: { token: number }): Promise<Task>;
  completeTask(id: string, body: { token: number; result: unknown }): Promise<Task>;
  /**
   * Completes the task and, in the same call, claims the next one without waiting (`next`:
   * null when none is waiting). Optional: a port without it completes, then claims.
   */
  completeAndClaim?(
    id: string,
    body: { token: number; result: unknown; next: ClaimNext },
  ): Promise<{ task: Task; next: Task | null }>;
  failTask(id: string, body: { token: number; error: TaskError; retry?: boolean }): Promise<Task>;
  requestApproval(
    id: string,
    body: {
      token: number;
      request: {
        argv: string[];
        cwd: string;
        scriptHash: string | null;
        because: 'not_allowed' | 'untrusted_origin' | 'runs_code';
      };
    },
  ): Promise<Task>;
  /**
   * The latest output of a running command: its tail, and how many characters it has written
   * in all (`outputEnd`), so that a follower prints only what is new.
   */
  taskProgress(
    id: string,
    body: { token: number; output: string; outputEnd?: number },
  ): Promise<unknown>;
  /** The hub's public key (PEM) that signs approvals. */
  approvalKey(): Promise<string>;
}

export interface WorkerLimits {
  /** Hard limit per command (default 10 min; capped by the capability's limits.seconds). */
  timeoutMs: number;
  /** Kill a command that prints nothing for this long (default 2 min). */
  inactivityMs: number;
  /** Output kept per stream, head and tail (default 256 KiB). */
  maxOutputBytes: number;
  /**
   * Least time between two progress posts of a running command's output, and the time before
   * the first (default 1 s): a command that ends sooner posts none, only its result.
   */
  progressMs: number;
}

export const DEFAULT_WORKER_LIMITS: WorkerLimits = {
  timeoutMs: 10 * 60_000,
  inactivityMs: 2 * 60_000,
  maxOutputBytes: 256 * 1024,
  progressMs: 1_000,
};

/** The output tail a progress post carries. */
const PROGRESS_TAIL_CHARS = 4_000;

export interface TaskWorkerOptions {
  hub: WorkerHubApi;
  workerId: string;
  /** The worker's own capabilities.yaml: its allow-list, roots and each origin's trust. */
  matrix: CapabilitiesFile;
  /** Directories commands may run in (remote_execution.workdir and --root). */
  roots: string[];
  /** Commands run at once (default 1). */
  concurrency?: number;
  leaseMs?: number;
  limits?: Partial<WorkerLimits>;
  logger: Logger;
  /** Overrides for the execution policy (sandbox options, env allow-list, PATH). */
  policy?: Partial<ExecutionPolicy>;
  /** Called after each task ends (tests and --once). */
  onTaskDone?: (task: Task, outcome: 'completed' | 'failed' | 'lost' | 'awaiting approval') => void;
  /** Called once the hub has answered (its approval key) and the worker first announced itself. */
  onReady?: () => void;
}

/** The result a command leaves on its task. */
export interface CommandResult {
  argv: string[];
  cwd: string;
  exitCode: number | null;
  signal: string | null;
  durationMs: number;
  stdout: string;
  stderr: string;
  truncated: boolean;
  timedOut: 'hard' | 'inactivity' | null;
  sandboxed: boolean;
  /** From the claim's answer to the process spawned (checks, directory, sandbox setup). */
  claimToSpawnMs: number | null;
}

const CAPABILITY = 'code_execution';

/** The origin may request execution without a human when the worker's file trusts it. */
export function originTrusted(matrix: CapabilitiesFile, origin: string): boolean {
  const entry = Object.hasOwn(matrix.runtimes, origin) ? matrix.runtimes[origin] : undefined;
  return entry !== undefined && entry.trust !== 'restricted';
}

function tail(text: string, chars: number): string {
  return text.length <= chars ? text : `…${fromWholeLine(text.slice(-chars))}`;
}

/**
 * What a progress post shows of a running command's output (`tail`: its last characters,
 * `written`: how many it has written): whole lines only, so that no piece of a secret is shown
 * beside a cut (fromWholeLine), the last line only once it has ended or the command has.
 * `end`: where the shown text ends in all the command wrote. Null: nothing new to show yet.
 */
export function progressTail(
  tail: string,
  written: number,
  ended: boolean,
): { text: string; end: number } | null {
  const from = written > tail.length ? fromWholeLine(tail) : tail;
  const text = ended ? from : toWholeLine(from);
  if (text === '' && !ended) return null;
  return { text, end: written - (from.length - text.length) };
}

/** Keeps `text`'s head and tail within `chars`, saying how much was cut between them. */
function cutMiddle(text: string, chars: number): string {
  if (text.length <= chars) return text;
  const half = Math.max(0, Math.floor(chars / 2));
  // Cut at line breaks (fromWholeLine): no piece of a secret beside the cut.
  const head = toWholeLine(text.slice(0, half));
  const rest = fromWholeLine(text.slice(text.length - half));
  const note = `\n[… ${text.length - head.length - rest.length} characters cut to fit the hub's result limit …]\n`;
  return `${head}${note}${rest}`;
}

/**
 * The result within `maxBytes` of JSON: its output streams' middles are cut (head and tail
 * kept, `truncated` set) until it fits, so a command that succeeded is reported, not run again
 * because its report was too large for the hub (a result is at most TASK_LIMITS.resultBytes).
 */
export function fitResult(result: CommandResult, maxBytes: number): CommandResult {
  let fitted = result;
  let chars = Math.max(result.stdout.length, result.stderr.length);
  while (Buffer.byteLength(JSON.stringify(fitted)) > maxBytes && chars > 0) {
    chars = Math.floor(chars / 2);
    fitted = {
      ...result,
      stdout: cutMiddle(result.stdout, chars),
      stderr: cutMiddle(result.stderr, chars),
      truncated: true,
    };
  }
  return fitted;
}

/** The longest wait before a renewal the hub did not answer is tried again. */
const RENEW_RETRY_MAX_MS = 1_000;

/** Whether a failed report may succeed if sent again (the hub was unreachable or failing). */
function retryable(error: unknown): boolean {
  return CtxbusError.isInstance(error) && error.code === 'unavailable';
}

export class TaskWorker {
  private readonly concurrency: number;
  private readonly leaseMs: number;
  private readonly limits: WorkerLimits;
  private running = 0;
  /** Resolves the wait for a free slot. */
  private wake: (() => void) | null = null;
  private approvalKey: KeyObject | null = null;
  /** The hub refused `next` with a completion (a hub older than it). */
  private hubRefusesNext = false;
  /**
   * The environment commands' allowed variables come from, read once: reading process.env
   * walks the process's environment block on every access (it cost ~5 ms a task).
   */
  private readonly sourceEnv: Readonly<Record<string, string | undefined>>;

  constructor(private readonly options: TaskWorkerOptions) {
    this.concurrency = options.concurrency ?? 1;
    this.leaseMs = options.leaseMs ?? DEFAULT_TASK_LEASE_MS;
    this.limits = { ...DEFAULT_WORKER_LIMITS, ...options.limits };
    this.sourceEnv = options.policy?.sourceEnv ?? { ...process.env };
  }

  /** Works until `signal` aborts; then leaves the hub's presence. */
  async run(signal: AbortSignal): Promise<void> {
    const { hub, workerId, logger } = this.options;
    const inherited = closeInheritedDescriptors();
    if (inherited.length > 0)
      logger.info(
        { descriptors: inherited },
        'closed the descriptors I inherited: no command gets them',
      );
    this.approvalKey = createPublicKey(await hub.approvalKey());
    const lifetime = await detectPidNamespace(this.options.policy?.sandbox);
    if (!lifetime.available) logger.warn({ reason: lifetime.reason }, 'commands may outlive me');
    const sandbox = await detectSandbox(this.options.policy?.sandbox);
    if (sandbox.available && !sandbox.sizedTmpfs) {
      logger.warn(
        { bwrap: sandbox.bwrapPath },
        "this bwrap cannot size a tmpfs (an older bubblewrap has no --size): a sandboxed command's /tmp is bounded only by memory",
      );
    }
    const ttlSeconds = Math.max(3, Math.round((this.leaseMs / 1000) * 1));
    const announce = () =>
      hub
        .announce({
          instanceId: workerId,
          kind: 'worker',
          capabilities: [CAPABILITY],
          capacity: this.concurrency,
          ttlSeconds,
        })
        .catch((error: unknown) => logger.warn({ err: error }, 'presence heartbeat failed'));
    await announce();
    this.options.onReady?.();
    const heartbeat = setInterval(() => void announce(), (ttlSeconds * 1000) / 3);
    const inFlight = new Set<Promise<void>>();
    const claimBackoff = createBackoff({ initialMs: 250, maxMs: 5_000 });
    try {
      while (!signal.aborted) {
        if (this.running >= this.concurrency) {
          await this.nextWake(signal);
          continue;
        }
        const claim = { workerId, capabilities: [CAPABILITY], leaseMs: this.leaseMs };
        const task = await hub
          .claimTask({ ...claim, waitMs: CLAIM_WAIT_MS }, signal)
          .then((claimed) => {
            claimBackoff.reset();
            return claimed;
          })
          .catch(async (error: unknown) => {
            if (signal.aborted) return null;
            // The hub is down or refused: try again after a growing pause (to 5 s).
            const retryInMs = claimBackoff.next();
            logger.warn({ err: error, retryInMs }, 'claim failed');
            await sleep(retryInMs, undefined, { signal }).catch(() => {});
            return null;
          });
        if (!task) continue;
        this.running += 1;
        const work = this.slot(task, claim, signal).finally(() => {
          this.running -= 1;
          inFlight.delete(work);
          this.poke();
        });
        inFlight.add(work);
      }
    } finally {
      clearInterval(heartbeat);
      await Promise.allSettled(inFlight);
      await hub.leave(workerId).catch(() => {});
    }
  }

  /**
   * Runs `first`, then each task its completion claimed: a slot that completes a task takes
   * its next one in the same call (one request per task fewer). A stopping worker claims no
   * more; a task claimed as it stopped is run like the one before it (the worker drains).
   */
  private async slot(first: Task, claim: ClaimNext, signal: AbortSignal): Promise<void> {
    let task: Task | null = first;
    while (task !== null) {
      const current: Task = task;
      task = await this.process(current, signal.aborted ? null : claim).catch((error: unknown) => {
        this.options.logger.error({ err: error, taskId: current.id }, 'task failed');
        return null;
      });
    }
  }

  private poke(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }

  private nextWake(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      this.wake = resolve;
      signal.addEventListener('abort', () => resolve(), { once: true });
    });
  }

  /**
   * Runs one claimed task to its end: completed, failed (with a reason), or lost (stale lease).
   * With `claimNext`, a completion also claims the worker's next task: returned (else null).
   */
  async process(task: Task, claimNext: ClaimNext | null = null): Promise<Task | null> {
    const claimedAt = performance.now();
    const token = task.lease?.token;
    if (token === undefined || token === null)
      throw new CtxbusError('internal', `task ${task.id} has no lease`);
    const held: HeldTask = { task, token, leaseEndsAt: Date.now() + this.leaseMs };
    const input = (task.input ?? {}) as Record<string, unknown>;
    const { preparation, sandboxed } = await this.prepare(task, input);
    if (!preparation.ok) {
      await this.refuse(held, preparation, input);
      return null;
    }
    // The hub must know the command may start before it does: if this worker dies from here
    // on, the task fails (worker_lost) instead of running again on another worker. Sent again
    // while the hub is unreachable (a repeat is harmless); not recorded, the command does not
    // start, and the lease runs out into the queue.
    const started = await this.deliver(held, 'say the command starts', () =>
      this.options.hub.startTask(task.id, { token }),
    );
    if (!started) {
      this.options.onTaskDone?.(task, 'lost');
      return null;
    }
    const spawning = performance.now();
    const { execution, lost } = await this.runHeld(held, preparation.plan);
    if (lost) {
      this.options.onTaskDone?.(task, 'lost');
      return null;
    }
    if (!execution.ok) {
      await this.fail(held, { code: execution.code, message: execution.reason });
      return null;
    }
    const result = commandResult(
      preparation.plan.argv,
      preparation.plan.realCwd,
      execution.result,
      sandboxed,
      execution.result.spawnMs === null ? null : spawning - claimedAt + execution.result.spawnMs,
    );
    if (result.exitCode === 0) return this.report(held, result, claimNext);
    await this.fail(held, commandFailure(result));
    return null;
  }

  /**
   * Sends a report with the lease's fencing token, again while the hub is unreachable and the
   * lease still holds (each renew moves it), so a hub that is briefly down does not cost a
   * finished command its result (and a second run). False when it could not be sent.
   */
  private async deliver(held: HeldTask, what: string, send: () => Promise<unknown>) {
    const { logger } = this.options;
    for (let attempt = 0; ; attempt++) {
      const delay = backoffDelay(attempt, { initialMs: 250, maxMs: 5_000 });
      try {
        await send();
        return true;
      } catch (error) {
        if (!retryable(error) || Date.now() + delay >= held.leaseEndsAt) {
          logger.warn({ err: error, taskId: held.task.id }, `could not ${what}`);
          return false;
        }
        logger.info({ err: error, taskId: held.task.id }, `could not ${what} yet; trying again`);
        await sleep(delay);
      }
    }
  }

  private async fail(held: HeldTask, error: TaskError): Promise<void> {
    const { task, token } = held;
    const sent = await this.deliver(held, 'fail the task', () =>
      this.options.hub.failTask(task.id, { token, error }),
    );
    this.options.onTaskDone?.(task, sent ? 'failed' : 'lost');
  }

  /** The task's command checked against this worker's own policy: a plan, or why not. */
  private async prepare(task: Task, input: Record<string, unknown>) {
    const { matrix } = this.options;
    const capability = matrix.runtimes[task.targetRuntime ?? '']?.capabilities[CAPABILITY];
    const sandboxed = input.sandboxed === true || capability?.mode === 'sandboxed';
    const preparation = await prepareExecution({
      request: {
        taskId: task.id,
        argv: input.argv as string[],
        cwd: input.cwd as string,
        sandboxed,
        network: input.network === true,
      },
      policy: {
        allow: matrix.remote_execution?.allow ?? [],
        roots: this.options.roots,
        // The worker's own file decides whom it trusts; the hub's router may ask for more.
        trustedOrigin:
          originTrusted(matrix, task.origin) && task.routing?.requiresApproval !== true,
        ...(this.approvalKey !== null && { approvalPublicKey: this.approvalKey }),
        sourceEnv: this.sourceEnv,
        ...(capability?.limits?.network !== undefined && { network: capability.limits.network }),
        ...(capability?.limits?.seconds !== undefined && { maxSeconds: capability.limits.seconds }),
        ...(capability?.mode === 'sandboxed' && { requireSandbox: true }),
        ...this.options.policy,
      },
      ...(task.approval?.status === 'approved' &&
        task.approval.token !== null && { approval: task.approval.token }),
    });
    return { preparation, sandboxed };
  }

  /**
   * A command this worker will not run as asked: a person decides when approval would let it
   * (the task waits in AUTH_REQUIRED showing exactly this command), else the task fails with
   * the reason as its origin may see it.
   */
  private async refuse(
    held: HeldTask,
    refusal: Extract<Awaited<ReturnType<typeof prepareExecution>>, { ok: false }>,
    input: Record<string, unknown>,
  ): Promise<void> {
    const { hub, logger } = this.options;
    const { task, token } = held;
    if (refusal.code === 'approval_required' && refusal.approvalRequest) {
      const { argv, cwd, scriptHash, because } = refusal.approvalRequest;
      try {
        await hub.requestApproval(task.id, { token, request: { argv, cwd, scriptHash, because } });
        logger.info({ taskId: task.id }, refusal.reason);
        this.options.onTaskDone?.(task, 'awaiting approval');
      } catch (error) {
        logger.warn({ err: error, taskId: task.id }, 'could not ask for approval');
        await this.fail(held, { code: refusal.code, message: refusal.reason });
      }
      return;
    }
    logger.info({ taskId: task.id, code: refusal.code }, refusal.reason);
    await this.fail(held, {
      code: refusal.code,
      message: reasonForOrigin(refusal.reason, refusal.code, input),
    });
  }

  /**
   * Runs the plan while holding the lease: renewed at a third of it (a refused renew means
   * another worker has the task now, and the command is stopped: `lost`), and the output's tail
   * posted as progress at most every progressMs while there is new output.
   */
  private async runHeld(held: HeldTask, plan: ExecutionPlan) {
    const { hub, logger } = this.options;
    const { task, token } = held;
    const lost = new AbortController();
    const renewals = this.renewWhileRunning(held, () => {
      logger.warn({ taskId: task.id }, 'lease lost: stopping the command');
      lost.abort();
    });
    let tailText = '';
    // Characters written so far: a follower prints only what is new in each tail.
    let written = 0;
    let fresh = false;
    let posted = false;
    const post = (ended = false) => {
      const shown = progressTail(tailText, written, ended);
      if (shown === null) return;
      fresh = false;
      posted = true;
      return hub
        .taskProgress(task.id, { token, output: shown.text, outputEnd: shown.end })
        .catch((error: unknown) => {
          logger.debug({ err: error, taskId: task.id }, 'progress not posted');
        });
    };
    const progress = setInterval(() => {
      if (fresh) void post();
    }, this.limits.progressMs);
    const { progressMs: _, ...runLimits } = this.limits;
    try {
      const execution = await executePlan(plan, {
        ...runLimits,
        signal: lost.signal,
        // Only a bounded tail is kept here, so every chunk may pass.
        maxProgressBytes: Number.MAX_SAFE_INTEGER,
        onOutput: (_stream, chunk) => {
          tailText = (tailText + storableOutput(chunk)).slice(-PROGRESS_TAIL_CHARS);
          written += chunk.length;
          fresh = true;
        },
      });
      // Once its output has been shown while it ran, the rest of it is shown before its end,
      // so a follower sees all of it in order (the completion is announced after this).
      clearInterval(progress);
      if (posted && fresh) await post(true);
      return { execution, lost: lost.signal.aborted };
    } finally {
      renewals.stop();
      clearInterval(progress);
    }
  }

  /**
   * Renews the lease at a third of its length while the command runs. A renewal the hub did
   * not answer (down, restarting, busy) is tried again within a second or so, while the lease
   * holds, instead of at the next third: a hub that is away for less than the lease costs no
   * running command. A renewal refused as stale (the lease ran out) calls `onLost`.
   */
  private renewWhileRunning(held: HeldTask, onLost: () => void): { stop(): void } {
    const { hub, logger } = this.options;
    const { task, token } = held;
    const period = this.leaseMs / 3;
    const retryMaxMs = Math.min(RENEW_RETRY_MAX_MS, period / 2);
    let timer: NodeJS.Timeout | undefined;
    let stopped = false;
    let failures = 0;
    const later = (delayMs: number) => {
      if (!stopped) timer = setTimeout(renew, delayMs);
    };
    const renew = () => {
      const renewing = Date.now();
      hub.renewTask(task.id, { token, leaseMs: this.leaseMs }).then(
        () => {
          held.leaseEndsAt = renewing + this.leaseMs;
          failures = 0;
          later(period);
        },
        (error: unknown) => {
          if (CtxbusError.isInstance(error) && error.code === 'conflict') return onLost();
          if (!retryable(error)) return later(period);
          failures += 1;
          const retryInMs = backoffDelay(failures - 1, { initialMs: 250, maxMs: retryMaxMs });
          logger.info({ err: error, taskId: task.id, retryInMs }, 'lease not renewed yet');
          later(retryInMs);
        },
      );
    };
    later(period);
    return {
      stop() {
        stopped = true;
        clearTimeout(timer);
      },
    };
  }

  /**
   * Completes the task with its result (and, with `claimNext`, claims the next task in the same
   * call), within what the hub takes as a result (TASK_LIMITS.resultBytes of JSON; a hub with a
   * lower body limit says 413, and the result is cut further). Returns the next task, or null.
   */
  private async report(
    held: HeldTask,
    result: CommandResult,
    claimNext: ClaimNext | null,
  ): Promise<Task | null> {
    let budget: number = TASK_LIMITS.resultBytes;
    let next: Task | null = null;
    const completed = await this.deliver(held, 'report the result', async () => {
      for (;;) {
        try {
          next = await this.complete(held, fitResult(result, budget), claimNext);
          return;
        } catch (error) {
          if (!CtxbusError.isInstance(error) || error.code !== 'payload_too_large') throw error;
          if (budget < 4_096) throw error;
          budget = Math.floor(budget / 2);
        }
      }
    });
    this.options.onTaskDone?.(held.task, completed ? 'completed' : 'lost');
    return next;
  }

  /** One completion; with `claimNext` (and a hub that takes it), the next task's claim too. */
  private async complete(
    held: HeldTask,
    result: CommandResult,
    claimNext: ClaimNext | null,
  ): Promise<Task | null> {
    const { hub, logger } = this.options;
    const { task, token } = held;
    if (claimNext && hub.completeAndClaim && !this.hubRefusesNext) {
      try {
        return (await hub.completeAndClaim(task.id, { token, result, next: claimNext })).next;
      } catch (error) {
        // A hub older than `next` refuses the unknown field (nothing was completed): from
        // now on this worker completes, then claims.
        if (!CtxbusError.isInstance(error) || error.code !== 'validation_failed') throw error;
        if (!/\bnext\b/.test(error.message)) throw error;
        this.hubRefusesNext = true;
        logger.info({ taskId: task.id }, 'the hub takes no next claim with a completion');
      }
    }
    await hub.completeTask(task.id, { token, result });
    return null;
  }
}

/** A claimed task as this worker holds it: its fencing token, and until when its lease holds. */
interface HeldTask {
  task: Task;
  token: number;
  leaseEndsAt: number;
}

/** Why a command that ran did not succeed, as the task's error. */
function commandFailure(result: CommandResult): TaskError {
  const why = result.timedOut
    ? `timed out (${result.timedOut})`
    : result.exitCode === null
      ? `ended by signal ${result.signal}`
      : `exited with ${result.exitCode}`;
  // The command line shown within bounds: the message must fit the hub's limit (an argv of
  // thousands of characters made the report a 400, and the task worker_lost).
  const command = result.argv.join(' ');
  const shown = command.length <= 500 ? command : `${command.slice(0, 500)}…`;
  // What it wrote, within the hub's message limit: a failing `npm test` says why on stdout.
  const stdout = result.stdout ? `\n--- stdout (its end) ---\n${tail(result.stdout, 1_500)}` : '';
  return {
    code: result.timedOut ? 'timeout' : 'exit_status',
    message: `${shown} ${why}${result.stderr ? `: ${tail(result.stderr, 1_800)}` : ''}${stdout}`,
  };
}

/**
 * Output as the hub stores it: a NUL character (which no text column holds, and the hub
 * refuses) becomes U+2400 (␀), so a command that writes one is reported, not lost.
 */
export function storableOutput(text: string): string {
  return text.includes('\u0000') ? text.replaceAll('\u0000', '\u2400') : text;
}

/** An absolute path in a refusal's text (up to a space, quote or the punctuation after it). */
const ABSOLUTE_PATH = /(?<![\w.~])\/[^\s'"`,;:()]*[^\s'"`,;:().]/g;

/**
 * A refusal as the task's origin sees it: nothing of this machine's file system it did not
 * name itself. A working directory refusal says only that the directory it asked for is not
 * one this worker may use (not whether it exists, where it leads, or what the roots are); in
 * other refusals, paths the origin did not give become `<a path on the worker>`. The full
 * reason stays in the worker's log.
 */
export function reasonForOrigin(
  reason: string,
  code: string,
  input: Record<string, unknown>,
): string {
  const cwd = typeof input.cwd === 'string' ? input.cwd : '';
  if (code === 'workdir_escape' && !reason.startsWith('the program ')) {
    return `the working directory ${cwd || '(none)'} is not a directory inside this worker's roots`;
  }
  const given = new Set<string>([cwd]);
  if (Array.isArray(input.argv)) for (const word of input.argv) given.add(String(word));
  return reason.replace(ABSOLUTE_PATH, (path) =>
    [...given].some((word) => word !== '' && word.includes(path)) ? path : '<a path on the worker>',
  );
}

function commandResult(
  argv: string[],
  cwd: string,
  run: RunCommandResult,
  sandboxed: boolean,
  claimToSpawnMs: number | null,
): CommandResult {
  return {
    argv,
    cwd,
    exitCode: run.exitCode,
    signal: run.signal,
    durationMs: Math.round(run.durationMs),
    stdout: storableOutput(run.stdout),
    stderr: storableOutput(run.stderr),
    truncated: run.truncated,
    timedOut: run.timedOut,
    sandboxed,
    claimToSpawnMs: claimToSpawnMs === null ? null : Math.round(claimToSpawnMs * 100) / 100,
  };
}
