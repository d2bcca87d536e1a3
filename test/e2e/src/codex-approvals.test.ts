import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { HubProcess } from '@ctxbus/test-kit';
import {
  call,
  removeDir,
  runCli,
  runCliInTerminal,
  runtimeToken,
  startHubProcess,
  tempDir,
  waitFor,
  waitUntil,
} from '@ctxbus/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CodexAppServerClient } from './codex-app-server.js';
import { startCodexAppServer } from './codex-app-server.js';
import type { ScriptedResponsesModel } from './scripted-responses-model.js';
import { functionOutputs, startScriptedResponsesModel } from './scripted-responses-model.js';

// Codex's permission requests routed to the team's people, end to end: the real Codex CLI from
// npm as its app-server (the protocol of its IDE extension and desktop app: `codex exec` never
// asks for approval), with `ctxbus install codex --approvals` installed by the real CLI, a real
// `ctxbus serve`, and the model played by a local Responses API server that asks to run a
// command outside the sandbox. A person approves at a terminal with the real `ctxbus approve`
// (Codex runs the command, and never asks its own user), denies with `ctxbus deny` (Codex runs
// nothing), and with the hub down Codex asks its own user (the test declines: nothing runs).
// Skips, saying why, when the binary is missing, unless CTXBUS_REQUIRE_CODEX=1 (CI).

const CODEX = resolve(import.meta.dirname, '../node_modules/.bin/codex');
const required = process.env.CTXBUS_REQUIRE_CODEX === '1';
const missing = existsSync(CODEX) ? null : `no Codex CLI at ${CODEX}: run pnpm install`;
const codexIt = missing && !required ? it.skip : it;
const because = missing ? ` (skipped: ${missing})` : '';

let model: ScriptedResponsesModel;
let hub: HubProcess;
let hubStopped = false;
let personToken: string;
let home: string;
let project: string;
let server: CodexAppServerClient;
/** The command the scripted model asks to run, outside the sandbox, in the next turn. */
let command = '';

const env = () => ({
  PATH: process.env.PATH,
  HOME: home,
  CODEX_HOME: join(home, '.codex'),
  CTXBUS_CONFIG_DIR: join(home, 'ctxbus-config'),
  CONTEXT_BUS_CONFIG: join(home, 'ctxbus-config', 'context-bus', 'config.yaml'),
});

/** The person's terminal: the CLI acting with an approver token of their own. */
const personEnv = () => ({ CTXBUS_URL: hub.url, CTXBUS_APPROVER_TOKEN: personToken });

beforeAll(async () => {
  if (missing && !required) return;
  model = await startScriptedResponsesModel((request) =>
    request.input.at(-1)?.type === 'function_call_output'
      ? { text: `done: ${functionOutputs(request).at(-1) ?? ''}` }
      : {
          functionCall: {
            name: 'exec_command',
            arguments: {
              cmd: command,
              sandbox_permissions: 'require_escalated',
              justification: 'write the release notes',
            },
          },
        },
  );
  hub = await startHubProcess();
  personToken = await runtimeToken(hub, 'acme', 'cli');
  home = tempDir('ctxbus-e2e-codex-approvals-');
  project = join(home, 'project');
  mkdirSync(join(home, '.codex'), { recursive: true });
  mkdirSync(project, { recursive: true });
  writeFileSync(
    join(home, '.codex', 'config.toml'),
    [
      'model = "fake-model"',
      'model_provider = "scripted"',
      '',
      '[model_providers.scripted]',
      'name = "scripted"',
      `base_url = "${model.baseUrl}"`,
      'wire_api = "responses"',
      '',
    ].join('\n'),
  );
  const installed = await runCli(
    [
      'install',
      'codex',
      '--codex',
      CODEX,
      '--url',
      hub.url,
      '--admin-token',
      hub.adminToken ?? '',
      '--team',
      'acme',
      '--approvals',
      '600',
    ],
    { env: env(), timeoutMs: 240_000 },
  );
  expect(installed.code, installed.stdout + installed.stderr).toBe(0);
  expect(installed.stdout).toContain('5 hooks trusted');
  // Codex's own prompt, when it asks its user: this user declines.
  server = await startCodexAppServer(CODEX, env(), project, () => ({ decision: 'decline' }));
}, 300_000);

afterAll(async () => {
  await server?.close();
  await model?.close();
  if (hub && !hubStopped) await hub.stop();
  if (home) removeDir(home);
  if (hub) removeDir(hub.dataDir);
});

/** Starts a turn in a new thread that may ask for approval, and returns when it completed. */
async function turn(prompt: string): Promise<void> {
  const started = await server.call<{ thread: { id: string } }>('thread/start', {
    cwd: project,
    approvalPolicy: 'on-request',
    sandbox: 'read-only',
  });
  const threadId = started.thread.id;
  const done = server.next(
    (method, params) => method === 'turn/completed' && params.threadId === threadId,
  );
  await server.call('turn/start', { threadId, input: [{ type: 'text', text: prompt }] });
  await waitFor(done, `the turn of ${threadId} to complete; stderr: ${server.stderr()}`);
}

interface WaitingTask {
  id: string;
  approval: { request: { argv: string[]; digest: string } };
}

/** The request the hook put before the team, once it is there. */
async function pendingRequest(argv0: string): Promise<WaitingTask> {
  let found: WaitingTask | undefined;
  await waitUntil(async () => {
    const listed = await call(hub.url, 'GET', '/api/tasks?state=AUTH_REQUIRED&origin=codex', {
      token: personToken,
    });
    found = (listed.body.tasks as WaitingTask[]).find(
      (task) => task.approval.request.argv[0] === argv0,
    );
    return found !== undefined;
  }, `Codex's approval request for ${argv0} on the hub`);
  return found as WaitingTask;
}

const lastOutput = () => functionOutputs(model.requests.at(-1) ?? { input: [] }).join('\n');

describe(`Codex's permission requests answered by the team's people${because}`, () => {
  codexIt(
    'a person approves at a terminal with ctxbus approve: Codex runs the command and never asks its own user',
    async () => {
      command = 'touch approved.txt && echo wrote-approved';
      const asked = server.requests.length;
      const running = turn('Write the release notes file.');
      const task = await pendingRequest(command);
      const prompt = 'characters of the digest';
      const approved = await runCliInTerminal(['approve', task.id], {
        env: personEnv(),
        prompt,
        answer: (shown) => /digest: +([0-9a-f]{64})/.exec(shown)?.[1]?.slice(0, 6) ?? '',
      });
      expect(approved.code, approved.stdout).toBe(0);
      expect(approved.stdout).toContain(`command:    ${JSON.stringify([command])}`);
      expect(approved.stdout).toContain(`in:         ${JSON.stringify(project)}`);
      await running;
      expect(existsSync(join(project, 'approved.txt'))).toBe(true);
      expect(lastOutput()).toContain('wrote-approved');
      expect(server.requests.slice(asked)).toEqual([]);
      const read = await call(hub.url, 'GET', `/api/tasks/${task.id}`, { token: personToken });
      expect(read.body.task).toMatchObject({
        state: 'CANCELED',
        approval: { status: 'approved', decidedBy: 'cli' },
      });
    },
  );

  codexIt(
    'a person denies with ctxbus deny: Codex runs nothing and tells the model why',
    async () => {
      command = 'touch denied.txt';
      const asked = server.requests.length;
      const running = turn('Write the other file.');
      const task = await pendingRequest(command);
      const denied = await runCli(['deny', task.id, '--note', 'not before the release'], {
        env: personEnv(),
      });
      expect(denied.code, denied.stderr).toBe(0);
      await running;
      expect(existsSync(join(project, 'denied.txt'))).toBe(false);
      expect(lastOutput()).toContain('not before the release');
      expect(server.requests.slice(asked)).toEqual([]);
    },
  );

  codexIt(
    'with the hub down, Codex asks its own user (never an allow without a person)',
    async () => {
      expect(await hub.stop()).toBe(0);
      hubStopped = true;
      command = 'touch fallback.txt';
      const asked = server.requests.length;
      await turn('Write the fallback file.');
      expect(server.requests.slice(asked).map((request) => request.method)).toEqual([
        'item/commandExecution/requestApproval',
      ]);
      // This user declined: nothing ran.
      expect(existsSync(join(project, 'fallback.txt'))).toBe(false);
    },
  );
});
