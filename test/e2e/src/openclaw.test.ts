import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { CliRun, HubProcess } from '@ctxbus/test-kit';
import {
  CLI,
  call,
  openStream,
  removeDir,
  runtimeToken,
  spawnCli,
  startHubProcess,
  tempDir,
  waitUntil,
  workerPolicy,
} from '@ctxbus/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OpenClawHome } from './openclaw-harness.js';
import { createOpenClawHome, OPENCLAW_BIN, openClawUnavailable } from './openclaw-harness.js';
import type {
  ChatCompletionsRequest,
  ScriptedOpenAiModel,
  ScriptedOpenAiReply,
} from './scripted-openai-model.js';
import { roleText, startScriptedOpenAiModel, toolResults } from './scripted-openai-model.js';

// The real OpenClaw CLI from npm with the ctxbus plugin installed by `ctxbus install openclaw`,
// against a real `ctxbus serve` and a running `ctxbus worker` (Claude Code's machine), the model
// played by a local OpenAI-compatible server. Each `openclaw agent --local` turn takes 20-60 s.
// Skips, saying why, when the binary or a recent enough Node is missing, unless
// CTXBUS_REQUIRE_OPENCLAW=1 (CI), where it fails instead.

const PLUGIN_DIR = resolve(import.meta.dirname, '../../../packages/adapter-openclaw/plugin');
const required = process.env.CTXBUS_REQUIRE_OPENCLAW === '1';
const unavailable = openClawUnavailable();
const skip = unavailable !== null && !required;
const because = unavailable ? ` (skipped: ${unavailable})` : '';
const openClawIt = skip ? it.skip : it;

let reply: (request: ChatCompletionsRequest, index: number) => ScriptedOpenAiReply = () => ({
  text: 'ok',
});
let model: ScriptedOpenAiModel;
let openclaw: OpenClawHome;
let hub: HubProcess;
let adminToken: string | null;
let clawToken: string;
let codeToken: string;
let worker: CliRun | undefined;
const port = 20_000 + Math.floor(Math.random() * 20_000);

// Claude Code's machine: a project under the worker's one root, and its policy, which allows
// `node check.js` there for tasks from OpenClaw.
const machine = tempDir('ctxbus-e2e-openclaw-machine-');
const project = join(machine, 'projects', 'demo');
const policyFile = join(machine, 'capabilities.yaml');

/**
 * `ctxbus <args>` in OpenClaw's home, with only that home's environment: under vitest
 * (NODE_ENV=test, VITEST_WORKER_ID) OpenClaw takes itself for a test and prints nothing.
 */
function ctxbus(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
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
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`ctxbus ${args.join(' ')} timed out; stderr: ${stderr}`));
    }, 240_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr });
    });
  });
}

function install() {
  return ctxbus([
    'install',
    'openclaw',
    '--url',
    hub.url,
    '--token',
    clawToken,
    '--openclaw',
    OPENCLAW_BIN,
  ]);
}

/** The model's tool call through OpenClaw's Tool Search bridge (plugin tools are listed, not sent). */
function callTool(name: string, args: Record<string, unknown>): ScriptedOpenAiReply {
  return { toolCall: { name: 'tool_call', arguments: { id: name, args } } };
}

beforeAll(async () => {
  if (skip) return;
  model = await startScriptedOpenAiModel((request, index) => reply(request, index));
  const dataDir = tempDir('ctxbus-e2e-openclaw-hub-');
  writeFileSync(
    join(dataDir, 'capabilities.yaml'),
    readFileSync(resolve(import.meta.dirname, '../../../capabilities.yaml'), 'utf8'),
  );
  hub = await startHubProcess({ dataDir, args: ['--port', String(port)] });
  adminToken = hub.adminToken;
  clawToken = await runtimeToken(hub, 'acme', 'openclaw');
  codeToken = await runtimeToken(hub, 'acme', 'claude-code');
  openclaw = createOpenClawHome({ modelBaseUrl: model.baseUrl });

  mkdirSync(project, { recursive: true });
  writeFileSync(join(project, 'check.js'), "console.log('42 checks passed in', process.cwd());\n");
  writeFileSync(policyFile, workerPolicy(join(machine, 'projects'), ['node check.js']));
  worker = spawnCli(['worker', '--capabilities', policyFile, '--id', 'e2e-worker'], {
    env: { CTXBUS_URL: hub.url, CTXBUS_TOKEN: codeToken },
    timeoutMs: 900_000,
  });

  const installed = await install();
  expect(installed.code, installed.stdout + installed.stderr).toBe(0);
  expect(installed.stdout).toContain('configured OpenClaw for');
}, 300_000);

afterAll(async () => {
  worker?.child.kill('SIGKILL');
  await model?.close();
  await hub?.stop();
  openclaw?.remove();
  removeDir(machine);
  if (hub) removeDir(hub.dataDir);
});

describe(`OpenClaw with ctxbus installed${because}`, () => {
  openClawIt(
    'loads the plugin with its hooks and tools; installing again changes nothing',
    async () => {
      const config = openclaw.readConfig() as {
        plugins: { load: { paths: string[] }; entries: Record<string, unknown> };
        mcp: { servers: Record<string, unknown> };
      };
      expect(config.plugins.load.paths).toContain(PLUGIN_DIR);
      expect(config.plugins.entries.ctxbus).toMatchObject({
        enabled: true,
        hooks: { allowConversationAccess: true },
        config: { url: hub.url, token: clawToken },
      });
      expect(config.mcp.servers.ctxbus).toMatchObject({
        url: `${hub.url}/mcp`,
        transport: 'streamable-http',
      });
      const { run, json } = await openclaw.inspectPlugin('ctxbus');
      expect(run.code, run.stderr).toBe(0);
      const inspected = json as {
        plugin: { status: string; toolNames: string[] };
        typedHooks: { name: string }[];
        diagnostics: { message: string }[];
      };
      expect(inspected.plugin.status).toBe('loaded');
      expect(inspected.plugin.toolNames).toEqual(
        expect.arrayContaining(['context_write', 'memory_query', 'capability_request']),
      );
      expect(inspected.typedHooks.map((hook) => hook.name).sort()).toEqual([
        'after_tool_call',
        'agent_end',
        'before_prompt_build',
      ]);
      expect(inspected.diagnostics).toEqual([]);

      const again = await install();
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toContain('nothing changed');
    },
  );

  openClawIt(
    'puts what Claude Code wrote into the request OpenClaw sends the model, and records the decision it states',
    async () => {
      const written = await call(hub.url, 'POST', '/api/context', {
        token: codeToken,
        body: { type: 'decision', title: 'Release frozen until Friday (marker c41e)' },
      });
      expect(written.status).toBe(201);
      const before = model.requests.length;
      reply = () => ({ text: 'Noted.\nDecision: no deploys before the freeze ends (marker c41e)' });
      const run = await openclaw.agent('What is the team up to?', { sessionId: randomUUID() });
      expect(run.code, run.stderr).toBe(0);
      expect(run.json?.payloads).toEqual([expect.objectContaining({ text: expect.any(String) })]);
      const first = model.requests[before];
      expect(first && roleText(first, 'user')).toContain(
        'Release frozen until Friday (marker c41e)',
      );
      expect(first && roleText(first, 'user')).toContain('<team-context source="ctxbus">');
      expect(first && roleText(first, 'system')).toContain('capability_request');

      const decisions = await call(hub.url, 'GET', '/api/context?type=decision&runtime=openclaw', {
        token: codeToken,
      });
      const recorded = decisions.body.items.find(
        (item: { title: string }) =>
          item.title === 'no deploys before the freeze ends (marker c41e)',
      );
      expect(recorded?.source).toMatchObject({ runtime: 'openclaw', agentId: 'main' });
    },
  );

  openClawIt(
    'runs context_write for the model; a live subscriber standing in for Claude Code gets the item',
    async () => {
      const subscriber = openStream(hub.url, codeToken, { query: 'tags=ops' });
      await subscriber.ready;
      const title = 'Disk on build-2 is 95% full (marker 77b0)';
      const before = model.requests.length;
      reply = (_request, index) =>
        index === before
          ? callTool('context_write', {
              type: 'status',
              title,
              tags: ['ops'],
              urgency: 'attention',
            })
          : { text: 'Told the team.' };
      // Seed 002's turn context recorded for both turns of one session (source 1 and 4 below).
      const data = tempDir('ctxbus-e2e-openclaw-turns-');
      openclaw.env.CTXBUS_TURN_SNAPSHOTS = '1';
      openclaw.env.CTXBUS_DATA = data;
      const sessionId = randomUUID();
      const run = await openclaw.agent('Tell the team the disk is nearly full', { sessionId });
      expect(run.code, run.stderr).toBe(0);
      const second = model.requests[before + 1];
      expect(second && toolResults(second).join('\n')).toContain(title);
      try {
        reply = () => ({ text: 'It is recorded.' });
        const next = await openclaw.agent('Is it recorded?', { sessionId });
        expect(next.code, next.stderr).toBe(0);
        const dir = join(data, 'agents', 'main', 'context');
        const records = readdirSync(dir).flatMap((file) =>
          readFileSync(join(dir, file), 'utf8')
            .trim()
            .split('\n')
            .map((line) => JSON.parse(line)),
        );
        const turn = records.find((record) =>
          String(record.input.sources.currentInput.text).includes('Is it recorded?'),
        );
        if (!turn) throw new Error('no turn context recorded for the second prompt');
        // The chat window: the session's own prompt (inbound) and reply (outbound).
        const chat = turn.input.sources.recentMessages as { direction: string; text: string }[];
        expect(
          chat.some(
            (message) =>
              message.direction === 'inbound' &&
              message.text.includes('Tell the team the disk is nearly full'),
          ),
        ).toBe(true);
        expect(chat).toEqual(
          expect.arrayContaining([
            expect.objectContaining({ direction: 'outbound', text: 'Told the team.' }),
          ]),
        );
        // Source 4: the tool result OpenClaw's after_tool_call reported.
        const snippets = turn.input.sources.toolSnippets as { output: string }[];
        expect(snippets.some((snippet) => snippet.output.includes(title))).toBe(true);
      } finally {
        delete openclaw.env.CTXBUS_TURN_SNAPSHOTS;
        delete openclaw.env.CTXBUS_DATA;
        removeDir(data);
      }
      await subscriber.waitFor(
        () => subscriber.items().some((event) => event.item.title === title),
        15_000,
      );
      const event = subscriber.items().find((entry) => entry.item.title === title);
      expect(event?.item.source).toMatchObject({ runtime: 'openclaw', agentId: 'main' });
      subscriber.close();
    },
  );

  openClawIt(
    'hands a command to the worker with capability_request and gets its result back in the turn',
    async () => {
      const before = model.requests.length;
      reply = (_request, index) =>
        index === before
          ? callTool('capability_request', {
              title: 'Run the checks of demo',
              argv: ['node', 'check.js'],
              cwd: project,
              waitSeconds: 90,
            })
          : { text: 'The checks passed.' };
      const run = await openclaw.agent('Run the checks of the demo project', {
        sessionId: randomUUID(),
        timeoutMs: 170_000,
      });
      expect(run.code, run.stderr).toBe(0);
      const second = model.requests[before + 1];
      const result = second ? toolResults(second).join('\n') : '';
      expect(result).toContain('COMPLETED');
      expect(result).toContain('42 checks passed in');
      expect(result).toContain('claude-code');
      const tasks = await call(hub.url, 'GET', '/api/tasks?state=COMPLETED', { token: codeToken });
      const task = tasks.body.tasks.find(
        (entry: { title: string }) => entry.title === 'Run the checks of demo',
      );
      expect(task).toMatchObject({ origin: 'openclaw', targetRuntime: 'claude-code' });
    },
  );

  openClawIt(
    'finishes its turn with the hub down, and the outbox reaches the hub once it is back',
    async () => {
      expect(await hub.stop()).toBe(0);
      const before = model.requests.length;
      reply = () => ({ text: 'Working offline.\nDecision: offline decisions reach the hub later' });
      const offline = await openclaw.agent('Keep going', { sessionId: randomUUID() });
      expect(offline.code, offline.stderr).toBe(0);
      expect(offline.json?.payloads).toEqual([
        expect.objectContaining({ text: expect.stringContaining('Working offline.') }),
      ]);
      // Offline reads: the last good bundle from the local cache, marked as possibly stale.
      const first = model.requests[before];
      const user = first ? roleText(first, 'user') : '';
      expect(user).toContain('<team-context');
      expect(user).toMatch(/shared context from [^;]+ ago; the hub is unreachable/);
      expect(user).toContain('Release frozen until Friday (marker c41e)');
      const cache = join(openclaw.stateDir, 'ctxbus', 'bundle-cache.json');
      expect(statSync(cache).mode & 0o777).toBe(0o600);
      const outbox = join(openclaw.stateDir, 'ctxbus', 'outbox.jsonl');
      expect(existsSync(outbox)).toBe(true);

      hub = await startHubProcess({ dataDir: hub.dataDir, args: ['--port', String(port)] });
      hub.adminToken = adminToken;
      reply = () => ({ text: 'Back online.' });
      const online = await openclaw.agent('And now?', { sessionId: randomUUID() });
      expect(online.code, online.stderr).toBe(0);
      await waitUntil(async () => {
        const found = await call(hub.url, 'GET', '/api/context?type=decision&limit=500', {
          token: codeToken,
        });
        return found.body.items.some(
          (item: { title: string }) => item.title === 'offline decisions reach the hub later',
        );
      }, 'the offline decision to reach the hub');
      const decisions = await call(hub.url, 'GET', '/api/context?type=decision&limit=500', {
        token: codeToken,
      });
      expect(
        decisions.body.items.filter(
          (item: { title: string }) => item.title === 'offline decisions reach the hub later',
        ),
      ).toHaveLength(1);
      expect(existsSync(outbox)).toBe(false);
    },
  );

  openClawIt('uninstall removes exactly what install added', async () => {
    const removed = await ctxbus([
      'install',
      'openclaw',
      '--uninstall',
      '--openclaw',
      OPENCLAW_BIN,
    ]);
    expect(removed.code, removed.stderr).toBe(0);
    const config = openclaw.readConfig() as {
      plugins?: { load?: { paths?: string[] }; entries?: Record<string, unknown> };
      mcp?: { servers?: Record<string, unknown> };
      models?: unknown;
    };
    expect(config.plugins?.load?.paths ?? []).not.toContain(PLUGIN_DIR);
    expect(config.plugins?.entries?.ctxbus).toBeUndefined();
    expect(config.mcp?.servers?.ctxbus).toBeUndefined();
    expect(config.models).toBeDefined(); // the user's own settings stay
    expect(existsSync(join(PLUGIN_DIR, 'dist', 'index.js'))).toBe(true);
  });
});
