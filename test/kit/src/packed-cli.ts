// The published `ctxbus` package, as a person gets it: packed by apps/cli/scripts/pack.ts
// (`./dev pack`), installed with npm into an empty prefix on a clean HOME, run from there.
// Shared by test/integration (pack.test.ts) and test/bench (--only install).

import type { ChildProcess } from 'node:child_process';
import { execFile, execFileSync, spawn } from 'node:child_process';
import { lstatSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { TEST_WAIT_MS } from './wait-until.ts';

const PACK_SCRIPT = resolve(import.meta.dirname, '../../../apps/cli/scripts/pack.ts');

export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a program to its end; never rejects on a non-zero exit (the result says). */
export function runProgram(
  file: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number } = {},
): Promise<CommandResult> {
  return new Promise((resolvePromise) => {
    execFile(
      file,
      args,
      {
        env: options.env ?? process.env,
        cwd: options.cwd,
        timeout: options.timeoutMs ?? TEST_WAIT_MS,
        maxBuffer: 64 * 1024 * 1024,
      },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        resolvePromise({ code, stdout: `${stdout}`, stderr: `${stderr}` });
      },
    );
  });
}

/** Packs the `ctxbus` package into `outDir` (the workspace must be built); the tarball's path. */
export async function packTarball(outDir: string): Promise<string> {
  const result = await runProgram(process.execPath, [PACK_SCRIPT, '--out', outDir]);
  if (result.code !== 0) throw new Error(`pack failed (${result.code}): ${result.stderr}`);
  return result.stdout.trim().split('\n').at(-1) ?? '';
}

/**
 * npm's settings of the person running this, read before HOME changes: the cache (so an install
 * on a clean HOME uses the warm cache), the user and global npmrc (a registry, CA or proxy).
 */
function npmSettings(): { cache: string; userconfig: string; globalconfig: string } {
  const get = (key: string) =>
    execFileSync('npm', ['config', 'get', key], { encoding: 'utf8', env: npmEnv() }).trim();
  return { cache: get('cache'), userconfig: get('userconfig'), globalconfig: get('globalconfig') };
}

let settings: ReturnType<typeof npmSettings> | undefined;

/**
 * This process's environment without the npm_* variables a package manager running it sets
 * (pnpm's npm_config_* are not npm's settings).
 */
function npmEnv(home?: string): NodeJS.ProcessEnv {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !key.toLowerCase().startsWith('npm_')),
  );
  return home ? { ...env, HOME: home } : env;
}

/**
 * What a program that runs npm itself (OpenClaw installing a plugin package) needs from the
 * person running this once HOME is elsewhere: their npm cache and configuration (registry, CA),
 * and the TLS and proxy variables, as their own HOME would give it.
 */
export function personNpmEnv(): NodeJS.ProcessEnv {
  settings ??= npmSettings();
  const passed = Object.entries(process.env).filter(([key]) =>
    /^(NODE_EXTRA_CA_CERTS|SSL_CERT_FILE|SSL_CERT_DIR|(https?|no)_proxy)$/i.test(key),
  );
  return {
    ...Object.fromEntries(passed),
    npm_config_cache: settings.cache,
    npm_config_userconfig: settings.userconfig,
    npm_config_globalconfig: settings.globalconfig,
  };
}

/** `npm install --prefix <prefix> <tarball>` with HOME=<home>; rejects with npm's output. */
export async function installTarball(tarball: string, prefix: string, home: string) {
  settings ??= npmSettings();
  const result = await runProgram(
    'npm',
    [
      'install',
      '--prefix',
      prefix,
      '--cache',
      settings.cache,
      '--userconfig',
      settings.userconfig,
      '--globalconfig',
      settings.globalconfig,
      '--no-audit',
      '--no-fund',
      '--no-update-notifier',
      '--loglevel=error',
      tarball,
    ],
    { env: npmEnv(home) },
  );
  if (result.code !== 0) throw new Error(`npm install failed (${result.code}): ${result.stderr}`);
}

/** The installed package's directory in `prefix`. */
export const installedPackage = (prefix: string) => join(prefix, 'node_modules', 'ctxbus');

/** The installed `ctxbus` command (what node_modules/.bin/ctxbus links to). */
export const installedBin = (prefix: string) => join(installedPackage(prefix), 'dist', 'bin.js');

/**
 * The environment of the installed command on a clean HOME: nothing of the person running the
 * tests (no hub, token, data or config directory of theirs).
 */
export function cleanHomeEnv(home: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home };
  for (const key of Object.keys(env)) {
    if (key.startsWith('CTXBUS_') || key.startsWith('XDG_') || key === 'CONTEXT_BUS_CONFIG') {
      delete env[key];
    }
  }
  return env;
}

/** Disk usage of `dir` in bytes, as `du -s` counts it (allocated blocks, directories too). */
export function diskUsage(dir: string): number {
  let total = statSync(dir).blocks * 512;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += diskUsage(path);
    else total += lstatSync(path).blocks * 512;
  }
  return total;
}

/** The installed package's manifest. */
export function installedManifest(prefix: string): Record<string, unknown> {
  return JSON.parse(readFileSync(join(installedPackage(prefix), 'package.json'), 'utf8'));
}

export interface InstalledHub {
  url: string;
  /** What `serve --json` printed first (url, dataDir, store, version, ...). */
  info: Record<string, unknown>;
  process: ChildProcess;
  stderr(): string;
  /** SIGTERM and wait for the exit code. */
  stop(): Promise<number | null>;
}

/** Starts the installed `ctxbus serve --port 0 --json` on `home`; resolves once it prints. */
export async function startInstalledHub(prefix: string, home: string): Promise<InstalledHub> {
  const child = spawn(process.execPath, [installedBin(prefix), 'serve', '--port', '0', '--json'], {
    env: cleanHomeEnv(home),
    cwd: home,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  const first = await new Promise<string>((done, reject) => {
    let stdout = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (stdout.includes('\n')) done(stdout.slice(0, stdout.indexOf('\n')));
    });
    child.once('exit', (code) => reject(new Error(`ctxbus serve exited with ${code}: ${stderr}`)));
  });
  const info = JSON.parse(first) as Record<string, unknown>;
  return {
    url: String(info.url),
    info,
    process: child,
    stderr: () => stderr,
    async stop() {
      if (child.exitCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      return exited;
    },
  };
}
