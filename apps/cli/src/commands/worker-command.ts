import { statSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname, resolve } from 'node:path';
import { CtxbusError } from '@ctxbus/core/light';
import type { Command } from 'commander';
import { printLine } from '../output.js';
import type { WorkerOptions } from './worker.js';

// `ctxbus worker`: the command and its options; what it does (worker.ts) loads when it runs.

function positive(value: string, flag: string, max: number): number {
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > max) {
    throw new CtxbusError(
      'validation_failed',
      `${flag} must be a whole number from 1 to ${max} (got "${value}")`,
    );
  }
  return Number(value);
}

/**
 * A worker's log names an error ctxbus knows (the hub down, a refusal) by its code and message,
 * one short line each retry; any other keeps pino's stack.
 */
function knownOrStack(stack: (error: Error) => unknown) {
  return (error: unknown): unknown =>
    CtxbusError.isInstance(error)
      ? { type: 'CtxbusError', code: error.code, message: error.message }
      : stack(error as Error);
}

export function registerWorker(
  program: Command,
  run: (action: () => Promise<void>) => Promise<void>,
) {
  program
    .command('worker')
    .description("run code_execution tasks routed to this token's runtime (remote execution)")
    .option('--url <url>', 'hub URL (default: $CTXBUS_URL, else the hub saved by ctxbus serve)')
    .option('--token <token>', "the runtime's token (default: $CTXBUS_TOKEN, else the saved one)")
    .option(
      '--runtime <runtime>',
      "use the token saved for this runtime (default: the one saved that is not the CLI's)",
    )
    .option(
      '--capabilities <file>',
      "this machine's policy: remote_execution.allow and workdir, and each origin's trust",
      'capabilities.yaml',
    )
    .option(
      '--root <dir...>',
      'directories commands may run in (default: remote_execution.workdir)',
    )
    .option('--id <id>', 'this worker instance (default: HOST-PID)')
    .option('--concurrency <n>', 'commands run at once', '1')
    .option('--lease <seconds>', 'claim lease, renewed at a third', '30')
    .option('--timeout <seconds>', 'hard limit per command (capped by limits.seconds)', '600')
    .option('--inactivity <seconds>', 'kill a command silent for this long', '120')
    .option(
      '--sandbox-tmp <MiB>',
      'what a sandboxed command may store in its /tmp (in memory; other private directories hold 64 MiB)',
      '512',
    )
    .addHelpText(
      'after',
      `
Deny by default: a command runs only if its argv is in remote_execution.allow of --capabilities
(this machine's file: the hub cannot widen it), in a directory under --root, with a scrubbed
environment, in its own process group under both timeouts; an entry ending in ... allows more
words only sandboxed with the directory read-only, or once a person approves the exact command
(not for an interpreter's script entry: node scripts/check.js ...). Sandboxed capabilities run in
bubblewrap or not at all. A refused task fails with the reason (not_allowed, inline_eval,
workdir_escape, sandbox_unavailable, approval_required, ...). The worker tells the hub just
before it starts a command; if this worker dies (or loses the hub) for longer than --lease
after that, the task ends FAILED (worker_lost) and is never run again by another worker, and
before that, it returns to the queue. A finished command's result is sent again while the hub
is unreachable, until the lease ends (it does not run twice for a hub that was away a
moment), and output beyond what a task result may hold (512 KiB of JSON)
is cut in the middle (truncated: true). A running command's latest output is posted at most once
a second (none for a command that ends within a second).

Example:
  ctxbus token create --team acme --runtime claude-code --save
  ctxbus worker --capabilities ./capabilities.yaml --root ~/projects`,
    )
    .action((options: WorkerOptions) =>
      run(async () => {
        const {
          DEFAULT_CHILD_PATH,
          TaskWorker,
          createWorkerHub,
          expandHome,
          hubUrl,
          loadCapabilities,
          pino,
          ownRuntimeToken,
        } = await import('./worker.js');
        // Flags first: a bad number is named before anything is looked up.
        const concurrency = positive(options.concurrency, '--concurrency', 64);
        const leaseMs = positive(options.lease, '--lease', 3_600) * 1000;
        const timeoutMs = positive(options.timeout, '--timeout', 86_400) * 1000;
        const inactivityMs = positive(options.inactivity, '--inactivity', 86_400) * 1000;
        const tmpBytes = positive(options.sandboxTmp, '--sandbox-tmp', 1_048_576) * 1024 * 1024;
        const matrix = loadCapabilities(options.capabilities);
        const roots =
          options.root ??
          (matrix.remote_execution?.workdir ? [matrix.remote_execution.workdir] : []);
        if (roots.length === 0) {
          throw new CtxbusError(
            'validation_failed',
            `no directory to run commands in: set remote_execution.workdir in ${options.capabilities} or pass --root`,
          );
        }
        // A root that is no directory would refuse every task later, each with its reason.
        for (const root of roots) {
          const path = resolve(expandHome(root));
          if (!statSync(path, { throwIfNoEntry: false })?.isDirectory()) {
            const from = options.root
              ? '--root'
              : `remote_execution.workdir in ${options.capabilities}:`;
            throw new CtxbusError('validation_failed', `${from} ${root}: no such directory`);
          }
        }
        const url = hubUrl(options.url);
        const hub = createWorkerHub({
          url,
          token: ownRuntimeToken(url, options.token, options.runtime),
        });
        const workerId = options.id ?? `${hostname()}-${process.pid}`;
        const logger = pino(
          {
            base: { workerId },
            level: process.env.CTXBUS_LOG_LEVEL ?? 'info',
            serializers: { err: knownOrStack(pino.stdSerializers.err) },
          },
          pino.destination(2),
        );
        const worker = new TaskWorker({
          hub,
          workerId,
          matrix,
          roots: roots.map((root) => (root.startsWith('~') ? root : resolve(root))),
          concurrency,
          leaseMs,
          limits: { timeoutMs, inactivityMs },
          logger,
          // Children find the Node that runs the worker first (npm, node scripts).
          policy: {
            childPath: `${dirname(process.execPath)}:${DEFAULT_CHILD_PATH}`,
            sandbox: { tmpBytes },
          },
          onTaskDone: (task, outcome) => printLine(`${task.id} ${outcome}: ${task.title}`),
          // Once the hub answered: a hub that is down or refuses the token ends the command
          // with its reason, never after a "ready".
          onReady: () =>
            printLine(
              `worker ${workerId} ready: ${url}, roots ${roots.map((root) => resolve(expandHome(root))).join(', ')}`,
            ),
        });
        const stop = new AbortController();
        for (const signal of ['SIGINT', 'SIGTERM'] as const) {
          process.once(signal, () => stop.abort());
        }
        try {
          await worker.run(stop.signal);
        } finally {
          hub.close();
        }
      }),
    );
}
