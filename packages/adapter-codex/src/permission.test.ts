import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { call, useHubProcess, waitFor, waitUntil } from '@ctxbus/test-kit';
import { describe, expect, it } from 'vitest';
import type { CodexPermissionInput, PermissionContext } from './permission.js';
import { approvalWaitSeconds, parsePermissionInput, runPermissionRequest } from './permission.js';
import { permissionHub } from './permission-hub.js';

// The PermissionRequest hook against a real hub process: it asks the team's people, a person
// answers through the real approval routes (a `cli` token, as `ctxbus approve` sends it), and
// the hook answers Codex. Codex's own token cannot decide; whatever goes wrong leaves the
// decision to Codex's own prompt, never an allow.

const fixture = useHubProcess({
  tokens: { codex: ['acme', 'codex'], person: ['acme', 'cli'], claude: ['acme', 'claude-code'] },
});

const CWD = '/home/dev/app';

function input(command: string, extra: Record<string, unknown> = {}): CodexPermissionInput {
  const parsed = parsePermissionInput({
    session_id: 'sess-perm',
    turn_id: 'turn-1',
    cwd: CWD,
    hook_event_name: 'PermissionRequest',
    model: 'fake-model',
    permission_mode: 'default',
    tool_name: 'Bash',
    tool_input: { command, description: 'needs to write outside the sandbox' },
    transcript_path: null,
    ...extra,
  });
  if (!parsed) throw new Error('bad permission input');
  return parsed;
}

function context(extra: Partial<PermissionContext> = {}): PermissionContext {
  return {
    hub: permissionHub({ url: fixture.url, token: fixture.tokens.codex }, 5_000),
    waitSeconds: 600,
    ...extra,
  };
}

interface WaitingTask {
  id: string;
  state: string;
  approval: {
    status: string;
    request: { argv: string[]; cwd: string; digest: string; tool?: string; reason?: string };
  } | null;
}

/** The pending request for `command`, once the hook has asked. */
async function pendingFor(command: string): Promise<WaitingTask> {
  let found: WaitingTask | undefined;
  await waitUntil(async () => {
    const listed = await call(fixture.url, 'GET', '/api/tasks?state=AUTH_REQUIRED&origin=codex', {
      token: fixture.tokens.person,
    });
    found = (listed.body.tasks as WaitingTask[]).find(
      (task) => task.approval?.request.argv[0] === command,
    );
    return found !== undefined;
  }, `a pending approval request for ${command}`);
  return found as WaitingTask;
}

const answerOf = <T>(answer: Promise<T>) => waitFor(answer, "the hook's answer");

const decide = (runtime: 'codex' | 'person' | 'claude', id: string, what: string, body = {}) =>
  call(fixture.url, 'POST', `/api/tasks/${id}/${what}`, { token: fixture.tokens[runtime], body });

describe('the PermissionRequest hook', () => {
  it('reads only Codex shell commands in an absolute directory', () => {
    expect(input('ls').command).toBe('ls');
    const base = { session_id: 's', turn_id: 't', cwd: CWD, hook_event_name: 'PermissionRequest' };
    expect(
      parsePermissionInput({ ...base, tool_name: 'NetworkAccess', tool_input: { command: 'x' } }),
    ).toBeNull();
    expect(parsePermissionInput({ ...base, tool_name: 'Bash', tool_input: {} })).toBeNull();
    expect(
      parsePermissionInput({
        ...base,
        cwd: 'rel',
        tool_name: 'Bash',
        tool_input: { command: 'ls' },
      }),
    ).toBeNull();
    expect(
      parsePermissionInput({ ...base, hook_event_name: 'PreToolUse', tool_name: 'Bash' }),
    ).toBeNull();
    expect(approvalWaitSeconds(['--url', 'x', '--approval-wait', '90'])).toBe(90);
    expect(approvalWaitSeconds(['--approval-wait', '99999'])).toBe(1800);
    expect(approvalWaitSeconds([])).toBe(300);
  });

  it("allows the command once a person approves it through the hub; Codex's own token is refused", async () => {
    const command = 'touch /home/dev/app/out.txt # marker a1';
    const answer = runPermissionRequest(input(command), context());
    const task = await pendingFor(command);
    const own = await decide('codex', task.id, 'approve', {
      digest: task.approval?.request.digest,
    });
    expect(own.status).toBe(403);
    expect(own.body.error.details.reason).toBe('approver_required');
    const approved = await decide('person', task.id, 'approve', {
      digest: task.approval?.request.digest,
    });
    expect(approved.status, JSON.stringify(approved.body)).toBe(200);
    expect(await answerOf(answer)).toEqual({ decision: { behavior: 'allow' } });
    const closed = await call(fixture.url, 'GET', `/api/tasks/${task.id}`, {
      token: fixture.tokens.person,
    });
    expect(closed.body.task).toMatchObject({
      state: 'CANCELED',
      approval: { status: 'approved', decidedBy: 'cli' },
    });
  });

  it('denies with who and why when a person denies; another agent cannot deny for them', async () => {
    const command = 'git push --force # marker d2';
    const answer = runPermissionRequest(input(command), context());
    const task = await pendingFor(command);
    expect((await decide('claude', task.id, 'deny')).status).toBe(403);
    expect((await decide('person', task.id, 'deny', { note: 'not on main' })).status).toBe(200);
    expect(await answerOf(answer)).toEqual({
      decision: {
        behavior: 'deny',
        message: `Denied by cli through ctxbus (task ${task.id}): not on main`,
      },
    });
  });

  it("asks about Codex's network request as the command that wants the network, with Codex's description", async () => {
    // What Codex 0.171.0 sent when a sandboxed command reached a host outside the network
    // allowlist (managed network requirements, approval_policy on-request): tool_name Bash, the
    // command that opened the connection, and "network-access <target>" as the description.
    const command = 'curl -sS -m 10 http://blocked-host.example/ ; echo exit=$? # marker n5';
    const captured = parsePermissionInput({
      session_id: '01a226b3-41e0-7973-a7b1-22a0a5cd5513',
      turn_id: '01a226b3-423d-7d33-a7a5-d149174a62ca',
      transcript_path: '/home/dev/.codex/sessions/rollout.jsonl',
      cwd: CWD,
      hook_event_name: 'PermissionRequest',
      model: 'fake-model',
      permission_mode: 'default',
      tool_name: 'Bash',
      tool_input: { command, description: 'network-access http://blocked-host.example:80' },
    });
    expect(captured).not.toBeNull();
    const answer = runPermissionRequest(captured as CodexPermissionInput, context());
    const task = await pendingFor(command);
    // Bound to the command and its directory (the digest); the destination is Codex's words.
    expect(task.approval?.request).toMatchObject({
      argv: [command],
      cwd: CWD,
      tool: 'Bash',
      reason: 'network-access http://blocked-host.example:80',
    });
    const other = await decide('person', task.id, 'approve', { digest: '0'.repeat(64) });
    expect(other.status).toBe(409);
    expect(other.body.error.details.reason).toBe('digest_mismatch');
    await decide('person', task.id, 'approve', { digest: task.approval?.request.digest });
    expect(await answerOf(answer)).toEqual({ decision: { behavior: 'allow' } });
  });

  it('asks about a network request Codex cannot tie to one command as its destination', async () => {
    // Codex's form when no single running command owns the connection.
    const command = 'network-access https://api.example.com:443';
    const answer = runPermissionRequest(
      input(command, { tool_input: { command, description: command } }),
      context(),
    );
    const task = await pendingFor(command);
    await decide('person', task.id, 'deny', { note: 'no calls to that API' });
    expect(await answerOf(answer)).toEqual({
      decision: {
        behavior: 'deny',
        message: `Denied by cli through ctxbus (task ${task.id}): no calls to that API`,
      },
    });
  });

  it("leaves it to Codex's own prompt when nobody answers in time, and closes the request", async () => {
    const command = 'make deploy # marker t3';
    let clock = 0;
    const answer = runPermissionRequest(input(command), context({ now: () => clock }));
    const task = await pendingFor(command);
    clock = 600_001;
    // A change of the task wakes the hook, which finds its time is up.
    await call(fixture.url, 'POST', `/api/tasks/${task.id}/update`, {
      token: fixture.tokens.codex,
      body: { state: 'AUTH_REQUIRED', note: 'still waiting' },
    });
    const output = await answerOf(answer);
    expect(output.decision).toBeUndefined();
    expect(output.systemMessage).toMatch(/nobody on the team answered .* Codex asks you instead/);
    const read = await call(fixture.url, 'GET', `/api/tasks/${task.id}`, {
      token: fixture.tokens.person,
    });
    expect(read.body.task.state).toBe('CANCELED');
    expect((await decide('person', task.id, 'approve')).status).toBe(409);
  });

  it("never allows without the hub: down, refusing or unconfigured, Codex's own prompt decides", async () => {
    const down = await runPermissionRequest(input('ls # down'), {
      hub: permissionHub({ url: 'http://127.0.0.1:9', token: 'x' }, 2_000),
      waitSeconds: 60,
    });
    expect(down.decision).toBeUndefined();
    expect(down.systemMessage).toMatch(/could not ask the team .* Codex asks you instead/);
    const refused = await runPermissionRequest(input('ls # refused'), {
      hub: permissionHub({ url: fixture.url, token: 'not-a-token' }, 2_000),
      waitSeconds: 60,
    });
    expect(refused.decision).toBeUndefined();
    const none = await runPermissionRequest(input('ls # none'), { hub: null, waitSeconds: 60 });
    expect(none).toEqual({ systemMessage: expect.stringContaining('no hub or token') });
  });
});

const HOOK = fileURLToPath(new URL('../plugin/dist/ctxbus-codex-hook.js', import.meta.url));
const built = existsSync(HOOK) ? '' : ' (skipped: the hook is not built: pnpm build)';

describe(`the built hook as Codex runs it${built}`, () => {
  it.skipIf(built !== '')('prints the allow Codex reads once a person approves', async () => {
    const command = 'touch out.txt # marker b4';
    const child = spawn(process.execPath, [HOOK, '--url', fixture.url, '--approval-wait', '120'], {
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        CTXBUS_CODEX_TOKEN: fixture.tokens.codex,
        CTXBUS_CONFIG_DIR: join(CWD, 'none'),
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    child.stdin.end(
      JSON.stringify({
        session_id: 'sess-built',
        turn_id: 'turn-1',
        cwd: CWD,
        hook_event_name: 'PermissionRequest',
        model: 'fake-model',
        permission_mode: 'default',
        tool_name: 'Bash',
        tool_input: { command, description: 'write a file' },
        transcript_path: null,
      }),
    );
    const task = await pendingFor(command);
    await decide('person', task.id, 'approve', { digest: task.approval?.request.digest });
    expect(await waitFor(exited, 'the hook to exit')).toBe(0);
    expect(JSON.parse(stdout)).toEqual({
      hookSpecificOutput: { hookEventName: 'PermissionRequest', decision: { behavior: 'allow' } },
    });
  });

  it.skipIf(built !== '')(
    'prints nothing for a NetworkAccess request (no decision: Codex asks its own user)',
    async () => {
      // Codex's hook schema names this tool; 0.171.0 sends network requests as Bash instead.
      const child = spawn(process.execPath, [HOOK, '--url', fixture.url, '--approval-wait', '60'], {
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          CTXBUS_CODEX_TOKEN: fixture.tokens.codex,
          CTXBUS_CONFIG_DIR: join(CWD, 'none'),
        },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let stdout = '';
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
      });
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      const command = 'network-access https://api.example.com:443 # marker x6';
      child.stdin.end(
        JSON.stringify({
          session_id: 'sess-built',
          turn_id: 'turn-2',
          cwd: CWD,
          hook_event_name: 'PermissionRequest',
          model: 'fake-model',
          permission_mode: 'default',
          tool_name: 'NetworkAccess',
          tool_input: { command, description: command },
          transcript_path: null,
        }),
      );
      expect(await waitFor(exited, 'the hook to exit')).toBe(0);
      expect(stdout).toBe('');
      const asked = await call(fixture.url, 'GET', '/api/tasks?origin=codex', {
        token: fixture.tokens.person,
      });
      expect(
        (asked.body.tasks as WaitingTask[]).some((task) =>
          task.approval?.request.argv[0]?.includes('marker x6'),
        ),
      ).toBe(false);
    },
  );
});
