import {
  copyFileSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from '@ctxbus/client';
import { createHubLite } from '@ctxbus/client/light';
import { pendingCount } from '@ctxbus/client/outbox';
import { buildTurnContext, estimateTokenCounter } from '@ctxbus/core/light';
import { handoffPaths, heartbeat, switchModel } from '@ctxbus/handoff';
import { mintToken, startHub } from '@ctxbus/hub';
import type { InProcessHub } from '@ctxbus/test-kit/in-process-hub';
import { startInProcessHub } from '@ctxbus/test-kit/in-process-hub';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { HookInput } from './hook-input.js';
import { parseHookInput } from './hook-input.js';
import type { HookContext } from './hooks.js';
import { MAX_INJECTED_CHARS, PLUGIN_TOOL_PREFIX, runHookEvent } from './hooks.js';
import { rememberDelivered } from './live-files.js';
import { readSessionState } from './session-state.js';

let hub: InProcessHub<'code' | 'chat'>;
let token: string;
let other: ReturnType<typeof createClient>;
let stateDir: string;

beforeAll(async () => {
  hub = await startInProcessHub(
    { startHub, mintToken },
    { tokens: { code: ['acme', 'claude-code'], chat: ['acme', 'openclaw'] } },
  );
  token = hub.tokens.code;
  other = createClient({ url: hub.url, token: hub.tokens.chat });
});

afterAll(() => hub.close());

beforeEach(() => {
  stateDir = mkdtempSync(join(tmpdir(), 'ctxbus-hook-state-'));
});
afterEach(() => rmSync(stateDir, { recursive: true, force: true }));

const context = (url = hub.url): HookContext => ({
  client: createHubLite({ url, token, timeoutMs: 30_000, runtime: 'claude-code' }),
  stateDir,
  now: () => new Date(),
});
const event = (input: Record<string, unknown>): HookInput => {
  const parsed = parseHookInput({ session_id: 'sess-1', cwd: '/work/myproject', ...input });
  if (!parsed) throw new Error('bad test input');
  return parsed;
};
const deadHub = 'http://127.0.0.1:9';

describe('SessionStart', () => {
  it('injects the shared context, within the 10,000-character cap', async () => {
    await other.write({
      type: 'decision',
      title: 'Ship on Tuesdays',
      content: 'Fewer weekend incidents.',
    });
    const output = await runHookEvent(
      event({ hook_event_name: 'SessionStart', source: 'startup' }),
      context(),
    );
    expect(output.additionalContext).toContain('# Shared context (ctxbus)');
    expect(output.additionalContext).toContain('Ship on Tuesdays');
    expect(output.additionalContext).toContain('mcp__ctxbus__context_write');
    expect(output.systemMessage).toBeUndefined();
    expect(readSessionState(stateDir, 'sess-1').lastSeenSeq).toBeGreaterThan(0);
  });

  it("names the MCP tools as the plugin's server exposes them when run as the plugin's hook", async () => {
    const plugin: HookContext = { ...context(), toolPrefix: PLUGIN_TOOL_PREFIX };
    await other.write({ type: 'decision', title: 'Ship on Tuesdays' });
    const start = await runHookEvent(
      event({ hook_event_name: 'SessionStart', source: 'startup' }),
      plugin,
    );
    expect(start.additionalContext).toContain('mcp__plugin_ctxbus_ctxbus__context_write');
    expect(start.additionalContext).toContain('mcp__plugin_ctxbus_ctxbus__memory_write');
    expect(start.additionalContext).not.toContain('mcp__ctxbus__');
    // More changes than the turn context lists: the pointer to the rest names the same server.
    for (let n = 0; n < 15; n++) await other.write({ type: 'discovery', title: `Finding ${n}` });
    const prompt = await runHookEvent(
      event({ hook_event_name: 'UserPromptSubmit', prompt: 'go' }),
      plugin,
    );
    expect(prompt.additionalContext).toMatch(
      /more changes \(mcp__plugin_ctxbus_ctxbus__context_read\)/,
    );
    expect(prompt.additionalContext).not.toContain('mcp__ctxbus__');
  });

  it("asks for the seed's ~4K budget; on a busy team, compacts to the cap and points to the rest", async () => {
    // A team of its own, so the crowd stays out of the other tests' turns.
    const mint = async (runtime: string) => (await hub.mint(runtime, 'busy')).token;
    const writer = createClient({ url: hub.url, token: await mint('openclaw') });
    const long = 'a long paragraph of reasoning about the architecture '.repeat(40);
    await writer.write(
      Array.from({ length: 60 }, (_, index) => ({
        type: 'decision' as const,
        title: `Decision ${index} with a long title that takes space in the context`,
        content: long,
      })),
    );
    const busy: HookContext = {
      ...context(),
      client: createHubLite({
        url: hub.url,
        token: await mint('claude-code'),
        timeoutMs: 30_000,
        runtime: 'claude-code',
      }),
    };
    const output = await runHookEvent(event({ hook_event_name: 'SessionStart' }), busy);
    const text = output.additionalContext ?? '';
    expect(text.length).toBeGreaterThan(MAX_INJECTED_CHARS * 0.5);
    expect(text.length).toBeLessThanOrEqual(MAX_INJECTED_CHARS);
    expect(text.startsWith('# Shared context (ctxbus)')).toBe(true);
    expect(text).toContain(
      'the MCP resource team-context://current holds all of it, at 4,000 tokens',
    );
    // Compacted, not cut: ten decisions where four fit in full, the newest ones in full.
    expect(text).toContain('Decision 50 with a long title');
    expect(text).toContain(
      '**Decision 59 with a long title that takes space in the context** _(from openclaw',
    );
    expect(text).toContain('mcp__ctxbus__context_write');
  });

  it('gives a resumed session no second bundle: its prompt brings what changed (prompt cache)', async () => {
    await other.write({ type: 'decision', title: 'Freeze the schema (marker r1a0)' });
    const first = await runHookEvent(
      event({ hook_event_name: 'SessionStart', source: 'startup' }),
      context(),
    );
    expect(first.additionalContext).toContain('Freeze the schema (marker r1a0)');
    await other.write({ type: 'status', title: 'Schema migrated (marker r2b1)' });
    // `claude --resume`: the first bundle is in the transcript Claude Code resends.
    const resumed = await runHookEvent(
      event({ hook_event_name: 'SessionStart', source: 'resume' }),
      context(),
    );
    expect(resumed).toEqual({});
    const prompt = await runHookEvent(
      event({ hook_event_name: 'UserPromptSubmit', prompt: 'What changed?' }),
      context(),
    );
    expect(prompt.additionalContext).toContain('Schema migrated (marker r2b1)');
    expect(prompt.additionalContext).not.toContain('# Shared context (ctxbus)');
    // A resumed session this machine never saw (its state is elsewhere) gets the bundle.
    const unknown = await runHookEvent(
      event({ session_id: 'sess-elsewhere', hook_event_name: 'SessionStart', source: 'resume' }),
      context(),
    );
    expect(unknown.additionalContext).toContain('# Shared context (ctxbus)');
  });

  it('fails open with one notice per session when the hub is down', async () => {
    const first = await runHookEvent(event({ hook_event_name: 'SessionStart' }), context(deadHub));
    expect(first.additionalContext).toBeUndefined();
    expect(first.systemMessage).toMatch(/^ctxbus: hub unreachable \(http:\/\/127\.0\.0\.1:9\)/);
    const again = await runHookEvent(
      event({ hook_event_name: 'UserPromptSubmit', prompt: 'x' }),
      context(deadHub),
    );
    expect(again).toEqual({});
    const unconfigured = await runHookEvent(
      event({ session_id: 'sess-2', hook_event_name: 'SessionStart' }),
      {
        client: null,
        stateDir,
        now: () => new Date(),
      },
    );
    expect(unconfigured.systemMessage).toMatch(/no hub configured/);
  });
});

describe('UserPromptSubmit', () => {
  it('injects only what changed since the session last looked, the most urgent nearest the prompt', async () => {
    await runHookEvent(event({ hook_event_name: 'SessionStart' }), context());
    const nothing = await runHookEvent(
      event({ hook_event_name: 'UserPromptSubmit', prompt: 'hi' }),
      context(),
    );
    expect(nothing).toEqual({});
    // The blocking alert is the older one: it must still be kept longest, next to the prompt.
    await other.write({ type: 'alert', title: 'Staging database is down', urgency: 'blocking' });
    await other.write({ type: 'discovery', title: 'Docs moved to /handbook' });
    const update = await runHookEvent(
      event({ hook_event_name: 'UserPromptSubmit', prompt: 'go' }),
      context(),
    );
    const lines = update.additionalContext?.split('\n') ?? [];
    expect(lines[0]).toMatch(/since your last prompt/);
    expect(lines).toContain('## Recent chat');
    const chat = lines.filter((line) => line.startsWith('- ← openclaw: '));
    expect(chat).toHaveLength(2);
    expect(chat[0]).toContain('Docs moved to /handbook');
    expect(chat[1]).toContain('[blocking] **Staging database is down**');
    expect(update.additionalContext).not.toContain('go');
    const seen = await runHookEvent(
      event({ hook_event_name: 'UserPromptSubmit', prompt: 'again' }),
      context(),
    );
    expect(seen).toEqual({});
  });

  it('adds nothing for a live push Claude Code queued as a prompt, and never repeats a pushed item later', async () => {
    await runHookEvent(event({ hook_event_name: 'SessionStart' }), context());
    const pushed = await other.write({
      type: 'alert',
      title: 'Pushed blocker (marker p4)',
      urgency: 'blocking',
    });
    await other.write({ type: 'discovery', title: 'Not pushed (marker n5)' });
    const item = pushed.items[0];
    if (!item) throw new Error('no item written');
    rememberDelivered(stateDir, 'sess-1', { seqs: [], ids: [] }, item);
    const before = readSessionState(stateDir, 'sess-1');
    const live = await runHookEvent(
      event({
        hook_event_name: 'UserPromptSubmit',
        prompt: '[ctxbus live push] A blocking item from the runtime "openclaw" ...',
      }),
      context(),
    );
    expect(live).toEqual({});
    expect(readSessionState(stateDir, 'sess-1')).toEqual(before);
    const next = await runHookEvent(
      event({ hook_event_name: 'UserPromptSubmit', prompt: 'go on' }),
      context(),
    );
    expect(next.additionalContext).toContain('marker n5');
    expect(next.additionalContext).not.toContain('marker p4');
  });

  it("records each prompt's turn context when snapshots are on, a hash a rebuild proves", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'ctxbus-hook-data-'));
    try {
      const withLog = (snapshots: boolean): HookContext => ({
        ...context(),
        turnLog: { dataDir, snapshots },
      });
      // A tool call as Claude Code's PostToolUse reports it: Bash's tool_response.
      await runHookEvent(
        event({
          session_id: 'sess-log',
          hook_event_name: 'PostToolUse',
          tool_name: 'Bash',
          tool_input: { command: 'pnpm migrate' },
          tool_response: { stdout: 'migrated 120 invoices', stderr: '', interrupted: false },
        }),
        withLog(true),
      );
      await runHookEvent(
        event({
          session_id: 'sess-log',
          hook_event_name: 'Stop',
          last_assistant_message: 'Migrated the invoices.',
        }),
        withLog(true),
      );
      await other.write({ type: 'discovery', title: 'Invoices need a backfill' });
      const output = await runHookEvent(
        event({
          session_id: 'sess-log',
          hook_event_name: 'UserPromptSubmit',
          prompt: 'Backfill them.',
        }),
        withLog(true),
      );
      expect(output.additionalContext).toContain('Invoices need a backfill');
      expect(output.additionalContext).toContain('Last checkpoint: turn 1: Migrated the invoices.');
      const file = join(dataDir, 'agents', 'claude-code', 'context', 'sess-log.jsonl');
      const records = readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line));
      expect(records).toHaveLength(1);
      const [record] = records;
      expect(record.snapshot).toMatchObject({ sessionId: 'sess-log', turnId: 'prompt-1' });
      // The earlier tests' writes on the shared hub can fill the 12-message window (the oldest
      // left out, reason `window`): the snapshot says trimmed exactly when the trace has actions.
      expect(record.snapshot.trimmed).toBe(record.trace.trim.actions.length > 0);
      expect(record.trace.trim.trimmed).toBe(record.snapshot.trimmed);
      expect(record.input.sources.currentInput.text).toBe('Backfill them.');
      // Seed 002's chat window holds the session's own reply (outbound) beside the bus's news,
      // and the tool result reaches source 4; both are in Claude Code's transcript already, so
      // the injection leaves them out.
      const chat = record.input.sources.recentMessages as { direction: string; text: string }[];
      expect(chat[0]).toMatchObject({ direction: 'outbound', text: 'Migrated the invoices.' });
      expect(
        chat.some((m) => m.direction === 'inbound' && m.text.includes('Invoices need a backfill')),
      ).toBe(true);
      expect(record.input.sources.toolSnippets).toMatchObject([
        { tool: 'Bash', output: 'migrated 120 invoices' },
      ]);
      expect(record.snapshot.sourceCounts).toMatchObject({ memoryPointers: 0, toolSnippets: 1 });
      expect(output.additionalContext).not.toContain('migrated 120 invoices');
      const rebuilt = buildTurnContext(record.input, estimateTokenCounter, 0);
      expect(rebuilt.contextHash).toBe(record.snapshot.contextHash);
      await runHookEvent(
        event({
          session_id: 'sess-log',
          hook_event_name: 'UserPromptSubmit',
          prompt: 'Off the record.',
        }),
        withLog(false),
      );
      expect(readFileSync(file, 'utf8').trim().split('\n')).toHaveLength(1);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('fails open when the turn context cannot be built: the plain list, the failure reported and audited', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'ctxbus-hook-data-'));
    try {
      const broken: HookContext = {
        ...context(),
        turnLog: {
          dataDir,
          snapshots: true,
          counter: {
            name: 'estimate-3.5',
            count: () => {
              throw new Error('the counter broke');
            },
          },
        },
      };
      await other.write({ type: 'alert', title: 'Payments are failing', urgency: 'blocking' });
      const output = await runHookEvent(
        event({ session_id: 'sess-broken', hook_event_name: 'UserPromptSubmit', prompt: 'x' }),
        broken,
      );
      expect(output.additionalContext).toMatch(/^## New in the shared context/);
      expect(output.additionalContext).toContain('[blocking] **Payments are failing**');
      expect(output.systemMessage).toMatch(
        /^ctxbus: context_build_error \(turn failed\): the counter broke; next: /,
      );
      const audit = join(dataDir, 'agents', 'claude-code', 'audit', 'sess-broken.jsonl');
      expect(JSON.parse(readFileSync(audit, 'utf8'))).toMatchObject({
        code: 'context_build_error',
        status: 'failed',
        sessionId: 'sess-broken',
        turnId: 'prompt-1',
        message: 'the counter broke',
      });
      expect(readdirSync(join(dataDir, 'agents', 'claude-code'))).toEqual(['audit']);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('the model-switch handoff (seed 003)', () => {
  it('the first prompt after a switch starts with whose work it continues, once per switch', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'ctxbus-hook-handoff-'));
    try {
      const paths = handoffPaths(workspace);
      const inWorkspace = (input: Record<string, unknown>) => event({ cwd: workspace, ...input });
      await heartbeat(paths, {
        model: 'opus',
        task: { description: 'Billing migration' },
        nextSteps: ['Backfill old invoices'],
      });
      const before = await runHookEvent(
        inWorkspace({ hook_event_name: 'SessionStart' }),
        context(),
      );
      expect(before.additionalContext).not.toContain('Continuing from');
      await switchModel(paths, { to: 'sonnet', reason: 'opus at 95%' });

      // Even with the hub down: the note is local, first, above the cached shared context.
      const first = await runHookEvent(
        inWorkspace({ hook_event_name: 'UserPromptSubmit', prompt: 'go on' }),
        context(deadHub),
      );
      expect(first.additionalContext).toMatch(
        /^## Model switch \(ctxbus handoff\)\nContinuing from opus's work on Billing migration \(switched: opus at 95%\)\.\nNext steps:\n- Backfill old invoices\n\n## Your turn context \(ctxbus\): the hub is unreachable; shared context from /,
      );
      // Told once: not on the next prompt, nor in another session.
      const again = await runHookEvent(
        inWorkspace({ hook_event_name: 'UserPromptSubmit', prompt: 'more' }),
        context(),
      );
      expect(again.additionalContext ?? '').not.toContain('Continuing from');
      const otherSession = await runHookEvent(
        inWorkspace({ session_id: 'sess-9', hook_event_name: 'SessionStart' }),
        context(),
      );
      expect(otherSession.additionalContext).not.toContain('Continuing from');

      // The next switch is told, first, above the shared context.
      await switchModel(paths, { to: 'opus', reason: 'limit reset' });
      const next = await runHookEvent(
        inWorkspace({ session_id: 'sess-9', hook_event_name: 'SessionStart' }),
        context(),
      );
      expect(next.additionalContext).toMatch(
        /^## Model switch \(ctxbus handoff\)\nContinuing from sonnet's work on Billing migration \(switched: limit reset\)\.\n[\s\S]*\n\n[\s\S]*mcp__ctxbus__context_write/,
      );

      // A tampered handoff: one notice, the turn goes on.
      await switchModel(paths, { to: 'codex', reason: 'x' });
      writeFileSync(
        paths.handoff,
        readFileSync(paths.handoff, 'utf8').replace('Billing migration', 'Something else'),
      );
      const damaged = await runHookEvent(
        inWorkspace({ hook_event_name: 'UserPromptSubmit', prompt: 'y' }),
        context(),
      );
      expect(damaged.systemMessage).toBe(
        `ctxbus: the model-switch handoff is unusable: ${paths.handoff} fails its checksum`,
      );
    } finally {
      rmSync(workspace, { recursive: true, force: true });
    }
  });
});

describe('Stop, PostToolUse and SessionEnd', () => {
  it('records explicit decisions and one live status per session', async () => {
    await runHookEvent(
      event({
        hook_event_name: 'PostToolUse',
        tool_name: 'Edit',
        tool_input: { file_path: '/work/myproject/src/a.ts' },
      }),
      context(),
    );
    await runHookEvent(
      event({ hook_event_name: 'PostToolUse', tool_name: 'Read', tool_input: { file_path: '/x' } }),
      context(),
    );
    const message =
      'I refactored the store.\n\nDecision: keep SQL behind the Store contract\n- **Decision:** pin TypeScript 6';
    await runHookEvent(
      event({ hook_event_name: 'Stop', last_assistant_message: message }),
      context(),
    );
    await runHookEvent(
      event({ hook_event_name: 'Stop', last_assistant_message: 'Second turn done.' }),
      context(),
    );
    const reader = createClient({ url: hub.url, token });
    const decisions = (await reader.list({ type: 'decision', tags: 'claude-code' })).items.map(
      (item) => item.title,
    );
    expect(decisions).toEqual(
      expect.arrayContaining(['keep SQL behind the Store contract', 'pin TypeScript 6']),
    );
    const statuses = (await reader.list({ key: 'sessions/claude-code/sess-1' })).items;
    expect(statuses).toHaveLength(1);
    expect(statuses[0]?.content).toContain('Second turn done.');
    expect(statuses[0]?.content).toContain('/work/myproject/src/a.ts');
    expect(statuses[0]?.title).toBe('Claude Code session in myproject');
    await runHookEvent(event({ hook_event_name: 'SessionEnd', reason: 'exit' }), context());
    const ended = (await reader.list({ key: 'sessions/claude-code/sess-1' })).items;
    expect(ended[0]?.content).toMatch(/^Session ended \(exit\)/);
    // A session without a turn (`claude mcp list`) has no status line to close: none is written.
    await runHookEvent(
      event({ session_id: 'no-turn', hook_event_name: 'SessionEnd', reason: 'other' }),
      context(),
    );
    expect((await reader.list({ key: 'sessions/claude-code/no-turn' })).items).toEqual([]);
  });

  it('queues writes while the hub is down and sends each exactly once later', async () => {
    const session = { session_id: 'offline-1' };
    await runHookEvent(
      event({
        ...session,
        hook_event_name: 'Stop',
        last_assistant_message: 'Decision: use the outbox',
      }),
      context(deadHub),
    );
    await runHookEvent(
      event({ ...session, hook_event_name: 'SessionEnd', reason: 'logout' }),
      context(deadHub),
    );
    expect(pendingCount(stateDir)).toBe(3);
    // Keep a copy of the queue, as if a crash happened after the hub stored it.
    const queued = readdirSync(stateDir).find((name) => name === 'outbox.jsonl') ?? '';
    copyFileSync(join(stateDir, queued), join(stateDir, 'replay.copy'));
    await runHookEvent(
      event({ session_id: 'online-1', hook_event_name: 'UserPromptSubmit', prompt: 'x' }),
      context(),
    );
    expect(pendingCount(stateDir)).toBe(0);
    copyFileSync(join(stateDir, 'replay.copy'), join(stateDir, 'outbox-replay.sending'));
    await runHookEvent(
      event({ session_id: 'online-1', hook_event_name: 'UserPromptSubmit', prompt: 'y' }),
      context(),
    );
    const reader = createClient({ url: hub.url, token });
    const decisions = (await reader.list({ type: 'decision', limit: 500 })).items.filter(
      (item) => item.title === 'use the outbox',
    );
    expect(decisions).toHaveLength(1);
    const history = (
      await reader.list({ key: 'sessions/claude-code/offline-1', includeSuperseded: true })
    ).items;
    expect(history.map((item) => item.content)).toEqual([
      'Session ended (logout).',
      'Last reply: Decision: use the outbox',
    ]);
  });
});

describe('helpers', () => {
  it('ignores events and inputs it does not handle', () => {
    expect(parseHookInput({ session_id: 's', hook_event_name: 'PreCompact' })).toBeNull();
    expect(parseHookInput({ hook_event_name: 'Stop' })).toBeNull();
    expect(parseHookInput('nonsense')).toBeNull();
  });
});
