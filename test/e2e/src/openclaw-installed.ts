import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { CliRun, HubProcess } from '@ctxbus/test-kit';
import {
  CLI,
  removeDir,
  runtimeToken,
  spawnCli,
  startHubProcess,
  tempDir,
  workerPolicy,
} from '@ctxbus/test-kit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { OpenClawHome } from './openclaw-harness.js';
import { createOpenClawHome, OPENCLAW_BIN, openClawUnavailable } from './openclaw-harness.js';
import type {
  ChatCompletionsRequest,
  ScriptedOpenAiModel,
  ScriptedOpenAiReply,
} from './scripted-openai-model.js';
import { startScriptedOpenAiModel } from './scripted-openai-model.js';

// The real OpenClaw CLI from npm with the ctxbus plugin installed by `ctxbus install openclaw`,
// against a real `ctxbus serve` and a running `ctxbus worker` (Claude Code's machine), the model
// played by a local OpenAI-compatible server. Each `openclaw agent --local` turn takes 20-60 s,
// so the tests are in two files (openclaw.test.ts, openclaw-offline-live.test.ts) that run side
// by side, each with a world of its own. Skips, saying why, when the binary or a recent enough
// Node is missing, unless CTXBUS_REQUIRE_OPENCLAW=1 (CI), where it fails instead.

export const PLUGIN_DIR = resolve(import.meta.dirname, '../../../packages/adapter-openclaw/plugin');
const required = process.env.CTXBUS_REQUIRE_OPENCLAW === '1';
const unavailable = openClawUnavailable();
const skip = unavailable !== null && !required;
export const because = unavailable ? ` (skipped: ${unavailable})` : '';
/** `it`, or `it.skip` (its name saying why) where OpenClaw cannot run and CI does not ask for it. */
export function openClawIt(name: string, test: () => Promise<void>): void {
  (skip ? it.skip : it)(name, test);
}

export interface CommandResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** One file's OpenClaw home, hub, model and worker; fields are set once its beforeAll ran. */
export interface OpenClawWorld {
  /** What the scripted model answers; a test sets it before a turn. */
  reply: (request: ChatCompletionsRequest, index: number) => ScriptedOpenAiReply;
  model: ScriptedOpenAiModel;
  openclaw: OpenClawHome;
  /** The hub; a test that restarts it puts the new one here. */
  hub: HubProcess;
  adminToken: string | null;
  clawToken: string;
  codeToken: string;
  /** The hub's fixed port (the installed plugin names its URL). */
  readonly port: number;
  /** Claude Code's project, where its worker may run `node check.js`. */
  readonly project: string;
  /** `ctxbus <args>` in OpenClaw's home, with only that home's environment. */
  ctxbus(args: string[]): Promise<CommandResult>;
  /** `ctxbus install openclaw` with the hub's URL and OpenClaw's token. */
  /** `ctxbus install openclaw` against the world's hub, with `extra` options (`--live`). */
  install(extra?: string[]): Promise<CommandResult>;
}

/** The model's tool call through OpenClaw's Tool Search bridge (plugin tools are listed, not sent). */
export function callTool(name: string, args: Record<string, unknown>): ScriptedOpenAiReply {
  return { toolCall: { name: 'tool_call', arguments: { id: name, args } } };
}

/**
 * Under vitest (NODE_ENV=test, VITEST_WORKER_ID) OpenClaw takes itself for a test and prints
 * nothing: `ctxbus` runs with only the OpenClaw home's environment.
 */
export function runCtxbus(openclaw: OpenClawHome, args: string[]): Promise<CommandResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { ...openclaw.env, CTXBUS_CONFIG_DIR: join(openclaw.home, 'ctxbus-config') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    // A hang guard: `ctxbus install openclaw` starts OpenClaw twice (60-160 s each at load 15-20).
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`ctxbus ${args.join(' ')} timed out; stderr: ${stderr}`));
    }, 600_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr });
    });
  });
}

/**
 * A hub (with the repo's capabilities.yaml), the scripted model, an OpenClaw home with ctxbus
 * installed (`extraConfig` merged into its config), and Claude Code's worker, set up in a
 * beforeAll and removed in an afterAll.
 */
export function useOpenClawInstalled(
  options: { extraConfig?: Record<string, unknown> } = {},
): OpenClawWorld {
  // Claude Code's machine: a project under the worker's one root, and its policy, which allows
  // `node check.js` there for tasks from OpenClaw.
  const machine = tempDir('ctxbus-e2e-openclaw-machine-');
  const policyFile = join(machine, 'capabilities.yaml');
  let worker: CliRun | undefined;
  const world = {
    reply: () => ({ text: 'ok' }),
    port: 20_000 + Math.floor(Math.random() * 20_000),
    project: join(machine, 'projects', 'demo'),
    ctxbus: (args: string[]) => runCtxbus(world.openclaw, args),
    install: (extra: string[] = []) =>
      world.ctxbus([
        'install',
        'openclaw',
        '--url',
        world.hub.url,
        '--token',
        world.clawToken,
        '--openclaw',
        OPENCLAW_BIN,
        ...extra,
      ]),
  } as Partial<OpenClawWorld> as OpenClawWorld;

  beforeAll(async () => {
    if (skip) return;
    world.model = await startScriptedOpenAiModel((request, index) => world.reply(request, index));
    const dataDir = tempDir('ctxbus-e2e-openclaw-hub-');
    writeFileSync(
      join(dataDir, 'capabilities.yaml'),
      readFileSync(resolve(import.meta.dirname, '../../../capabilities.yaml'), 'utf8'),
    );
    world.hub = await startHubProcess({ dataDir, args: ['--port', String(world.port)] });
    world.adminToken = world.hub.adminToken;
    world.clawToken = await runtimeToken(world.hub, 'acme', 'openclaw');
    world.codeToken = await runtimeToken(world.hub, 'acme', 'claude-code');
    world.openclaw = createOpenClawHome({
      modelBaseUrl: world.model.baseUrl,
      ...(options.extraConfig && { extraConfig: options.extraConfig }),
    });

    mkdirSync(world.project, { recursive: true });
    writeFileSync(
      join(world.project, 'check.js'),
      "console.log('42 checks passed in', process.cwd());\n",
    );
    writeFileSync(policyFile, workerPolicy(join(machine, 'projects'), ['node check.js']));
    worker = spawnCli(['worker', '--capabilities', policyFile, '--id', 'e2e-worker'], {
      env: { CTXBUS_URL: world.hub.url, CTXBUS_TOKEN: world.codeToken },
    });

    const installed = await world.install();
    expect(installed.code, installed.stdout + installed.stderr).toBe(0);
    expect(installed.stdout).toContain('configured OpenClaw for');
  }, 600_000);

  afterAll(async () => {
    worker?.child.kill('SIGKILL');
    await world.model?.close();
    await world.hub?.stop();
    world.openclaw?.remove();
    removeDir(machine);
    if (world.hub) removeDir(world.hub.dataDir);
  });

  return world;
}
