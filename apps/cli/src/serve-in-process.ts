// `ctxbus serve` in the caller's own process, for tests whose subject is not the hub process
// (the integration tests' in-process fixture): the same options and defaults, read by the same
// code, and the same setup (the first admin token, the capabilities file, MCP, the dashboard,
// the signing key), without the command's worker thread, signals and printed lines. Built as
// its own entry (package export `ctxbus/serve-in-process`); the published package leaves it out.
import { CtxbusError } from '@ctxbus/core/light';
import { Command, CommanderError } from 'commander';
import { hubLogger, startServedHub } from './commands/run-hub.js';
import type { ServeOptions } from './commands/serve.js';
import { validateServeOptions } from './commands/serve.js';
import { addServeOptions } from './commands/serve-command.js';

export interface InProcessServeOptions {
  /** The environment `serve` reads its defaults and the config directory from. */
  env: NodeJS.ProcessEnv;
  /** Receives each line of the hub's JSON log (what `serve` writes to stderr). */
  log: (line: string) => void;
}

/** A hub started as `ctxbus serve` starts it; `close` is what SIGTERM leads to. */
export interface InProcessServe {
  url: string;
  /** The first admin token, minted when the store had none (as `serve --json` prints it). */
  adminToken: string | null;
  close(): Promise<void>;
}

/** Starts the hub `ctxbus serve <args>` would start, in this process. */
export async function serveInProcess(
  args: readonly string[],
  options: InProcessServeOptions,
): Promise<InProcessServe> {
  const serve = addServeOptions(new Command('serve'), options.env)
    .exitOverride()
    .configureOutput({ writeErr: () => {}, writeOut: () => {} });
  try {
    serve.parse([...args], { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) {
      throw new CtxbusError('validation_failed', `serve ${args.join(' ')}: ${error.message}`);
    }
    throw error;
  }
  const runOptions = validateServeOptions(serve.opts() as ServeOptions, options.env);
  const logger = hubLogger(runOptions.logLevel, { write: options.log });
  const served = await startServedHub(runOptions, logger, options.env);
  return { url: served.running.url, adminToken: served.adminToken, close: () => served.close() };
}
