import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { removeDir } from '@ctxbus/test-kit';
import { afterAll, describe, expect, it } from 'vitest';
import type { ScriptedModel } from './scripted-model.js';
import { requestText, startScriptedModel } from './scripted-model.js';

// The first hour, timed: from a fresh clone and an empty HOME to a Claude Code session that
// starts with the team's context, by the README's commands and no token copied by hand:
//
//   git clone ... && cd ctxbus && ./dev link      # a ctxbus command on PATH
//   ctxbus serve &                                 # saves its URL and admin token
//   ctxbus token create --team acme --runtime cli --save
//   ctxbus write --type decision --title ...
//   cd project && ctxbus install claude-code --project .
//   claude -p ...                                  # the real Claude Code; the model is scripted
//
// The machine's own Node (older than 22 here) makes ./dev fetch Node 24, as on a new machine.
// Packages come from the machine's pnpm store when it has them (a real first install would
// also download them: that time depends on the network, not on ctxbus), and the build's
// outputs from this checkout's turbo cache when they are there for the cloned commit (./dev
// link still runs turbo, which restores them; a build from nothing is what CI's own fresh
// clone runs before the tests, and it took two of this test's three minutes).

const here = dirname(fileURLToPath(import.meta.url));
const REPO = resolve(here, '../../..');
const CLAUDE = resolve(here, '../node_modules/.bin/claude');

const root = mkdtempSync(join(tmpdir(), 'ctxbus-first-hour-'));
const home = join(root, 'home');
const clone = join(root, 'ctxbus');
const bin = join(root, 'bin');
const project = join(root, 'project');
let model: ScriptedModel | undefined;
let hub: ReturnType<typeof spawn> | undefined;

afterAll(async () => {
  if (hub && hub.exitCode === null) {
    // Its data directory is under root: wait for it to close before removing root.
    const exited = new Promise((resolvePromise) => hub?.once('exit', resolvePromise));
    hub.kill('SIGTERM');
    await exited;
  }
  await model?.close();
  removeDir(root);
});

/** The turbo cache this checkout's builds fill (a git worktree's is the main checkout's). */
function turboCache(): string {
  const common = execFileSync('git', ['rev-parse', '--path-format=absolute', '--git-common-dir'], {
    cwd: REPO,
    encoding: 'utf8',
  }).trim();
  return join(dirname(common), '.turbo', 'cache');
}

/** The reader's shell: their PATH with the linked bin first, their HOME, no ctxbus settings. */
function shellEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith('CTXBUS_') && !key.startsWith('npm_') && !key.startsWith('PNPM_'))
      env[key] = value;
  }
  const store = execFileSync('pnpm', ['store', 'path'], { encoding: 'utf8' }).trim();
  return {
    ...env,
    HOME: home,
    PATH: `${bin}:${(process.env.PATH ?? '')
      .split(':')
      .filter((dir) => !dir.includes('/.tools/'))
      .join(':')}`,
    npm_config_store_dir: dirname(store),
    TURBO_CACHE_DIR: process.env.TURBO_CACHE_DIR ?? turboCache(),
  };
}

/**
 * Runs a command to its end, asynchronously: the scripted model answers from this process,
 * so a synchronous wait would leave Claude Code talking to a server that cannot reply.
 */
function run(
  command: string,
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 600_000);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolvePromise(stdout);
      else
        reject(new Error(`${command} ${args.join(' ')} ended with ${code ?? signal}: ${stderr}`));
    });
  });
}

describe('the first hour, from a fresh clone', () => {
  it('reaches a Claude Code session with the team context, no token copied, and says how long it took', async () => {
    mkdirSync(home);
    mkdirSync(project);
    const env = shellEnv();
    const started = performance.now();
    const times: string[] = [];
    const lap = (what: string) =>
      times.push(`${what}: ${((performance.now() - started) / 1000).toFixed(1)} s`);

    await run('git', ['clone', '--quiet', '--depth', '1', `file://${REPO}`, clone], root, env);
    lap('cloned');
    await run('./dev', ['link', bin], clone, env);
    lap('./dev link (Node, install, build from the turbo cache)');

    // `ctxbus serve` in another terminal: it prints its URL once listening.
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    hub = spawn(join(bin, 'ctxbus'), ['serve', '--port', String(port)], { cwd: home, env });
    const url = await new Promise<string>((resolvePromise, reject) => {
      let out = '';
      hub?.stdout?.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const found = /hub listening on (http:\/\/\S+)/.exec(out);
        if (found?.[1]) resolvePromise(found[1]);
      });
      hub?.once('exit', (code) => reject(new Error(`ctxbus serve exited with ${code}: ${out}`)));
    });
    lap('ctxbus serve listening');

    const ctxbus = (args: string[], cwd = home) => run(join(bin, 'ctxbus'), args, cwd, env);
    await ctxbus(['token', 'create', '--team', 'acme', '--runtime', 'cli', '--save']);
    await ctxbus([
      'write',
      '--type',
      'decision',
      '--title',
      'Deploys freeze on Friday (first-hour marker 41c9)',
    ]);
    const installed = await ctxbus(['install', 'claude-code', '--project', '.'], project);
    expect(installed).toContain('with a new token for acme/claude-code');
    lap('token saved, decision written, Claude Code installed');

    model = await startScriptedModel(() => ({ text: 'The freeze is on Friday.' }));
    const answer = await run(
      CLAUDE,
      ['-p', 'When is the freeze?', '--output-format', 'json'],
      project,
      {
        ...env,
        ANTHROPIC_BASE_URL: model.url,
        ANTHROPIC_API_KEY: 'sk-ant-test-scripted-model',
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        DISABLE_TELEMETRY: '1',
      },
    );
    lap('claude -p answered');
    expect(JSON.parse(answer).result).toContain('The freeze is on Friday.');
    const sent = model.requests.at(-1);
    expect(sent && requestText(sent)).toContain(
      'Deploys freeze on Friday (first-hour marker 41c9)',
    );
    expect(sent && requestText(sent)).toContain('# Shared context (ctxbus)');
    const doctor = await ctxbus(['doctor', '--project', '.'], project);
    expect(doctor).toContain(`ok    hub: ${url} answers`);
    process.stdout.write(`first hour, from a fresh clone:\n  ${times.join('\n  ')}\n`);
  }, 900_000);
});
