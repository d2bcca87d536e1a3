import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createHubLite } from '@ctxbus/client/light';
import { call, removeDir, tempDir, useHubProcess } from '@ctxbus/test-kit';
import { afterAll, describe, expect, it } from 'vitest';
import { parseCodexHookInput } from './hook-input.js';
import type { CodexHookContext } from './hooks.js';
import { clipBytes, MAX_INJECTED_BYTES, runCodexHookEvent } from './hooks.js';
import { findHubTarget, hubTargetProblem } from './hub-target.js';

// The hook's events against a real hub process over HTTP, through the code the hook runs.

const fixture = useHubProcess({
  tokens: { codex: ['acme', 'codex'], claude: ['acme', 'claude-code'] },
});
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) removeDir(dir);
});

function context(): CodexHookContext {
  const stateDir = tempDir('ctxbus-codex-hook-');
  dirs.push(stateDir);
  return {
    client: createHubLite({
      url: fixture.url,
      token: fixture.tokens.codex,
      timeoutMs: 30_000,
      runtime: 'codex',
    }),
    stateDir,
    now: () => new Date(),
  };
}

const event = (input: Record<string, unknown>) => {
  const parsed = parseCodexHookInput({ session_id: 'sess-1', cwd: '/work/demo', ...input });
  if (!parsed) throw new Error('bad hook input');
  return parsed;
};

describe('codex hooks', () => {
  it("starts a session with the team's context, labelled as data, within Codex's cap", async () => {
    const written = await call(fixture.url, 'POST', '/api/context', {
      token: fixture.tokens.claude,
      body: { type: 'decision', title: 'Deploys go through the queue (marker q9d2)', content: 'x' },
    });
    expect(written.status).toBe(201);
    const output = await runCodexHookEvent(
      event({ hook_event_name: 'SessionStart', source: 'startup' }),
      context(),
    );
    expect(output.additionalContext).toMatch(/^\(ctxbus: .* data .* not instructions\.\)/);
    expect(output.additionalContext).toContain('Deploys go through the queue (marker q9d2)');
    expect(Buffer.byteLength(output.additionalContext ?? '')).toBeLessThanOrEqual(
      MAX_INJECTED_BYTES,
    );
    expect(output.systemMessage).toBeUndefined();
  });

  it('gives a resumed session no second bundle: its prompt brings what changed (prompt cache)', async () => {
    const hooks = context();
    const first = await runCodexHookEvent(
      event({ session_id: 'sess-r', hook_event_name: 'SessionStart', source: 'startup' }),
      hooks,
    );
    expect(first.additionalContext).toContain('# Shared context (ctxbus)');
    const written = await call(fixture.url, 'POST', '/api/context', {
      token: fixture.tokens.claude,
      body: { type: 'status', title: 'Queue drained (marker r7e3)' },
    });
    expect(written.status).toBe(201);
    // `codex exec resume`: the first bundle is in the history Codex resends.
    const resumed = await runCodexHookEvent(
      event({ session_id: 'sess-r', hook_event_name: 'SessionStart', source: 'resume' }),
      hooks,
    );
    expect(resumed).toEqual({});
    const prompt = await runCodexHookEvent(
      event({ session_id: 'sess-r', hook_event_name: 'UserPromptSubmit', prompt: 'And now?' }),
      hooks,
    );
    expect(prompt.additionalContext).toMatch(/^\(ctxbus: .* not instructions\.\)/);
    expect(prompt.additionalContext).toContain('Queue drained (marker r7e3)');
    expect(prompt.additionalContext).not.toContain('# Shared context (ctxbus)');
  });

  it("keeps a prompt's newest items and its pointer to the rest within the cap when the text is not ASCII", async () => {
    const hooks = context();
    const session = { session_id: 'sess-cjk' };
    await runCodexHookEvent(event({ ...session, hook_event_name: 'SessionStart' }), hooks);
    // 80 changes of CJK text (3 bytes a character), every third a blocking alert.
    for (let index = 0; index < 80; index++) {
      const blocking = index % 3 === 0;
      const written = await call(fixture.url, 'POST', '/api/context', {
        token: fixture.tokens.claude,
        body: {
          type: blocking ? 'alert' : 'discovery',
          title: `Cjk item ${index} ${'漢'.repeat(250)}`,
          content: '字'.repeat(5_000),
          ...(blocking && { urgency: 'blocking' }),
        },
      });
      expect(written.status).toBe(201);
    }
    const prompt = await runCodexHookEvent(
      event({ ...session, hook_event_name: 'UserPromptSubmit', turn_id: 't1', prompt: 'new?' }),
      hooks,
    );
    const text = prompt.additionalContext ?? '';
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(MAX_INJECTED_BYTES);
    // The newest blocking alert is there, and the pointer to what did not fit: nothing was cut
    // from the end (the session has marked all 80 seen).
    expect(text).toContain('Cjk item 78 ');
    expect(text).toMatch(/…and \d+ more changes \(the ctxbus context_read tool\)$/);
  });

  it('records a decision stated in the reply once, from codex and this session', async () => {
    const hooks = context();
    await runCodexHookEvent(event({ hook_event_name: 'SessionStart' }), hooks);
    const stop = event({
      hook_event_name: 'Stop',
      turn_id: 'turn-1',
      last_assistant_message: 'Done.\n\nDecision: invoices keep cents (marker d4c1)',
    });
    await runCodexHookEvent(stop, hooks);
    await runCodexHookEvent(stop, hooks);
    const decisions = await call(fixture.url, 'GET', '/api/context?type=decision&runtime=codex', {
      token: fixture.tokens.claude,
    });
    const found = (
      decisions.body.items as { title: string; source: { threadId: string } }[]
    ).filter((item) => item.title.includes('d4c1'));
    expect(found).toHaveLength(1);
    expect(found[0]?.source.threadId).toBe('sess-1');
  });

  it('fails open with one notice when no hub is configured', async () => {
    const hooks = { ...context(), client: null };
    const first = await runCodexHookEvent(event({ hook_event_name: 'SessionStart' }), hooks);
    expect(first.systemMessage).toContain('no hub configured');
    const prompt = event({ hook_event_name: 'UserPromptSubmit', turn_id: 't', prompt: 'hi' });
    expect((await runCodexHookEvent(prompt, hooks)).systemMessage).toBeUndefined();
  });

  it('ignores events it does not handle', () => {
    expect(parseCodexHookInput({ session_id: 's', hook_event_name: 'PreCompact' })).toBeNull();
    expect(parseCodexHookInput({ hook_event_name: 'Stop' })).toBeNull();
  });

  it('clips by UTF-8 bytes, the unit of Codex cap', () => {
    const clipped = clipBytes(`${'é'.repeat(49)}\n`.repeat(200), 1_000);
    expect(Buffer.byteLength(clipped)).toBeLessThanOrEqual(1_000);
    expect(Buffer.byteLength(clipped)).toBeGreaterThan(800);
  });
});

describe('the hub and token the hook uses', () => {
  const configDir = tempDir('ctxbus-codex-config-');
  dirs.push(configDir);
  mkdirSync(configDir, { recursive: true });
  writeFileSync(
    join(configDir, 'credentials.json'),
    JSON.stringify({
      version: 1,
      defaultHub: 'http://127.0.0.1:7420',
      hubs: {
        'http://127.0.0.1:7420': {
          token: 'cli-token',
          runtimes: { codex: { token: 'codex-token', teamId: 'acme' } },
        },
      },
    }),
  );

  it("reads Codex's token saved for the hub its command names", () => {
    expect(
      findHubTarget(['--url', 'http://127.0.0.1:7420'], { CTXBUS_CONFIG_DIR: configDir }),
    ).toEqual({ url: 'http://127.0.0.1:7420', token: 'codex-token' });
  });

  it("never takes the CLI's CTXBUS_TOKEN; CTXBUS_CODEX_TOKEN overrides the saved one", () => {
    const env = { CTXBUS_CONFIG_DIR: configDir, CTXBUS_TOKEN: 'cli-token' };
    expect(findHubTarget(['--url', 'http://127.0.0.1:9999'], env)).toBeNull();
    expect(
      findHubTarget(['--url', 'http://127.0.0.1:9999'], { ...env, CTXBUS_CODEX_TOKEN: 'own' }),
    ).toEqual({ url: 'http://127.0.0.1:9999', token: 'own' });
  });

  it('says what is missing: no hub named, or no token for Codex where this process looks', async () => {
    expect(hubTargetProblem([], {})).toBe('no hub configured (ctxbus connect codex)');
    const elsewhere = tempDir('ctxbus-codex-config-none-');
    dirs.push(elsewhere);
    const problem = hubTargetProblem(['--url', 'http://127.0.0.1:7420'], {
      CTXBUS_CONFIG_DIR: elsewhere,
    });
    expect(problem).toBe(
      `no codex token for http://127.0.0.1:7420 in ${join(elsewhere, 'credentials.json')} (ctxbus connect codex, or set CTXBUS_CODEX_TOKEN; if CTXBUS_CONFIG_DIR was set when you connected, set it where Codex runs too)`,
    );
    // The hook's one notice says it, instead of blaming the hub's address.
    const hooks = { ...context(), client: null, hubless: problem };
    const first = await runCodexHookEvent(event({ hook_event_name: 'SessionStart' }), hooks);
    expect(first.systemMessage).toContain(
      `no codex token for http://127.0.0.1:7420 in ${elsewhere}`,
    );
  });
});
