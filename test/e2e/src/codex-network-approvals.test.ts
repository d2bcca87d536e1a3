import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
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

// Codex's network requests through the team's people, end to end: the real Codex CLI (its
// app-server) runs a sandboxed `curl` to a host outside its network allowlist; Codex asks, its
// PermissionRequest hook (`ctxbus install codex --approvals`) puts the command before the team
// with Codex's description `network-access <target>`, and a person's answer decides whether
// the request passes Codex's allowlist. Codex asks about the network only under managed network
// requirements (/etc/codex/requirements.toml): the app-server runs in a private mount namespace
// where /etc is a copy with that file, so the machine's /etc is untouched. That needs root and
// unshare; without them the file skips, saying why. Codex's sandbox helpers are refused under
// /tmp, so Codex's home is under the user's ~/.cache (a checkout may itself be under /tmp).

const CODEX = resolve(import.meta.dirname, '../node_modules/.bin/codex');
/** Whether /tmp/.git was there before this file ran (see the sandbox settings below). */
const TMP_GIT_BEFORE = existsSync('/tmp/.git');
const missing = existsSync(CODEX) ? null : `no Codex CLI at ${CODEX}: run pnpm install`;
const noNamespace =
  process.getuid?.() === 0 && existsSync('/usr/bin/unshare')
    ? null
    : 'needs root and unshare for a private /etc/codex/requirements.toml';
// A missing binary fails in CI (CTXBUS_REQUIRE_CODEX=1); a machine without namespaces skips.
const why = noNamespace ?? (process.env.CTXBUS_REQUIRE_CODEX === '1' ? null : missing);
const netIt = why ? it.skip : it;
const because = why ? ` (skipped: ${why})` : '';

const COMMAND = 'curl -sS -m 20 http://blocked-host.example/ ; echo curl-exit=$?';
const TARGET = 'network-access http://blocked-host.example:80';

let model: ScriptedResponsesModel;
let hub: HubProcess;
let personToken: string;
let home: string;
let etc: string;
let server: CodexAppServerClient;

const env = () => ({
  PATH: process.env.PATH,
  HOME: home,
  CODEX_HOME: join(home, '.codex'),
  CTXBUS_CONFIG_DIR: join(home, 'ctxbus-config'),
  CONTEXT_BUS_CONFIG: join(home, 'ctxbus-config', 'context-bus', 'config.yaml'),
});

/** `codex` in a private mount namespace whose /etc has the managed network requirements. */
function codexWithRequirements(): string {
  etc = tempDir('ctxbus-e2e-codex-etc-');
  execFileSync('cp', ['-a', '/etc/.', etc]);
  mkdirSync(join(etc, 'codex'), { recursive: true });
  writeFileSync(
    join(etc, 'codex', 'requirements.toml'),
    '[experimental_network]\nenabled = true\nallowed_domains = ["allowed.example"]\n',
  );
  const wrapper = join(home, 'codex-managed-network');
  writeFileSync(
    wrapper,
    `#!/bin/sh\nexec unshare -m -- sh -c 'mount --bind "$1" /etc && shift && exec "$@"' sh "${etc}" "${CODEX}" "$@"\n`,
  );
  chmodSync(wrapper, 0o755);
  return wrapper;
}

beforeAll(async () => {
  if (why) return;
  // Not under /tmp (Codex refuses its sandbox helper there), wherever the checkout is.
  const cache = join(homedir(), '.cache', 'ctxbus-e2e');
  mkdirSync(cache, { recursive: true });
  home = mkdtempSync(join(cache, 'ctxbus-codex-net-'));
  mkdirSync(join(home, '.codex'), { recursive: true });
  mkdirSync(join(home, 'project'), { recursive: true });
  model = await startScriptedResponsesModel((request) =>
    request.input.at(-1)?.type === 'function_call_output'
      ? { text: 'fetched' }
      : { functionCall: { name: 'exec_command', arguments: { cmd: COMMAND } } },
  );
  hub = await startHubProcess();
  personToken = await runtimeToken(hub, 'acme', 'cli');
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
      '[sandbox_workspace_write]',
      'network_access = true',
      // Codex makes /tmp and $TMPDIR writable in its sandbox by default and creates a `.git`
      // in each writable root to mount read-only: a /tmp/.git would make every temporary
      // directory of the machine part of a git work tree (other tests then failed).
      'exclude_slash_tmp = true',
      'exclude_tmpdir_env_var = true',
      '',
    ].join('\n'),
  );
  const installed = await runCli(
    [
      ...['install', 'codex', '--codex', CODEX, '--url', hub.url],
      ...['--admin-token', hub.adminToken ?? '', '--team', 'acme', '--approvals', '600'],
    ],
    { env: env(), timeoutMs: 240_000 },
  );
  expect(installed.code, installed.stdout + installed.stderr).toBe(0);
  // Codex's own prompt, when it asks its user: this user declines.
  server = await startCodexAppServer(codexWithRequirements(), env(), join(home, 'project'), () => ({
    decision: 'decline',
  }));
}, 300_000);

afterAll(async () => {
  await server?.close();
  await model?.close();
  await hub?.stop();
  if (home) removeDir(home);
  if (etc) removeDir(etc);
  if (hub) removeDir(hub.dataDir);
});

/** Starts a turn whose sandboxed command reaches the blocked host; resolves when it completed. */
async function turn(): Promise<void> {
  const started = await server.call<{ thread: { id: string } }>('thread/start', {
    cwd: join(home, 'project'),
    approvalPolicy: 'on-request',
    sandbox: 'workspace-write',
  });
  const threadId = started.thread.id;
  const done = server.next(
    (method, params) => method === 'turn/completed' && params.threadId === threadId,
  );
  await server.call('turn/start', { threadId, input: [{ type: 'text', text: 'Fetch it.' }] });
  await waitFor(done, `the turn of ${threadId} to complete; stderr: ${server.stderr()}`);
}

interface WaitingTask {
  id: string;
  approval: { request: { argv: string[]; reason?: string } };
}

/** The network request the hook put before the team, once it is there. */
async function pendingRequest(seen: Set<string>): Promise<WaitingTask> {
  let found: WaitingTask | undefined;
  await waitUntil(async () => {
    const listed = await call(hub.url, 'GET', '/api/tasks?state=AUTH_REQUIRED&origin=codex', {
      token: personToken,
    });
    found = (listed.body.tasks as WaitingTask[]).find((task) => !seen.has(task.id));
    return found !== undefined;
  }, "Codex's network request on the hub");
  seen.add((found as WaitingTask).id);
  return found as WaitingTask;
}

const lastOutput = () => functionOutputs(model.requests.at(-1) ?? { input: [] }).join('\n');
const seen = new Set<string>();

describe(`Codex's network requests answered by the team's people${because}`, () => {
  netIt('a person denies: the connection is blocked and the model is told why', async () => {
    const asked = server.requests.length;
    const running = turn();
    const task = await pendingRequest(seen);
    expect(task.approval.request).toMatchObject({ argv: [COMMAND], reason: TARGET });
    const denied = await runCli(['deny', task.id, '--note', 'no calls to that host'], {
      env: { CTXBUS_URL: hub.url, CTXBUS_APPROVER_TOKEN: personToken },
    });
    expect(denied.code, denied.stderr).toBe(0);
    await running;
    expect(lastOutput()).toContain('no calls to that host');
    expect(server.requests.slice(asked)).toEqual([]);
  });

  netIt(
    "a person approves at a terminal, seeing the destination as Codex's words: the request passes the allowlist",
    async () => {
      const asked = server.requests.length;
      const running = turn();
      const task = await pendingRequest(seen);
      const approved = await runCliInTerminal(['approve', task.id], {
        env: { CTXBUS_URL: hub.url, CTXBUS_APPROVER_TOKEN: personToken },
        prompt: 'characters of the digest',
        answer: (shown) => /digest: +([0-9a-f]{64})/.exec(shown)?.[1]?.slice(0, 6) ?? '',
      });
      expect(approved.code, approved.stdout).toBe(0);
      expect(approved.stdout).toContain(`command:    ${JSON.stringify([COMMAND])}`);
      expect(approved.stdout).toContain(
        `reason:     "${TARGET}" (codex's words, not in the digest)`,
      );
      await running;
      // Past the allowlist: the request goes on to the proxy's next checks (the host resolves
      // to nothing public here, so one of those stops it), no longer to a person's answer.
      expect(lastOutput()).not.toContain('not on the allowlist');
      expect(lastOutput()).not.toContain('rejected');
      expect(lastOutput()).not.toContain('Denied by');
      expect(server.requests.slice(asked)).toEqual([]);
    },
  );

  netIt("leaves the machine's /tmp out of any git work tree", () => {
    expect(existsSync('/tmp/.git')).toBe(TMP_GIT_BEFORE);
  });
});
