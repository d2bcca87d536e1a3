import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { HubProcess } from '@ctxbus/test-kit';
import { call, removeDir, runCli, runtimeToken, startHubProcess, tempDir } from '@ctxbus/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MessagesRequest, ScriptedModel, ScriptedReply } from './scripted-model.js';
import { requestText, startScriptedModel, toolResults } from './scripted-model.js';

// The plugin route: `claude plugin marketplace add <this repository>` + `claude plugin install
// ctxbus@ctxbus`, with nothing of ctxbus written into Claude Code's files. The hook and the MCP
// server find the hub and Claude Code's token in ctxbus's saved credentials (~/.config/ctxbus,
// where `ctxbus token create --runtime claude-code --save` put them).

const here = dirname(fileURLToPath(import.meta.url));
const CLAUDE = resolve(here, '../node_modules/.bin/claude');
const REPOSITORY = resolve(here, '../../..');

let model: ScriptedModel;
let hub: HubProcess;
let home: string;
let project: string;
let codeToken: string;
let chatToken: string;
let reply: (request: MessagesRequest) => ScriptedReply = () => ({ text: 'ok' });

/** The real `claude`, with the private HOME and nothing of ctxbus in its environment. */
function runClaude(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(CLAUDE, args, {
      cwd: project,
      env: {
        PATH: process.env.PATH,
        HOME: home,
        ANTHROPIC_BASE_URL: model.url,
        ANTHROPIC_API_KEY: 'sk-ant-test-scripted-model',
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        DISABLE_TELEMETRY: '1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`claude ${args[0]} timed out; stderr: ${err}`));
    }, 90_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolvePromise({ code, out, err });
    });
  });
}

/** Every file under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name));
}

// A plugin's MCP server is `plugin:<plugin>:<server>` to Claude Code, its tools
// `mcp__plugin_<plugin>_<server>__<tool>` (deferred: named in the request's text, found through
// ToolSearch, not listed in its tools).
const WRITE_TOOL = 'mcp__plugin_ctxbus_ctxbus__context_write';

beforeAll(async () => {
  model = await startScriptedModel((request) => reply(request));
  hub = await startHubProcess();
  home = tempDir('ctxbus-e2e-plugin-home-');
  project = tempDir('ctxbus-e2e-plugin-project-');
  chatToken = await runtimeToken(hub, 'acme', 'openclaw');
  // What `ctxbus connect` leaves: the hub saved as the default, Claude Code's token under it.
  const saved = await runCli(
    ['token', 'create', '--team', 'acme', '--runtime', 'claude-code', '--save', '--url', hub.url],
    {
      env: {
        HOME: home,
        CTXBUS_CONFIG_DIR: join(home, '.config', 'ctxbus'),
        CTXBUS_ADMIN_TOKEN: hub.adminToken ?? '',
      },
    },
  );
  expect(saved.code, saved.stderr).toBe(0);
  codeToken = saved.stdout.trim();
});

afterAll(async () => {
  await model?.close();
  await hub?.stop();
  if (home) removeDir(home);
  if (project) removeDir(project);
  if (hub) removeDir(hub.dataDir);
});

describe('Claude Code with the ctxbus plugin from the marketplace', () => {
  it('adds the repository as a marketplace and installs ctxbus from it', async () => {
    const added = await runClaude(['plugin', 'marketplace', 'add', REPOSITORY]);
    expect(added.code, added.out + added.err).toBe(0);
    const installed = await runClaude(['plugin', 'install', 'ctxbus@ctxbus']);
    expect(installed.code, installed.out + installed.err).toBe(0);
    const listed = await runClaude(['plugin', 'list']);
    expect(listed.out).toMatch(/ctxbus@ctxbus/);
  });

  it('injects the team context and records a decision and a tool write with the saved token', async () => {
    const written = await call(hub.url, 'POST', '/api/context', {
      token: chatToken,
      body: { type: 'decision', title: 'Release frozen until Friday (marker 5b1e)' },
    });
    expect(written.status).toBe(201);
    const title = 'Plugin route wrote through its MCP server (marker c40d)';
    reply = (request) => {
      if (toolResults(request).length > 0) {
        return { text: 'Done.\n\nDecision: ship the plugin route before the freeze' };
      }
      return {
        text: 'Recording it.',
        toolUse: {
          name: WRITE_TOOL,
          input: { type: 'discovery', title, content: 'From the plugin.' },
        },
      };
    };
    // The plugin grants itself nothing: the person allows its tools (here, as --allowedTools).
    const run = await runClaude([
      '-p',
      'What is the team up to?',
      '--output-format',
      'json',
      '--allowedTools',
      'mcp__plugin_ctxbus_ctxbus',
    ]);
    expect(run.code, run.err).toBe(0);
    const first = model.requests.find((request) => request.tools?.length);
    expect(first && requestText(first)).toContain('Release frozen until Friday (marker 5b1e)');
    // The injected hint names the tools as the plugin's server exposes them, not the
    // installer's `mcp__ctxbus__*`, which this session does not have.
    expect(first && requestText(first)).toContain(`ctxbus MCP tools (${WRITE_TOOL}`);
    expect(first && requestText(first)).not.toContain('mcp__ctxbus__');
    expect(toolResults(model.requests.at(-1) ?? { messages: [] }).join(' ')).toContain(title);
    const mine = await call(hub.url, 'GET', '/api/context?runtime=claude-code', {
      token: chatToken,
    });
    const titles = mine.body.items.map((item: { title: string }) => item.title);
    expect(titles).toContain('ship the plugin route before the freeze');
    expect(titles).toContain(title);
  });

  it('leaves no token in any file under HOME or the project but ctxbus credentials', () => {
    const credentials = join(home, '.config', 'ctxbus', 'credentials.json');
    expect(readFileSync(credentials, 'utf8')).toContain(codeToken);
    expect(statSync(credentials).mode & 0o077).toBe(0);
    const secrets = [codeToken, hub.adminToken ?? codeToken];
    const leaks = [...filesUnder(home), ...filesUnder(project)]
      .filter((file) => file !== credentials)
      .filter((file) => {
        const text = readFileSync(file, 'latin1');
        return secrets.some((secret) => text.includes(secret));
      });
    expect(leaks).toEqual([]);
  });
});
