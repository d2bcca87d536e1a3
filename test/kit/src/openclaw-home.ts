import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { removeDir } from './hub-process.ts';

// Runs the real OpenClaw CLI (npm `openclaw`, a devDependency of the package that uses this) in a
// home of its own: HOME, OPENCLAW_STATE_DIR and OPENCLAW_CONFIG_PATH all point into a temp
// directory, so nothing touches the OpenClaw state of the person running the tests, and the
// model is a local scripted server (an `openai-completions` provider). Update checks and
// telemetry are off. The end-to-end tests and the benchmarks drive OpenClaw through it.

/** The Node versions OpenClaw 2026.9.x accepts (its package.json `engines`). */
const NODE_RANGE = { major: 24, minor: 16 };

/** Why the OpenClaw at `bin` cannot run here (binary missing, Node too old), or null when it can. */
export function openClawUnavailable(bin: string): string | null {
  if (!existsSync(bin)) return `no openclaw binary at ${bin} (pnpm install)`;
  const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
  const tooOld =
    major < NODE_RANGE.major || (major === NODE_RANGE.major && minor < NODE_RANGE.minor);
  if (tooOld) return `OpenClaw needs Node >= 24.16, this is ${process.versions.node}`;
  return null;
}

export interface OpenClawRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** Wall time of the process, in milliseconds. */
  ms: number;
}

export interface OpenClawAgentRun extends OpenClawRun {
  /** `--json` output, parsed; null when stdout held no JSON. */
  json: Record<string, unknown> | null;
}

export interface OpenClawHome {
  /** The temp directory that is HOME for OpenClaw. */
  home: string;
  /** `$HOME/.openclaw`: OPENCLAW_STATE_DIR. */
  stateDir: string;
  /** `$HOME/.openclaw/openclaw.json`: OPENCLAW_CONFIG_PATH. */
  configPath: string;
  /** The environment every `openclaw` process of this home gets. */
  env: NodeJS.ProcessEnv;
  /** The config file, parsed (OpenClaw writes plain JSON when it rewrites it). */
  readConfig(): Record<string, unknown>;
  writeConfig(config: Record<string, unknown>): void;
  /** Runs `openclaw <args>` in this home. */
  run(args: string[], options?: { timeoutMs?: number; cwd?: string }): Promise<OpenClawRun>;
  /** One embedded agent turn: `openclaw agent --local --agent main -m <message> --json`. */
  agent(
    message: string,
    options?: { timeoutMs?: number; sessionId?: string; extraArgs?: string[] },
  ): Promise<OpenClawAgentRun>;
  /** `openclaw plugins inspect <id> --runtime --json`, parsed. */
  inspectPlugin(id: string): Promise<{ run: OpenClawRun; json: Record<string, unknown> | null }>;
  /** `openclaw config get <path> --json`, parsed (null when the path is unset or not JSON). */
  configGet(path: string): Promise<unknown>;
  /** `openclaw mcp set <name> <json>`: writes `mcp.servers.<name>`. */
  mcpSet(name: string, server: Record<string, unknown>): Promise<OpenClawRun>;
  remove(): void;
}

export interface OpenClawHomeOptions {
  /** The `openclaw` binary (the package's `node_modules/.bin/openclaw`). */
  bin: string;
  /** The scripted model's base URL (`http://127.0.0.1:PORT/v1`). */
  modelBaseUrl: string;
  /** The model id the provider lists and the agent uses. */
  modelId?: string;
  /** The provider's wire API and id (`openClawConfig`); Chat Completions as `local` unless set. */
  model?: OpenClawModelOptions;
  /** Merged over the generated config at the top level (e.g. `plugins`, `mcp`). */
  extraConfig?: Record<string, unknown>;
}

/** The environment variables that keep OpenClaw off the network and quiet. */
export const OPENCLAW_QUIET_ENV: Record<string, string> = {
  // No npm update check at startup (also implied by CI=true).
  OPENCLAW_NO_AUTO_UPDATE: '1',
  // No install telemetry ping; DO_NOT_TRACK covers the usage telemetry.
  OPENCLAW_TELEMETRY: '0',
  DO_NOT_TRACK: '1',
  // No downloads of helper tools (ripgrep and the like) by the agent's tools manager.
  OPENCLAW_OFFLINE: '1',
  // The Gateway's side services, in case a command starts one.
  OPENCLAW_SKIP_CHANNELS: '1',
  OPENCLAW_SKIP_GMAIL_WATCHER: '1',
  OPENCLAW_SKIP_CANVAS_HOST: '1',
  OPENCLAW_SKIP_BROWSER_CONTROL_SERVER: '1',
  OPENCLAW_SKIP_STARTUP_MODEL_PREWARM: '1',
  OPENCLAW_DISABLE_BONJOUR: '1',
  // Node's compile cache for OpenClaw's worker threads too. OpenClaw enables the cache for its
  // main thread only (module.enableCompileCache); with NODE_COMPILE_CACHE set, it restarts
  // itself once with the variable pointing at its own cache directory under this one, which
  // its ~10 worker threads then read: a turn costs ~8% less CPU (13.7 s against 14.9 s,
  // alternated), and every `openclaw` command of a test run starts some.
  NODE_COMPILE_CACHE: join(tmpdir(), 'node-compile-cache'),
};

/**
 * Config that turns OpenClaw's own memory search off (`memory.search.enabled`): its index and
 * its worker threads start with every OpenClaw process, ~25% of an agent turn's CPU (11.0 s
 * against 14.6 s, alternated). For the tests whose subject is not OpenClaw's default tool set
 * (ctxbus's tools and context are the same either way); the tests of what a user's OpenClaw
 * loads and sends keep the default.
 */
export const OPENCLAW_NO_MEMORY_SEARCH: Record<string, unknown> = {
  memory: { search: { enabled: false } },
};

/** The model API OpenClaw speaks to the scripted model, and the provider it calls it. */
export interface OpenClawModelOptions {
  /**
   * `openai-completions` (Chat Completions, `startScriptedOpenAiModel`) or `openai-responses`
   * (the Responses API, `startScriptedResponsesModel`).
   */
  api?: 'openai-completions' | 'openai-responses';
  /**
   * The provider id: `local` (a provider of the config's own, no plugin owning it) unless set;
   * `openai` is OpenClaw's bundled OpenAI provider with its base URL pointed at the scripted
   * model, so OpenAI's plugin owns the transport and its transcript policy (what a user of
   * OpenAI gets).
   */
  provider?: string;
}

/** The config OpenClaw needs to run an agent turn against the scripted model. */
export function openClawConfig(
  modelBaseUrl: string,
  modelId = 'fake-model',
  workspace?: string,
  model: OpenClawModelOptions = {},
): Record<string, unknown> {
  const provider = model.provider ?? 'local';
  return {
    update: { checkOnStart: false },
    agents: {
      defaults: {
        model: { primary: `${provider}/${modelId}` },
        ...(workspace ? { workspace } : {}),
      },
    },
    models: {
      mode: 'merge',
      providers: {
        [provider]: {
          baseUrl: modelBaseUrl,
          apiKey: 'sk-scripted-model',
          api: model.api ?? 'openai-completions',
          models: [
            {
              id: modelId,
              name: 'Scripted model',
              reasoning: false,
              input: ['text'],
              cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
              contextWindow: 128_000,
              maxTokens: 4_096,
            },
          ],
        },
      },
    },
  };
}

/**
 * How long one `openclaw` process may run before it is called hung: a guard, never a speed
 * bound. An agent turn costs 25-35 s of CPU (OpenClaw loads its modules in several workers):
 * 18-26 s on an idle 2-core machine, 100-160 s with the machine at load 15-20, where the
 * earlier guard of 120 s failed turns that were still working. The test's own guard
 * (vitest.base.ts) is above it.
 */
export const OPENCLAW_HANG_MS = 300_000;

function spawnOpenClaw(
  bin: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd: string,
  timeoutMs: number,
): Promise<OpenClawRun> {
  const started = performance.now();
  return new Promise((resolvePromise, reject) => {
    const child = spawn(bin, args, {
      cwd,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (part: Buffer) => {
      stdout += part.toString();
    });
    child.stderr.on('data', (part: Buffer) => {
      stderr += part.toString();
    });
    const timer = setTimeout(() => {
      // The whole process group: OpenClaw may respawn itself or start workers.
      if (child.pid) process.kill(-child.pid, 'SIGKILL');
      reject(
        new Error(`openclaw ${args.join(' ')} timed out after ${timeoutMs} ms; stderr: ${stderr}`),
      );
    }, timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr, ms: Math.round(performance.now() - started) });
    });
  });
}

/** The JSON OpenClaw printed: all of stdout, or the last block starting on a line with `{`. */
export function parseJsonOutput(text: string): Record<string, unknown> | null {
  const trimmed = text.trim();
  const starts = [0];
  for (let at = trimmed.indexOf('\n{'); at >= 0; at = trimmed.indexOf('\n{', at + 1)) {
    starts.push(at + 1);
  }
  for (const start of starts) {
    try {
      return JSON.parse(trimmed.slice(start)) as Record<string, unknown>;
    } catch {}
  }
  return null;
}

/** Creates an isolated OpenClaw home whose config points the `main` agent at the scripted model. */
export function createOpenClawHome(options: OpenClawHomeOptions): OpenClawHome {
  const home = mkdtempSync(join(tmpdir(), 'ctxbus-e2e-openclaw-'));
  const stateDir = join(home, '.openclaw');
  const configPath = join(stateDir, 'openclaw.json');
  const workspace = join(stateDir, 'workspace');
  mkdirSync(workspace, { recursive: true });
  const config = {
    ...openClawConfig(options.modelBaseUrl, options.modelId, workspace, options.model),
    ...options.extraConfig,
  };
  writeFileSync(configPath, `${JSON.stringify(config, null, 2)}\n`);
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: home,
    OPENCLAW_STATE_DIR: stateDir,
    OPENCLAW_CONFIG_PATH: configPath,
    ...OPENCLAW_QUIET_ENV,
  };
  const run = (args: string[], runOptions: { timeoutMs?: number; cwd?: string } = {}) =>
    spawnOpenClaw(
      options.bin,
      args,
      env,
      runOptions.cwd ?? workspace,
      runOptions.timeoutMs ?? OPENCLAW_HANG_MS,
    );
  return {
    home,
    stateDir,
    configPath,
    env,
    readConfig: () => JSON.parse(readFileSync(configPath, 'utf8')) as Record<string, unknown>,
    writeConfig: (next) => writeFileSync(configPath, `${JSON.stringify(next, null, 2)}\n`),
    run,
    async agent(message, agentOptions = {}) {
      const args = ['agent', '--local', '--agent', 'main', '-m', message, '--json'];
      if (agentOptions.sessionId) args.push('--session-id', agentOptions.sessionId);
      args.push(...(agentOptions.extraArgs ?? []));
      const result = await run(args, { timeoutMs: agentOptions.timeoutMs ?? OPENCLAW_HANG_MS });
      return { ...result, json: parseJsonOutput(result.stdout) };
    },
    async inspectPlugin(id) {
      const result = await run(['plugins', 'inspect', id, '--runtime', '--json']);
      return { run: result, json: parseJsonOutput(result.stdout) };
    },
    async configGet(path) {
      const result = await run(['config', 'get', path, '--json']);
      return result.code === 0 ? parseJsonOutput(result.stdout) : null;
    },
    mcpSet: (name, server) => run(['mcp', 'set', name, JSON.stringify(server)]),
    remove: () => removeDir(home),
  };
}
