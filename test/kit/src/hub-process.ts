import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TEST_WAIT_MS } from './wait-until.ts';

const here = dirname(fileURLToPath(import.meta.url));

/**
 * `prefix` with the test run's name (CTXBUS_TEST_RUN, set by vitest.temp-dirs.ts) when it is
 * a `ctxbus-` one: the run removes what is left of its directories at its end.
 */
function runPrefix(prefix: string): string {
  const run = process.env.CTXBUS_TEST_RUN;
  return run && prefix.startsWith('ctxbus-') ? `${prefix.replace(/-$/, '')}-${run}-` : prefix;
}
/** The built CLI: tests run the real `ctxbus` command. */
export const CLI = resolve(here, '../../../apps/cli/dist/bin.js');

/**
 * The CLI's credentials directories of the hubs and commands a test starts, unless the test
 * passes its own CTXBUS_CONFIG_DIR: this process's own, so that tests neither read nor write
 * the credentials of the user running them. Each hub saves its admin token in a directory of
 * its own; commands read an empty one (a hub another test started is never their default).
 */
const TEST_CONFIG_ROOT = mkdtempSync(join(tmpdir(), runPrefix('ctxbus-config-')));
process.once('exit', () => rmSync(TEST_CONFIG_ROOT, { recursive: true, force: true }));
const CLI_CONFIG_DIR = join(TEST_CONFIG_ROOT, 'cli');
let hubConfigDirs = 0;

/** A hub a test started: a `ctxbus serve` process, or one in the test's own process. */
export interface TestHub {
  url: string;
  /** The admin token the hub minted at its first start (null: the store had one). */
  adminToken: string | null;
  /** The data directory ('' on PostgreSQL). */
  dataDir: string;
  /** Everything the hub logged (its JSON log, which a process writes to stderr). */
  stderr(): string;
  /** Stops the hub as SIGTERM does, and resolves with its exit code. */
  stop(): Promise<number | null>;
}

export interface HubProcess extends TestHub {
  process: ChildProcess;
  /** SIGTERM and wait for the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL, no cleanup. */
  kill(): Promise<void>;
}

export function tempDir(prefix = 'ctxbus-test-'): string {
  return mkdtempSync(join(tmpdir(), runPrefix(prefix)));
}

export interface StartOptions {
  dataDir?: string;
  /** A PostgreSQL URL for `--store` (no data directory then). */
  store?: string;
  args?: string[];
  env?: NodeJS.ProcessEnv;
}

/**
 * The environment of a hub a test starts: this process's, a credentials directory of the hub's
 * own, responses checked against the API's schemas, then `env`.
 */
export function hubEnvironment(env?: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return {
    ...process.env,
    CTXBUS_CONFIG_DIR: join(TEST_CONFIG_ROOT, `hub-${++hubConfigDirs}`),
    CTXBUS_VALIDATE_RESPONSES: '1',
    ...env,
  };
}

/** Starts `ctxbus serve --port 0 --json` and resolves once it prints its URL. */
export async function startHubProcess(options: StartOptions = {}): Promise<HubProcess> {
  const dataDir = options.store ? '' : (options.dataDir ?? tempDir());
  const child = spawn(
    process.execPath,
    [
      CLI,
      'serve',
      '--port',
      '0',
      '--json',
      ...(options.store ? ['--store', options.store] : ['--data', dataDir]),
      '--log-level',
      'warn',
      ...(options.args ?? []),
    ],
    { env: hubEnvironment(options.env), stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((resolvePromise) =>
    child.once('exit', (code) => resolvePromise(code)),
  );
  const first = await new Promise<string>((resolvePromise, reject) => {
    let stdout = '';
    const onData = (chunk: Buffer) => {
      stdout += chunk.toString();
      const newline = stdout.indexOf('\n');
      if (newline >= 0) {
        child.stdout?.off('data', onData);
        resolvePromise(stdout.slice(0, newline));
      }
    };
    child.stdout?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`ctxbus serve exited with ${code}: ${stderr}`)));
  });
  const info = JSON.parse(first) as { url: string; adminToken: string | null };
  return {
    url: info.url,
    adminToken: info.adminToken,
    dataDir,
    process: child,
    stderr: () => stderr,
    async stop() {
      if (child.exitCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      return exited;
    },
    async kill() {
      if (child.exitCode !== null) return;
      child.kill('SIGKILL');
      await exited;
    },
  };
}

export function removeDir(dir: string): void {
  if (!dir) return;
  rmSync(dir, { recursive: true, force: true });
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface CliRun {
  child: ChildProcess;
  done: Promise<CliResult>;
}

/**
 * The environment of a `ctxbus` command a test runs: nothing of the person running the tests
 * (no hub, token, data directory or saved credentials of theirs), then `env`.
 */
function cliEnv(env: NodeJS.ProcessEnv | undefined): NodeJS.ProcessEnv {
  return {
    ...process.env,
    CTXBUS_URL: '',
    CTXBUS_STORE: '',
    CTXBUS_TOKEN: '',
    CTXBUS_ADMIN_TOKEN: '',
    CTXBUS_DATA: '',
    CTXBUS_CONFIG_DIR: CLI_CONFIG_DIR,
    // seed 003's ~/.config/context-bus/config.yaml: absent (the defaults) unless a test says
    CONTEXT_BUS_CONFIG: join(CLI_CONFIG_DIR, 'context-bus', 'config.yaml'),
    ...env,
  };
}

/**
 * How long a process `spawnCli` starts may live: a guard against a process a test leaked, never
 * a wait. A test stops what it starts (a worker, a watch, a bot) whenever its story is done,
 * which on a loaded machine may be many minutes later; a shorter guard killed a worker another
 * test still needed and rejected a `done` nobody awaited. `runCli` waits TEST_WAIT_MS.
 */
export const SPAWN_GUARD_MS = 30 * 60_000;

/**
 * Starts the real `ctxbus` command; `done` resolves when it exits, and rejects when it outlives
 * `timeoutMs` (default SPAWN_GUARD_MS; then it is killed).
 */
export function spawnCli(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; input?: string; timeoutMs?: number } = {},
): CliRun {
  const child = spawn(process.execPath, [CLI, ...args], {
    env: cliEnv(options.env),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const done = new Promise<CliResult>((resolvePromise, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`ctxbus ${args.join(' ')} timed out; stderr: ${stderr}`));
    }, options.timeoutMs ?? SPAWN_GUARD_MS);
    // The guard alone never keeps the test's process up.
    if (options.timeoutMs === undefined) timer.unref();
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr });
    });
  });
  child.stdin?.end(options.input ?? '');
  return { child, done };
}

/**
 * Runs the real `ctxbus` command to completion; rejects when that takes over `timeoutMs`
 * (default TEST_WAIT_MS).
 */
export function runCli(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; input?: string; timeoutMs?: number } = {},
): Promise<CliResult> {
  return spawnCli(args, { ...options, timeoutMs: options.timeoutMs ?? TEST_WAIT_MS }).done;
}

const shellQuote = (value: string) => `'${value.replaceAll("'", `'\\''`)}'`;

/**
 * Runs the real `ctxbus` command in a terminal of its own: util-linux `script` gives it a pty
 * for stdin and stdout (as a person's shell would). When its output first contains `prompt`,
 * `answer` is typed (with Enter). Everything it printed (the terminal's echo too) is `stdout`.
 */
export function runCliInTerminal(
  args: string[],
  options: {
    env?: NodeJS.ProcessEnv;
    prompt: string;
    answer: (output: string) => string;
    timeoutMs?: number;
  },
): Promise<CliResult> {
  const command = [process.execPath, CLI, ...args].map(shellQuote).join(' ');
  const child = spawn('script', ['-qfec', command, '/dev/null'], {
    env: cliEnv(options.env),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let answered = false;
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    if (!answered && stdout.includes(options.prompt)) {
      answered = true;
      child.stdin?.write(`${options.answer(stdout)}\r`);
    }
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise<CliResult>((resolvePromise, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`ctxbus ${args.join(' ')} (in a terminal) timed out; output: ${stdout}`));
    }, options.timeoutMs ?? SPAWN_GUARD_MS);
    // The guard alone never keeps the test's process up.
    if (options.timeoutMs === undefined) timer.unref();
    child.once('exit', (code) => {
      clearTimeout(timer);
      child.stdin?.end();
      resolvePromise({ code, stdout, stderr });
    });
  });
}
