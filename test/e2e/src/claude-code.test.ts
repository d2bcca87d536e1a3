import { spawn } from 'node:child_process';
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { HubProcess } from '@ctxbus/test-kit';
import {
  call,
  openStream,
  removeDir,
  runCli,
  runtimeToken,
  startHubProcess,
  tempDir,
} from '@ctxbus/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ScriptedModel, ScriptedReply } from './scripted-model.js';
import { requestText, startScriptedModel, toolResults } from './scripted-model.js';

const here = dirname(fileURLToPath(import.meta.url));
const CLAUDE = resolve(here, '../node_modules/.bin/claude');
const PLUGIN_DIR = resolve(here, '../../../packages/adapter-claude-code/plugin');

interface ClaudeRun {
  code: number | null;
  result: string;
  /** Claude Code's session id (from its JSON output), for `--resume`. */
  sessionId: string;
  stderr: string;
}

/** Runs the real `claude -p` in `project` with a private HOME, the model played by `model`. */
function runClaude(
  model: ScriptedModel,
  home: string,
  project: string,
  prompt: string,
  extraEnv: Record<string, string> = {},
  extraArgs: string[] = [],
): Promise<ClaudeRun> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(CLAUDE, ['-p', prompt, '--output-format', 'json', ...extraArgs], {
      cwd: project,
      env: {
        PATH: process.env.PATH,
        HOME: home,
        ANTHROPIC_BASE_URL: model.url,
        ANTHROPIC_API_KEY: 'sk-ant-test-scripted-model',
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        DISABLE_TELEMETRY: '1',
        ...extraEnv,
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
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`claude -p timed out; stderr: ${stderr}`));
    }, 90_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      let result = stdout;
      let sessionId = '';
      try {
        const parsed = JSON.parse(stdout) as { result: string; session_id?: string };
        result = parsed.result;
        sessionId = parsed.session_id ?? '';
      } catch {}
      resolvePromise({ code, result, sessionId, stderr });
    });
  });
}

/** Runs a `claude` subcommand (no model involved) with the private HOME; stdout and stderr. */
function runClaudeCommand(
  args: string[],
  cwd: string,
): Promise<{ code: number | null; out: string }> {
  return new Promise((resolvePromise) => {
    const child = spawn(CLAUDE, args, {
      cwd,
      env: { PATH: process.env.PATH, HOME: home, DISABLE_TELEMETRY: '1' },
    });
    let out = '';
    const collect = (chunk: Buffer) => {
      out += chunk.toString();
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    child.once('exit', (code) => resolvePromise({ code, out }));
  });
}

let reply: (request: Parameters<Parameters<typeof startScriptedModel>[0]>[0]) => ScriptedReply =
  () => ({ text: 'ok' });
let model: ScriptedModel;
let hub: HubProcess;
let adminToken: string | null;
let codeToken: string;
let chatToken: string;
let home: string;
let project: string;
const port = 20_000 + Math.floor(Math.random() * 20_000);

beforeAll(async () => {
  model = await startScriptedModel((request) => reply(request));
  hub = await startHubProcess({ args: ['--port', String(port)] });
  adminToken = hub.adminToken;
  codeToken = await runtimeToken(hub, 'acme', 'claude-code');
  chatToken = await runtimeToken(hub, 'acme', 'openclaw');
  home = mkdtempSync(join(tmpdir(), 'ctxbus-e2e-home-'));
  project = tempDir('ctxbus-e2e-project-');
  const installed = await runCli(
    ['install', 'claude-code', '--project', project, '--url', hub.url, '--token', codeToken],
    { env: { HOME: home } },
  );
  expect(installed.code, installed.stderr).toBe(0);
});

afterAll(async () => {
  await model?.close();
  await hub?.stop();
  removeDir(home);
  removeDir(project);
  if (hub) removeDir(hub.dataDir);
});

describe('Claude Code with ctxbus installed', () => {
  it('lists the ctxbus MCP server as connected, with no approval pending and nothing in .mcp.json', async () => {
    const listed = await runClaudeCommand(['mcp', 'list'], project);
    expect(listed.code, listed.out).toBe(0);
    expect(listed.out).toMatch(/^ctxbus: .*Connected/m);
    expect(listed.out).not.toMatch(/pending/i);
    expect(existsSync(join(project, '.mcp.json'))).toBe(false);
  });

  it('puts what another runtime wrote into the request Claude Code sends the model', async () => {
    const written = await call(hub.url, 'POST', '/api/context', {
      token: chatToken,
      body: {
        type: 'decision',
        title: 'Release frozen until Friday (marker 7f3a)',
        content: 'Agreed on Telegram.',
      },
    });
    expect(written.status).toBe(201);
    reply = () => ({ text: 'Noted the freeze.\n\nDecision: ship the e2e suite before the freeze' });
    const run = await runClaude(model, home, project, 'What is the team up to?');
    expect(run.code, run.stderr).toBe(0);
    expect(run.result).toContain('Noted the freeze.');
    const sent = model.requests.at(-1);
    expect(sent && requestText(sent)).toContain('Release frozen until Friday (marker 7f3a)');
    expect(sent && requestText(sent)).toContain('# Shared context (ctxbus)');
    // The Stop hook recorded the stated decision, visible to the other runtime.
    const decisions = await call(hub.url, 'GET', '/api/context?type=decision&runtime=claude-code', {
      token: chatToken,
    });
    expect(decisions.body.items.map((item: { title: string }) => item.title)).toContain(
      'ship the e2e suite before the freeze',
    );
  });

  it('runs mcp__ctxbus__context_write for the model; a live subscriber gets the item', async () => {
    const subscriber = openStream(hub.url, chatToken, { query: 'tags=ci' });
    await subscriber.ready;
    const title = 'Flaky test traced to a shared tmp dir (marker 91c2)';
    reply = (request) =>
      toolResults(request).length > 0
        ? { text: 'Recorded it for the team.' }
        : {
            text: 'Let me record that.',
            toolUse: {
              name: 'mcp__ctxbus__context_write',
              input: {
                type: 'discovery',
                title,
                content: 'Two suites wrote to /tmp/ctx at once.',
                tags: ['ci'],
              },
            },
          };
    const run = await runClaude(model, home, project, 'We found why CI flakes; tell the team.');
    expect(run.code, run.stderr).toBe(0);
    expect(run.result).toContain('Recorded it for the team.');
    const results = toolResults(model.requests.at(-1) ?? { messages: [] }).join(' ');
    expect(results).toContain(title);
    expect(results).not.toContain('failed');
    // The kit's guard (TEST_WAIT_MS), not a speed bound: the item may arrive late on a busy machine.
    await subscriber.waitFor(() => subscriber.items().some((event) => event.item.title === title));
    const event = subscriber.items().find((entry) => entry.item.title === title);
    expect(event?.event).toBe('context-added');
    expect(event?.item.source.runtime).toBe('claude-code');
    subscriber.close();
  });

  it("records the prompt's turn context with CTXBUS_TURN_SNAPSHOTS, and ctxbus replay proves it offline", async () => {
    const data = tempDir('ctxbus-e2e-turns-');
    try {
      reply = () => ({ text: 'Snapshot taken.' });
      const run = await runClaude(model, home, project, 'Record this turn (marker 5d1e)', {
        CTXBUS_TURN_SNAPSHOTS: '1',
        CTXBUS_DATA: data,
      });
      expect(run.code, run.stderr).toBe(0);
      const dir = join(data, 'agents', 'claude-code', 'context');
      const [file] = readdirSync(dir);
      if (!file) throw new Error('no turn snapshot written');
      const [record] = readFileSync(join(dir, file), 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line));
      expect(record.input.sources.currentInput.text).toBe('Record this turn (marker 5d1e)');
      const session = record.snapshot.sessionId as string;
      const replay = await runCli(['replay', session, '--data', data], {
        env: { HOME: home, CTXBUS_URL: 'http://127.0.0.1:9' },
      });
      expect(replay.code, replay.stderr).toBe(0);
      expect(replay.stdout).toContain(`${record.snapshot.contextHash} proven`);
    } finally {
      removeDir(data);
    }
  });

  it("gives the next turn's context the session's own chat and the tool results PostToolUse reported (seed 002)", async () => {
    const data = tempDir('ctxbus-e2e-chat-');
    try {
      const notes = join(project, 'notes-e2e.txt');
      writeFileSync(notes, 'The backfill starts at 09:00 (marker 4b9e).\n');
      reply = (request) =>
        toolResults(request).length > 0
          ? { text: 'Read the notes (reply 6c1d).' }
          : { toolUse: { name: 'Read', input: { file_path: notes } } };
      const env = { CTXBUS_TURN_SNAPSHOTS: '1', CTXBUS_DATA: data };
      const first = await runClaude(model, home, project, 'Read the notes (prompt 91c0)', env);
      expect(first.code, first.stderr).toBe(0);
      expect(first.sessionId).not.toBe('');
      reply = () => ({ text: 'Second turn.' });
      const second = await runClaude(model, home, project, 'What did they say?', env, [
        '--resume',
        first.sessionId,
      ]);
      expect(second.code, second.stderr).toBe(0);
      const dir = join(data, 'agents', 'claude-code', 'context');
      const records = readdirSync(dir).flatMap((file) =>
        readFileSync(join(dir, file), 'utf8')
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line)),
      );
      const turn = records.find(
        (record) => record.input.sources.currentInput.text === 'What did they say?',
      );
      if (!turn) throw new Error('no turn context recorded for the second prompt');
      const chat = turn.input.sources.recentMessages as { direction: string; text: string }[];
      expect(chat).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ direction: 'inbound', text: 'Read the notes (prompt 91c0)' }),
          expect.objectContaining({ direction: 'outbound', text: 'Read the notes (reply 6c1d).' }),
        ]),
      );
      const snippets = turn.input.sources.toolSnippets as { tool: string; output: string }[];
      expect(snippets.find((snippet) => snippet.tool === 'Read')?.output).toContain('marker 4b9e');
      expect(turn.snapshot.sourceCounts.toolSnippets).toBeGreaterThan(0);
      expect(turn.input.budgets.maxToolSnippetTokens).toBeGreaterThan(0);
    } finally {
      removeDir(data);
    }
  });

  it('keeps working with the hub down, and sends what it wrote once the hub is back', async () => {
    expect(await hub.stop()).toBe(0);
    const requestsBefore = model.requests.length;
    reply = () => ({ text: 'Working offline.\nDecision: offline decisions reach the hub later' });
    const offline = await runClaude(model, home, project, 'Keep going');
    expect(offline.code, offline.stderr).toBe(0);
    expect(offline.result).toContain('Working offline.');
    const sent = model.requests.at(-1);
    expect(model.requests.length).toBeGreaterThan(requestsBefore);
    // Offline reads: the last good bundle from the local cache, marked as possibly stale.
    const text = sent ? requestText(sent) : '';
    expect(text).toMatch(/shared context from [^;]+ ago; the hub is unreachable/);
    expect(text).toContain('Release frozen until Friday (marker 7f3a)');
    const stateDir = join(home, '.local', 'state', 'ctxbus', 'claude-code');
    expect(statSync(join(stateDir, 'bundle-cache.json')).mode & 0o777).toBe(0o600);
    const queued = readdirSync(stateDir).filter((name) => name.startsWith('outbox'));
    expect(queued.length).toBeGreaterThan(0);

    hub = await startHubProcess({ dataDir: hub.dataDir, args: ['--port', String(port)] });
    hub.adminToken = adminToken;
    reply = () => ({ text: 'Back online.' });
    const online = await runClaude(model, home, project, 'And now?');
    expect(online.code, online.stderr).toBe(0);
    const decisions = await call(hub.url, 'GET', '/api/context?type=decision&limit=500', {
      token: chatToken,
    });
    const offlineDecisions = decisions.body.items.filter(
      (item: { title: string }) => item.title === 'offline decisions reach the hub later',
    );
    expect(offlineDecisions).toHaveLength(1);
    expect(existsSync(join(stateDir, 'outbox.jsonl'))).toBe(false);
  });
});

describe('the Claude Code plugin', () => {
  it('passes claude plugin validate', async () => {
    const validation = await runClaudeCommand(['plugin', 'validate', PLUGIN_DIR], project);
    expect(validation.code, validation.out).toBe(0);
    expect(validation.out).toContain('Validation passed');
    expect(
      JSON.parse(readFileSync(join(PLUGIN_DIR, '.claude-plugin', 'plugin.json'), 'utf8')).name,
    ).toBe('ctxbus');
  });
});
