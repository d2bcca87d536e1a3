import { realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import type { CreateTaskRequest, Task, TaskState } from '@ctxbus/core/contract';
import {
  followTaskStatus,
  healthSeq,
  isTerminalTaskState,
  TASK_TAG,
  taskOutputOf,
  taskScopeKey,
} from '@ctxbus/core/contract';
import { CtxbusError } from '@ctxbus/core/light';
import { printJson, printLine, terminalSafe } from '../output.js';
import type { Connection } from './tasks.js';
import { connect, oneLine, taskLine } from './tasks.js';

// `ctxbus delegate -- npm test`: a command handed to the runtime that can run it (a
// code_execution task routed by the hub's capability matrix), followed on the stream to its
// end, its output printed as it runs (on a terminal, or --live: from the task's output lines)
// or else at its end as the worker left it; Ctrl-C cancels it. The same rules as any
// origin's task: the worker's allow-list decides, and a command it holds for a human waits
// for a person to approve it elsewhere (an origin never approves its own task).

export interface DelegateOptions extends Connection {
  cwd?: string;
  title?: string;
  to?: string;
  network?: boolean;
  wait: boolean;
  key?: string;
  /** Show the output while the command runs (default: when stdout is a terminal). */
  live?: boolean;
}

/** What a code_execution task leaves as its result (the worker's CommandResult). */
interface CommandResultView {
  exitCode?: number | null;
  stdout?: string;
  stderr?: string;
  truncated?: boolean;
}

/**
 * The directory the command runs in: by default this one (its real path, as the worker checks
 * it); a --cwd is the worker's path, which may be on another machine: sent as given, made
 * absolute, for the worker to check against its roots.
 */
function workingDirectory(cwd: string | undefined): string {
  return cwd === undefined ? realpathSync(process.cwd()) : resolve(cwd);
}

export function delegateRequest(
  argv: readonly string[],
  options: DelegateOptions,
): CreateTaskRequest {
  if (argv.length === 0) {
    throw new CtxbusError(
      'validation_failed',
      'delegate needs a command: ctxbus delegate -- npm test',
    );
  }
  return {
    title: options.title ?? oneLine(argv.join(' ')).slice(0, 200),
    requiredCapabilities: ['code_execution'],
    input: { argv: [...argv], cwd: workingDirectory(options.cwd) },
    ...(options.to !== undefined && { preferences: { prefer: [options.to] } }),
    ...(options.network && { constraints: { network: true } }),
    ...(options.key !== undefined && { idempotencyKey: options.key }),
  };
}

/** Why a task waits for a person: the worker's reason for asking, else the router's. */
function approvalWhy(task: Task): string | null {
  const because = (task.approval?.request as { because?: unknown } | undefined)?.because;
  if (typeof because === 'string') return because.replaceAll('_', ' ');
  const routing = task.routing as { approvalReason?: unknown } | null;
  return typeof routing?.approvalReason === 'string' ? routing.approvalReason : null;
}

/**
 * A state change as one line on stderr (stdout keeps the command's own output). Waiting for a
 * person, it says why and who may answer: never this terminal's own token, which asked for it.
 */
function progress(state: TaskState, task: Pick<Task, 'id' | 'teamId'>, why?: string | null): void {
  const line =
    state === 'AUTH_REQUIRED'
      ? `${state}: waiting for a person to approve it${why ? ` (${why})` : ''}. The token that asked cannot answer: approve it with the admin token (ctxbus approve --team ${task.teamId} ${task.id}), in Telegram or on the dashboard`
      : state;
  process.stderr.write(`${terminalSafe(`ctxbus: task ${task.id}: ${line}`)}\n`);
}

/**
 * A running command's output as its output lines bring it (each a tail, and where it ends in
 * all the command wrote): each part printed once, in order; a part no line carried (more than a
 * tail between two of them) is said to be missing.
 */
export class LiveOutput {
  /** Characters of the command's output printed so far. */
  printed = 0;

  constructor(
    private readonly out: (text: string) => void = (text) => process.stdout.write(text),
    private readonly err: (text: string) => void = (text) => process.stderr.write(text),
  ) {}

  show(output: { tail: string; end: number | null } | null): void {
    // A worker that does not say where its tail ends: nothing can be printed once only.
    if (output === null || output.end === null || output.end <= this.printed) return;
    const start = output.end - output.tail.length;
    if (start > this.printed) {
      this.err(
        `\nctxbus: (${start - this.printed} characters of output not shown here: see ctxbus task)\n`,
      );
    }
    this.out(terminalSafe(output.tail.slice(Math.max(0, this.printed - start))));
    this.printed = output.end;
  }
}

/**
 * Prints the ended task's output (unless it was shown as it ran); throws (exit 1) when it did
 * not complete.
 */
function finish(task: Task, json: boolean, shownLive: boolean, routed: string): void {
  const result = (task.result ?? {}) as CommandResultView;
  if (json) printJson({ task });
  else if (!shownLive) {
    if (result.stdout) process.stdout.write(terminalSafe(result.stdout));
    if (result.stderr) process.stderr.write(terminalSafe(result.stderr));
    if (result.truncated) process.stderr.write('ctxbus: (output cut to fit: head and tail kept)\n');
  }
  if (task.state === 'COMPLETED') return;
  throw endedOtherwise(task, routed);
}

/** A task that ended without completing, and why (its error, else the router's reason). */
function endedOtherwise(task: Task, routed: string): CtxbusError {
  const why = task.error
    ? `${task.error.code}: ${oneLine(task.error.message)}`
    : task.state === 'CANCELED'
      ? 'canceled'
      : routed;
  return new CtxbusError('internal', `task ${task.id} ended ${task.state}: ${why}`);
}

export async function delegate(argv: readonly string[], options: DelegateOptions): Promise<void> {
  const request = delegateRequest(argv, options);
  const { client } = connect(options);
  // Read before the task exists: following from here sees its first status item too.
  const since = healthSeq(await client.health());
  const { task, routing } = await client.createTask(request);
  if (!options.wait) {
    if (options.json) printJson({ task, routing });
    else {
      printLine(taskLine(task));
      printLine(
        `routing: ${routing.kind} -> ${routing.runtime ?? 'no runtime'}: ${routing.reason}`,
      );
    }
    // Refused as it was created (no runtime can do it): a failure, even without waiting.
    if (isTerminalTaskState(task.state) && task.state !== 'COMPLETED') {
      throw endedOtherwise(task, routing.reason);
    }
    return;
  }
  process.stderr.write(
    `${terminalSafe(`ctxbus: task ${task.id} -> ${routing.runtime ?? 'no runtime'} (${routing.kind}): ${routing.reason}`)}\n`,
  );
  progress(task.state, task, approvalWhy(task));
  const live = options.live ?? (process.stdout.isTTY === true && options.json !== true);
  const output = new LiveOutput();
  const stop = new AbortController();
  const interrupted = () => stop.abort();
  // Ctrl-C, or a kill (a timeout, a closed terminal's SIGTERM): the task does not outlive it.
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  try {
    if (!isTerminalTaskState(task.state)) {
      const events = client.stream({
        since,
        signal: stop.signal,
        scopeKey: taskScopeKey(task.id),
        tags: TASK_TAG,
      });
      let shown = task.state;
      for await (const status of followTaskStatus(events, task.id)) {
        // Progress updates repeat WORKING with more output: a line per change of state.
        if (status.state !== shown) {
          const why =
            status.state === 'AUTH_REQUIRED'
              ? await client.task(task.id).then(
                  ({ task: now }) => approvalWhy(now),
                  () => null,
                )
              : null;
          progress(status.state, task, why);
        }
        shown = status.state;
        if (live) output.show(taskOutputOf(status.item));
      }
    }
  } finally {
    process.off('SIGINT', interrupted);
    process.off('SIGTERM', interrupted);
  }
  if (stop.signal.aborted) {
    // Ctrl-C stops the command too: the origin cancels its task (one that ended meanwhile
    // keeps its end, which is what is shown).
    await client.cancelTask(task.id, 'ctxbus delegate was stopped').catch(() => undefined);
  }
  finish(
    (await client.task(task.id)).task,
    options.json === true,
    output.printed > 0,
    routing.reason,
  );
}
