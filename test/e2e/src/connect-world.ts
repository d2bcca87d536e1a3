import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { delimiter, dirname, join, resolve } from 'node:path';
import type { HubProcess } from '@ctxbus/test-kit';
import { CLI, removeDir, startHubProcess, tempDir } from '@ctxbus/test-kit';
import type { CommandResult } from '@ctxbus/test-kit/packed-cli';
import { personNpmEnv, runProgram } from '@ctxbus/test-kit/packed-cli';
import { afterAll, beforeAll, it } from 'vitest';
import type { OpenClawHome } from './openclaw-harness.js';
import { createOpenClawHome, openClawUnavailable } from './openclaw-harness.js';

// A machine for `ctxbus connect`: a real `ctxbus serve` (its admin token saved in the
// machine's own CTXBUS_CONFIG_DIR), a HOME with the person's own Claude Code and OpenClaw
// settings in it, and the real `claude` and `openclaw` from this package's node_modules on PATH.
// Skips, saying why, where OpenClaw cannot run, unless CTXBUS_REQUIRE_OPENCLAW=1.

export const BIN_DIR = resolve(import.meta.dirname, '../node_modules/.bin');
const required = process.env.CTXBUS_REQUIRE_OPENCLAW === '1';
const unavailable = openClawUnavailable();
const skip = unavailable !== null && !required;
/** Whether the connect tests skip (OpenClaw cannot run here and CI does not ask for it). */
export const connectSkipped = skip;
const because = unavailable ? ` (skipped: ${unavailable})` : '';

/** `it`, or `it.skip` (its name saying why) where OpenClaw cannot run and CI does not ask for it. */
export function connectIt(name: string, test: () => Promise<void>): void {
  (skip ? it.skip : it)(`${name}${skip ? because : ''}`, test);
}

export interface ConnectMachine {
  hub: HubProcess;
  openclaw: OpenClawHome;
  configDir: string;
  /** The person's files that connect writes: Claude Code's two and OpenClaw's config. */
  files: string[];
  /** Their bytes, by path. */
  snapshot(): Record<string, Buffer>;
  /** PATH with the runtimes' commands and the Node running the tests. */
  path: string;
  /** `ctxbus <args>` (the clone's CLI, or `cli`) on this machine, with only its environment. */
  ctxbus(args: string[], env?: NodeJS.ProcessEnv, cli?: string): Promise<CommandResult>;
}

/** A port nothing listens on (bound, then closed). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const address = server.address();
  await new Promise((done) => server.close(done));
  return typeof address === 'object' && address ? address.port : 9;
}

export function useConnectMachine(): ConnectMachine {
  const machine = {} as ConnectMachine;
  beforeAll(async () => {
    if (skip) return;
    machine.configDir = tempDir('ctxbus-connect-config-');
    machine.hub = await startHubProcess({ env: { CTXBUS_CONFIG_DIR: machine.configDir } });
    // No model runs here: OpenClaw's config only needs to be valid.
    machine.openclaw = createOpenClawHome({ modelBaseUrl: 'http://127.0.0.1:9/v1' });
    const home = machine.openclaw.home;
    mkdirSync(join(home, '.claude'));
    // The person's own settings, formatted their way: disconnect must give these bytes back.
    writeFileSync(
      join(home, '.claude', 'settings.json'),
      '{\n    "model": "opus",\n    "hooks": { "Stop": [{ "hooks": [{ "type": "command", "command": "echo mine" }] }] }\n}\n',
    );
    writeFileSync(join(home, '.claude.json'), '{"numStartups":3,"projects":{}}');
    const config = machine.openclaw.configPath;
    writeFileSync(config, `// my OpenClaw\n${readFileSync(config, 'utf8')}`);
    // Codex's own config (Codex home: $HOME/.codex), a person's setting and comment in it.
    mkdirSync(join(home, '.codex'));
    writeFileSync(join(home, '.codex', 'config.toml'), '# mine\nmodel = "gpt-5-codex"\n');
    machine.files = [
      join(home, '.claude', 'settings.json'),
      join(home, '.claude.json'),
      config,
      join(home, '.codex', 'config.toml'),
    ];
    machine.snapshot = () =>
      Object.fromEntries(machine.files.map((file) => [file, readFileSync(file)]));
    // OpenClaw's own npm (installing a plugin package) with the person's npm settings and cache.
    const npm = personNpmEnv();
    machine.path = [BIN_DIR, dirname(process.execPath), '/usr/bin', '/bin'].join(delimiter);
    machine.ctxbus = (args, env = {}, cli = CLI) =>
      runProgram(process.execPath, [cli, ...args], {
        // Under vitest (NODE_ENV=test) OpenClaw prints nothing: only this machine's environment.
        env: {
          ...npm,
          ...machine.openclaw.env,
          PATH: machine.path,
          CTXBUS_CONFIG_DIR: machine.configDir,
          ...env,
        },
        cwd: home,
        timeoutMs: 600_000,
      });
  }, 120_000);
  afterAll(async () => {
    await machine.hub?.stop();
    machine.openclaw?.remove();
    if (machine.configDir) removeDir(machine.configDir);
  });
  return machine;
}

/** The `openclaw` commands a connect started, counted by a wrapper put first on PATH. */
export interface CountedOpenClaw {
  /** PATH with the wrapper first, then the machine's. */
  path: string;
  /** Each start since the last call, as `<subcommand> <subcommand>` (e.g. `plugins install`). */
  take(): string[];
}

/**
 * A wrapper `openclaw` that writes one line per start, then runs the real one (each start of
 * OpenClaw costs 1-3 s of CPU: connect makes none whose answer it already knows). Connect then
 * sees OpenClaw without its package (its version unknown), which changes nothing it does.
 */
export function countOpenClawStarts(machine: { readonly path: string }): CountedOpenClaw {
  const dir = tempDir('ctxbus-openclaw-counter-');
  const log = join(dir, 'starts.log');
  const wrapper = join(dir, 'openclaw');
  writeFileSync(log, '');
  writeFileSync(
    wrapper,
    `#!/bin/sh\necho "$1 $2" >> '${log}'\nexec '${join(BIN_DIR, 'openclaw')}' "$@"\n`,
  );
  chmodSync(wrapper, 0o755);
  afterAll(() => removeDir(dir));
  return {
    get path() {
      return [dir, machine.path].join(delimiter);
    },
    take() {
      const starts = readFileSync(log, 'utf8').split('\n').filter(Boolean);
      writeFileSync(log, '');
      return starts;
    },
  };
}

/** Whether the hub accepts `token` (a runtime token reads one item). */
export async function tokenAccepted(hub: HubProcess, token: string): Promise<boolean> {
  const response = await fetch(`${hub.url}/api/context?limit=1`, {
    headers: { authorization: `Bearer ${token}` },
  });
  return response.ok;
}

/** The saved credentials of the machine, parsed. */
export function savedCredentials(configDir: string): {
  hubs: Record<string, { runtimes?: Record<string, { token: string; teamId: string }> }>;
} {
  return JSON.parse(readFileSync(join(configDir, 'credentials.json'), 'utf8'));
}

export { removeDir, tempDir };
