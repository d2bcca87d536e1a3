// From the packed tarball to a decision shared across runtimes (issue 28), as a person would go:
// the `ctxbus` tarball installed with npm into an empty prefix, `ctxbus serve` on a clean HOME,
// `ctxbus connect` wiring the runtimes it finds on PATH, then one turn of the real Claude Code
// whose reply states a decision (its Stop hook records it) and one turn of the real OpenClaw,
// whose first model request must carry that decision. The models are local scripted servers.
// Timed from "tarball present" to OpenClaw's request arriving at its model. Shared by the
// end-to-end test (test/e2e connect-packed.test.ts) and `./dev bench --only install`.

import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import type { OpenClawAgentRun, OpenClawHome } from './openclaw-home.ts';
import { createOpenClawHome } from './openclaw-home.ts';
import type { CommandResult, InstalledHub } from './packed-cli.ts';
import { installedBin, personNpmEnv, startInstalledHub } from './packed-cli.ts';
import type { ScriptedModel } from './scripted-model.ts';
import { startScriptedModel } from './scripted-model.ts';
import type { ChatCompletionsRequest, ScriptedOpenAiModel } from './scripted-openai-model.ts';
import { startScriptedOpenAiModel } from './scripted-openai-model.ts';

/** The machine the journey runs on: a HOME, the runtimes' commands, their scripted models. */
export interface JourneyMachine {
  /** The clean HOME: OpenClaw's home, Claude Code's, and ctxbus's saved hub and tokens. */
  home: string;
  /** Claude Code's project (the directory `claude -p` runs in). */
  project: string;
  openclaw: OpenClawHome;
  /** Claude Code's model (Anthropic Messages API). */
  claudeModel: ScriptedModel;
  /** OpenClaw's model (Chat Completions); each request's arrival time is in `arrivals`. */
  openclawModel: ScriptedOpenAiModel;
  /** performance.now() when each of openclawModel's requests arrived. */
  arrivals: number[];
  /** The directory of the runtimes' commands (`claude`, `openclaw`, `codex`). */
  binDir: string;
  /** PATH: binDir, then this Node's directory: what connect finds the runtimes on. */
  path: string;
  /** What each scripted model says; the journey sets them. */
  replies: { claude: string; openclaw: string };
  close(): Promise<void>;
}

/** A machine whose runtimes are the commands in `binDir` (a package's node_modules/.bin). */
export async function createJourneyMachine(binDir: string): Promise<JourneyMachine> {
  const replies = { claude: 'ok', openclaw: 'ok' };
  const arrivals: number[] = [];
  const claudeModel = await startScriptedModel(() => ({ text: replies.claude }));
  const openclawModel = await startScriptedOpenAiModel(() => {
    arrivals.push(performance.now());
    return { text: replies.openclaw };
  });
  const openclaw = createOpenClawHome({
    bin: join(binDir, 'openclaw'),
    modelBaseUrl: openclawModel.baseUrl,
  });
  const project = join(openclaw.home, 'project');
  mkdirSync(project);
  return {
    home: openclaw.home,
    project,
    openclaw,
    claudeModel,
    openclawModel,
    arrivals,
    binDir,
    path: [binDir, dirname(process.execPath), '/usr/bin', '/bin'].join(delimiter),
    replies,
    async close() {
      await claudeModel.close();
      await openclawModel.close();
      openclaw.remove();
    },
  };
}

export interface ClaudeTurn {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** One `claude -p` turn in the machine's project, on its HOME, against its scripted model. */
function claudeTurn(machine: JourneyMachine, prompt: string): Promise<ClaudeTurn> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(join(machine.binDir, 'claude'), ['-p', prompt, '--output-format', 'json'], {
      cwd: machine.project,
      env: {
        PATH: machine.path,
        HOME: machine.home,
        ANTHROPIC_BASE_URL: machine.claudeModel.url,
        ANTHROPIC_API_KEY: 'sk-ant-test-scripted-model',
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        DISABLE_TELEMETRY: '1',
      },
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
    // A guard against a hung process, not a speed bound.
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`claude -p hung for 300 s; stderr: ${stderr}`));
    }, 300_000);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr });
    });
  });
}

/** A command's result, with when each line of its stderr came (seconds after its start). */
export interface TimedResult extends CommandResult {
  stderrLines: { line: string; seconds: number }[];
  seconds: number;
}

/**
 * `ctxbus <args>` from the installed package on the machine's HOME, with only the machine's
 * environment (under vitest, NODE_ENV=test, OpenClaw takes itself for a test and prints
 * nothing); each stderr line timed (connect prints its slow steps there as they start).
 */
export function installedCtxbus(
  machine: JourneyMachine,
  prefix: string,
  args: string[],
): Promise<TimedResult> {
  const start = performance.now();
  const since = () => (performance.now() - start) / 1000;
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [installedBin(prefix), ...args], {
      env: { ...personNpmEnv(), ...machine.openclaw.env, PATH: machine.path },
      cwd: machine.home,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    const stderrLines: TimedResult['stderrLines'] = [];
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      const seconds = since();
      stderr += chunk.toString();
      const lines = stderr.split('\n').slice(0, -1);
      for (const line of lines.slice(stderrLines.length)) stderrLines.push({ line, seconds });
    });
    // A guard against a hung process, not a speed bound.
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`ctxbus ${args.join(' ')} hung for 600 s; stderr: ${stderr}`));
    }, 600_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolvePromise({ code: code ?? -1, stdout, stderr, stderrLines, seconds: since() });
    });
  });
}

/** connect's slow steps (its `ctxbus: ...` stderr lines), each with the seconds it took. */
export function stepsLine(result: TimedResult): string {
  const steps = result.stderrLines.filter((entry) => entry.line.startsWith('ctxbus: '));
  const first = steps[0]?.seconds ?? result.seconds;
  const timed = steps.map((step, at) => {
    const end = steps[at + 1]?.seconds ?? result.seconds;
    return `${step.line.slice('ctxbus: '.length)} ${(end - step.seconds).toFixed(1)} s`;
  });
  return [`start, hub check and detection ${first.toFixed(1)} s`, ...timed].join('; ');
}

/** Seconds since the tarball was present, at the end of each step. */
export interface JourneyTimes {
  installed: number;
  /** `ctxbus serve` answering /health. */
  serving: number;
  connected: number;
  /** Claude Code's turn over (its Stop hook has recorded the decision). */
  decided: number;
  /** OpenClaw's first model request of its turn arrived at its model. */
  seen: number;
}

export interface DecisionJourney {
  /** The decision Claude Code's reply stated. */
  decision: string;
  times: JourneyTimes;
  connect: TimedResult;
  claude: ClaudeTurn;
  openclaw: OpenClawAgentRun;
  /** OpenClaw's first model request of its turn: where the decision must be. */
  seenRequest: ChatCompletionsRequest | undefined;
  /** The hub, still serving, when the caller asked to keep it (`keepHub`): it stops it. */
  hub: InstalledHub | undefined;
}

function check(ok: boolean, step: string, output: { stdout: string; stderr: string }): void {
  if (!ok) throw new Error(`${step} failed: ${output.stderr || output.stdout}`);
}

async function waitForHealth(hub: InstalledHub): Promise<void> {
  for (;;) {
    const response = await fetch(`${hub.url}/health`).catch(() => null);
    if (response?.status === 200) return;
    if (hub.process.exitCode !== null) throw new Error(`serve exited: ${hub.stderr()}`);
    await new Promise((resolvePromise) => setTimeout(resolvePromise, 20));
  }
}

/**
 * The journey, from the moment the tarball is present: `install` puts the package in `prefix`
 * (npm install of the tarball; it may be a no-op when the caller installed it earlier), then
 * serve, connect, Claude Code's turn, OpenClaw's turn. Throws, naming the step, when a command
 * fails; whether the decision reached OpenClaw's request is for the caller to judge. The hub
 * stops at the end, unless `keepHub` (a caller that goes on with the connected machine).
 */
export async function runDecisionJourney(
  machine: JourneyMachine,
  prefix: string,
  install: () => Promise<unknown>,
  options: { keepHub?: boolean } = {},
): Promise<DecisionJourney> {
  const start = performance.now();
  const since = () => (performance.now() - start) / 1000;
  const decision = `release from the packed tarball only (marker ${randomUUID().slice(0, 8)})`;
  await install();
  const installed = since();
  const hub = await startInstalledHub(prefix, machine.home);
  let kept = false;
  try {
    await waitForHealth(hub);
    const serving = since();
    const connect = await installedCtxbus(machine, prefix, ['connect']);
    check(connect.code === 0, 'ctxbus connect', connect);
    const connected = since();
    machine.replies.claude = `Agreed.\n\nDecision: ${decision}`;
    const claude = await claudeTurn(machine, 'How do we release from now on?');
    check(claude.code === 0, 'claude -p', claude);
    const decided = since();
    machine.replies.openclaw = 'Understood.';
    const from = machine.arrivals.length;
    const openclaw = await machine.openclaw.agent('What did the team decide about releases?');
    check(openclaw.code === 0, 'openclaw agent', openclaw);
    const arrived = machine.arrivals[from];
    kept = options.keepHub === true;
    return {
      decision,
      times: {
        installed,
        serving,
        connected,
        decided,
        seen: arrived === undefined ? Number.NaN : (arrived - start) / 1000,
      },
      connect,
      claude,
      openclaw,
      seenRequest: machine.openclawModel.requests[from],
      hub: kept ? hub : undefined,
    };
  } finally {
    if (!kept) await hub.stop();
  }
}

/** One line with the journey's seconds, step by step. */
export function journeyLine(times: JourneyTimes, installNote = ''): string {
  const step = (from: number, to: number) => (to - from).toFixed(1);
  return (
    `tarball present -> OpenClaw's model request carries Claude Code's decision: ${times.seen.toFixed(1)} s ` +
    `(npm install ${step(0, times.installed)} s${installNote}, serve -> /health ${step(times.installed, times.serving)} s, ` +
    `connect ${step(times.serving, times.connected)} s, Claude Code turn ${step(times.connected, times.decided)} s, ` +
    `OpenClaw start -> its model request ${step(times.decided, times.seen)} s)`
  );
}
