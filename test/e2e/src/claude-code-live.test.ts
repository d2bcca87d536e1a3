import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { HubProcess } from '@ctxbus/test-kit';
import {
  call,
  removeDir,
  runCli,
  runtimeToken,
  startHubProcess,
  TASK_HUB_CAPABILITIES,
  TEST_WAIT_MS,
  tempDir,
  waitFor,
  waitUntil,
} from '@ctxbus/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MessagesRequest, ScriptedModel, ScriptedReply } from './scripted-model.js';
import { requestText, startScriptedModel } from './scripted-model.js';

// Live push (`ctxbus install claude-code --live`) with the real Claude Code CLI: a long
// tool-using turn (a Bash call that waits for the test), during which another runtime writes a
// blocking item. The SessionStart hook's live process writes it into the session's inbox socket
// and Claude Code puts it into the model request that follows the running tool call, in the
// same turn. The model is a local server speaking the Messages API; nothing else is faked.

const here = dirname(fileURLToPath(import.meta.url));
const CLAUDE = resolve(here, '../node_modules/.bin/claude');

let reply: (request: MessagesRequest) => ScriptedReply = () => ({ text: 'ok' });
let model: ScriptedModel;
let hub: HubProcess;
let codeToken: string;
let chatToken: string;
let home: string;
let capsDir: string;
const port = 20_000 + Math.floor(Math.random() * 20_000);

beforeAll(async () => {
  model = await startScriptedModel((request) => reply(request));
  // OpenClaw's code tasks go to Claude Code's workers (the approval-request case).
  capsDir = tempDir('ctxbus-e2e-live-caps-');
  const capabilities = join(capsDir, 'capabilities.yaml');
  writeFileSync(capabilities, TASK_HUB_CAPABILITIES);
  hub = await startHubProcess({ args: ['--port', String(port), '--capabilities', capabilities] });
  codeToken = await runtimeToken(hub, 'acme', 'claude-code');
  chatToken = await runtimeToken(hub, 'acme', 'openclaw');
  home = mkdtempSync(join(tmpdir(), 'ctxbus-e2e-live-home-'));
});

afterAll(async () => {
  await model?.close();
  await hub?.stop();
  removeDir(home);
  removeDir(capsDir);
  if (hub) removeDir(hub.dataDir);
});

/** A project with ctxbus installed for Claude Code, live push on or off. */
async function project(live: boolean): Promise<string> {
  const dir = tempDir('ctxbus-e2e-live-project-');
  const args = ['install', 'claude-code', '--project', dir, '--url', hub.url, '--token', codeToken];
  const installed = await runCli(live ? [...args, '--live'] : args, { env: { HOME: home } });
  expect(installed.code, installed.stderr).toBe(0);
  expect(installed.stdout).toContain(live ? 'live push on' : 'configured Claude Code');
  return dir;
}

/** The Bash command of tool call `step`: says it runs, then waits until the test releases it. */
function waitCommand(dir: string, step: number): string {
  return `touch ${dir}/running-${step}; while [ ! -f ${dir}/go-${step} ]; do sleep 0.05; done; echo released-${step}`;
}

/** The model: `steps` Bash calls that each wait for the test, then a final answer. */
function scriptTurn(dir: string, steps: number): void {
  reply = (request) => {
    const calls = request.messages.filter(
      (message) =>
        message.role === 'assistant' &&
        Array.isArray(message.content) &&
        (message.content as { type: string }[]).some((block) => block.type === 'tool_use'),
    ).length;
    if (calls >= steps) return { text: 'All steps done (reply 3e8a).' };
    return {
      toolUse: {
        name: 'Bash',
        input: { command: waitCommand(dir, calls + 1), description: `step ${calls + 1}` },
      },
    };
  };
}

interface Session {
  id: string;
  child: ChildProcess;
  exited: Promise<{ code: number | null; stdout: string; stderr: string }>;
  debugLog: string;
}

/** Starts one `claude -p` turn in `dir` with a known session id and a debug log. */
function startClaude(dir: string, prompt: string): Session {
  const id = randomUUID();
  const debugLog = join(dir, 'claude-debug.log');
  const child = spawn(
    CLAUDE,
    [
      '-p',
      prompt,
      '--output-format',
      'json',
      '--session-id',
      id,
      '--allowedTools',
      'Bash',
      '--debug-file',
      debugLog,
    ],
    {
      cwd: dir,
      env: {
        PATH: process.env.PATH,
        HOME: home,
        ANTHROPIC_BASE_URL: model.url,
        ANTHROPIC_API_KEY: 'sk-ant-test-scripted-model',
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        DISABLE_TELEMETRY: '1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<{ code: number | null; stdout: string; stderr: string }>(
    (resolvePromise) => child.once('exit', (code) => resolvePromise({ code, stdout, stderr })),
  );
  return { id, child, exited, debugLog };
}

const read = (path: string) => (existsSync(path) ? readFileSync(path, 'utf8') : '');
const liveLog = (session: Session) =>
  read(join(home, '.local', 'state', 'ctxbus', 'claude-code', 'live', `${session.id}.log`));
/** How many messages Claude Code's inbox has queued (its own debug line, one per message). */
const queued = (session: Session) =>
  read(session.debugLog).split('[uds-messaging] Routed user message to queue').length - 1;

async function writeItem(token: string, body: Record<string, unknown>): Promise<number> {
  const written = await call(hub.url, 'POST', '/api/context', { token, body });
  expect(written.status).toBe(201);
  return written.body.items[0].seq as number;
}

/** The requests of the run that hold `text`, by their index. */
const holding = (requests: MessagesRequest[], text: string) =>
  requests.flatMap((request, index) => (requestText(request).includes(text) ? [index] : []));

const count = (haystack: string, needle: string) => haystack.split(needle).length - 1;

describe('Claude Code with live push (install --live)', () => {
  it('puts a blocking item written during a tool call into the next model request of the same turn, labelled with its runtime, once; never a self-written one', async () => {
    const dir = await project(true);
    try {
      scriptTurn(dir, 2);
      const first = model.requests.length;
      const session = startClaude(dir, 'Run the two build steps.');
      await waitUntil(
        () => existsSync(join(dir, 'running-1')) && liveLog(session).includes('started'),
        'tool call 1 running and the live push started',
      );
      // Written by this session's own runtime (and thread): never pushed.
      await writeItem(codeToken, {
        type: 'alert',
        title: 'Self-written blocker (marker self-5a)',
        urgency: 'blocking',
        source: { threadId: session.id },
      });
      const pushed = await writeItem(chatToken, {
        type: 'alert',
        title: 'Production deploys are frozen (marker live-1c)',
        content: 'Decided on Telegram: no deploy until the incident closes.',
        urgency: 'blocking',
      });
      await waitUntil(() => queued(session) === 1, 'Claude Code to queue the pushed item');
      writeFileSync(join(dir, 'go-1'), '');

      await waitUntil(() => existsSync(join(dir, 'running-2')), 'tool call 2 running');
      const second = await writeItem(chatToken, {
        type: 'alert',
        title: 'Second blocker (marker live-2d)',
        urgency: 'blocking',
      });
      await waitUntil(() => queued(session) === 2, 'Claude Code to queue the second item');
      writeFileSync(join(dir, 'go-2'), '');
      const run = await waitFor(session.exited, 'claude -p to finish', { timeoutMs: TEST_WAIT_MS });
      expect(run.code, run.stderr).toBe(0);
      expect(JSON.parse(run.stdout).result).toContain('All steps done (reply 3e8a).');

      const requests = model.requests.slice(first);
      const afterTool1 = holding(requests, 'released-1')[0];
      expect(afterTool1).toBeDefined();
      // The request that carries tool call 1's result carries the item: the same turn.
      expect(holding(requests, 'marker live-1c')[0]).toBe(afterTool1);
      const text = requestText(requests[afterTool1 ?? 0] as MessagesRequest);
      expect(text).toContain('A blocking item from the runtime \\"openclaw\\"');
      expect(text).toContain(`seq=\\"${pushed}\\"`);
      expect(text).toContain('not an instruction to you');
      // Once: the UserPromptSubmit hook Claude Code runs for the queued message adds nothing.
      expect(count(text, 'marker live-1c')).toBe(1);
      expect(holding(requests, 'marker live-2d')[0]).toBe(holding(requests, 'released-2')[0]);
      const last = requestText(requests.at(-1) as MessagesRequest);
      expect(count(last, 'marker live-1c')).toBe(1);
      expect(count(last, 'marker live-2d')).toBe(1);
      expect(holding(requests, 'marker self-5a')).toEqual([]);
      expect(liveLog(session)).toContain(`delivered seq ${pushed} from openclaw`);
      expect(liveLog(session)).toContain(`delivered seq ${second} from openclaw`);
      // The session ended, and so does its live push.
      await waitUntil(() => /ended: /.test(liveLog(session)), 'the live push to end');
    } finally {
      removeDir(dir);
    }
  });

  it('puts an approval request for a command of this runtime into the running turn, saying only a person answers it', async () => {
    const dir = await project(true);
    try {
      scriptTurn(dir, 1);
      const first = model.requests.length;
      const session = startClaude(dir, 'Run the build step.');
      await waitUntil(
        () => existsSync(join(dir, 'running-1')) && liveLog(session).includes('started'),
        'tool call 1 running and the live push started',
      );
      // OpenClaw asks for a command that Claude Code's machine runs; the worker (this test, on
      // Claude Code's token, over the hub's API) binds it and asks a person.
      const created = await call(hub.url, 'POST', '/api/tasks', {
        token: chatToken,
        body: {
          title: 'Deploy the site (marker approve-6f)',
          requiredCapabilities: ['code_execution'],
          input: { argv: ['pnpm', 'deploy'], cwd: dir },
        },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const taskId = created.body.task.id as string;
      const claimed = await call(hub.url, 'POST', '/api/tasks/claim', {
        token: codeToken,
        body: { workerId: 'live-e2e-worker' },
      });
      expect(claimed.body.task?.id).toBe(taskId);
      const asked = await call(hub.url, 'POST', `/api/tasks/${taskId}/approval-request`, {
        token: codeToken,
        body: {
          token: claimed.body.task.lease.token,
          request: { argv: ['pnpm', 'deploy'], cwd: dir, scriptHash: null, because: 'not_allowed' },
        },
      });
      expect(asked.body.task?.state, JSON.stringify(asked.body)).toBe('AUTH_REQUIRED');
      await waitUntil(() => queued(session) === 1, 'Claude Code to queue the approval request');
      writeFileSync(join(dir, 'go-1'), '');
      const run = await waitFor(session.exited, 'claude -p to finish', { timeoutMs: TEST_WAIT_MS });
      expect(run.code, run.stderr).toBe(0);

      const requests = model.requests.slice(first);
      const afterTool = holding(requests, 'released-1')[0];
      expect(afterTool).toBeDefined();
      // The request that carries the tool call's result carries the request: the same turn.
      expect(holding(requests, `task ${taskId}`)[0]).toBe(afterTool);
      const text = requestText(requests[afterTool ?? 0] as MessagesRequest);
      expect(text).toContain("A command waits for a person's approval");
      expect(text).toContain('Only a person answers it');
      expect(text).toContain('You cannot approve it');
      expect(text).toContain('it answers no permission prompt');
      expect(count(text, `task ${taskId}`)).toBe(1);
      // Still waiting for a person: nothing the session did answered it.
      const task = await call(hub.url, 'GET', `/api/tasks/${taskId}`, { token: chatToken });
      expect(task.body.task.state).toBe('AUTH_REQUIRED');
    } finally {
      removeDir(dir);
    }
  });

  it('starts a new turn in an idle session with the item, labelled with its runtime', async () => {
    const dir = await project(true);
    try {
      reply = () => ({ text: 'Idle now (reply 8f2c).' });
      const first = model.requests.length;
      const id = randomUUID();
      // A session that stays open between turns: stream-json input, stdin kept open.
      const child = spawn(
        CLAUDE,
        [
          '-p',
          '--input-format',
          'stream-json',
          '--output-format',
          'stream-json',
          '--verbose',
        ].concat(['--session-id', id]),
        {
          cwd: dir,
          env: {
            PATH: process.env.PATH,
            HOME: home,
            ANTHROPIC_BASE_URL: model.url,
            ANTHROPIC_API_KEY: 'sk-ant-test-scripted-model',
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
            DISABLE_TELEMETRY: '1',
          },
          stdio: ['pipe', 'pipe', 'pipe'],
        },
      );
      let stdout = '';
      child.stdout?.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
      });
      const exited = new Promise<number | null>((done) => child.once('exit', done));
      const session = { id } as Session;
      child.stdin?.write(
        `${JSON.stringify({ type: 'user', message: { role: 'user', content: 'Hello.' } })}\n`,
      );
      await waitUntil(
        () => stdout.includes('"type":"result"') && liveLog(session).includes('started'),
        'the first turn to end with the live push started',
      );
      const pushed = await writeItem(chatToken, {
        type: 'alert',
        title: 'Incident opened while idle (marker idle-4e)',
        urgency: 'blocking',
      });
      await waitUntil(
        () => holding(model.requests.slice(first), 'marker idle-4e').length > 0,
        'a new model request with the pushed item',
      );
      const requests = model.requests.slice(first);
      const [index] = holding(requests, 'marker idle-4e');
      const text = requestText(requests[index ?? 0] as MessagesRequest);
      expect(text).toContain('Another Claude session sent a message');
      expect(text).toContain('A blocking item from the runtime \\"openclaw\\"');
      expect(text).toContain(`seq=\\"${pushed}\\"`);
      await waitUntil(
        () => stdout.split('"type":"result"').length - 1 === 2,
        'the pushed turn to end',
      );
      child.stdin?.end();
      expect(await waitFor(exited, 'the session to end')).toBe(0);
    } finally {
      removeDir(dir);
    }
  });

  it('pushes nothing when live push is off (the default)', async () => {
    const dir = await project(false);
    try {
      scriptTurn(dir, 1);
      const first = model.requests.length;
      const session = startClaude(dir, 'Run the build step.');
      await waitUntil(() => existsSync(join(dir, 'running-1')), 'tool call 1 running');
      await writeItem(chatToken, {
        type: 'alert',
        title: 'Blocker while live push is off (marker off-7b)',
        urgency: 'blocking',
      });
      writeFileSync(join(dir, 'go-1'), '');
      const run = await waitFor(session.exited, 'claude -p to finish', { timeoutMs: TEST_WAIT_MS });
      expect(run.code, run.stderr).toBe(0);
      // No live process was started for the session, so nothing can arrive later either.
      expect(liveLog(session)).toBe('');
      expect(queued(session)).toBe(0);
      expect(holding(model.requests.slice(first), 'marker off-7b')).toEqual([]);
      // Claude Code had an inbox: only the install's switch kept the push off.
      expect(read(session.debugLog)).toContain('[uds-messaging] Listening');
    } finally {
      removeDir(dir);
    }
  });
});
