import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stableId } from '@ctxbus/core/light';
import { mintToken, startHub } from '@ctxbus/hub';
import type { InProcessHub } from '@ctxbus/test-kit/in-process-hub';
import { startInProcessHub } from '@ctxbus/test-kit/in-process-hub';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createClient } from './ctxbus-client.js';
import type { HubItem } from './hub-lite.js';
import { createHubLite } from './hub-lite.js';
import type { PendingResume, SessionOptions } from './session-kernel.js';
import { liteSessionHub, openSession } from './session-kernel.js';

// The session kernel on its own, against a real in-process hub; what every adapter must do on
// it is test/kit's adapter conformance suite, run by each adapter.

let hub: InProcessHub<'codex' | 'web'>;
let token: string;
let other: ReturnType<typeof createClient>;
let stateDir: string;

beforeAll(async () => {
  hub = await startInProcessHub(
    { startHub, mintToken },
    { tokens: { codex: ['acme', 'codex'], web: ['acme', 'web'] } },
  );
  token = hub.tokens.codex;
  other = createClient({ url: hub.url, token: hub.tokens.web });
});
afterAll(() => hub.close());
beforeEach(() => {
  stateDir = mkdtempSync(join(tmpdir(), 'ctxbus-session-kernel-'));
});
afterEach(() => rmSync(stateDir, { recursive: true, force: true }));

function session(overrides: Partial<SessionOptions<HubItem>> = {}) {
  const sessionId = 'sess-1';
  // One state file for the tests' sessions: a sessionId override continues on it.
  return openSession<HubItem>({
    hub: liteSessionHub(
      createHubLite({ url: hub.url, token, timeoutMs: 30_000, runtime: 'codex' }),
    ),
    stateDir,
    stateFile: join(stateDir, 'sessions', `${sessionId}.json`),
    agentId: 'codex',
    sessionId,
    budget: { maxContextTokens: 2_000, maxRecentMessages: 12 },
    message: (item) => ({ id: `#${item.seq}`, sender: item.source.runtime, text: item.title }),
    own: (item) => item.source.runtime === 'codex' && item.source.threadId === sessionId,
    decision: (text) => ({
      id: stableId('codex-decision', sessionId, text),
      type: 'decision',
      title: text,
      source: { threadId: sessionId },
    }),
    checkpoint: 'last-reply',
    fallback: ({ changes }) => changes.map((item) => item.title).join('\n'),
    ...overrides,
  });
}

describe('the session kernel', () => {
  it('takes the bundle on the first look, then the changes since, never its own writes', async () => {
    await other.write({ type: 'decision', title: 'Ship on Tuesdays' });
    const kernel = session();
    const start = await kernel.beforeTurn({ changes: false, bundle: { tokens: 1_000 } });
    expect(start.bundle).toContain('Ship on Tuesdays');
    expect(start.fromHub).toBe(true);
    expect(kernel.state().lastSeenSeq).toBeGreaterThan(0);
    const recorded = await kernel.afterTurn('Done.\nDecision: freeze the schema');
    expect(recorded.delivered).toBe(true);
    await other.write({ type: 'alert', title: 'Staging is down', urgency: 'blocking' });
    const turn = await kernel.beforeTurn({ prompt: 'what changed?' });
    expect(turn.changes.map((item) => item.title)).toEqual(['Staging is down']);
    expect(turn.injection).toContain('Staging is down');
    expect(turn.injection).toContain('Last checkpoint: turn 1: Done.');
    expect(turn.injection).not.toContain('freeze the schema');
    // The chat window: the session's own reply (held: the runtime has it) and the change.
    expect(turn.snapshot?.sourceCounts.messages).toBe(2);
    const quiet = await kernel.beforeTurn({ prompt: 'and now?' });
    expect(quiet.injection).toBe('');
    expect(kernel.state()).toMatchObject({ prompts: 2, turns: 1 });
  });

  it("counts what a turn took from the bus as injected, once, and only what went in (part 13's hook reads)", async () => {
    const codex = createClient({ url: hub.url, token });
    const injected = async (ids: string[]) => {
      const report = await codex.call('contextAnalytics', {
        query: { runtime: 'codex', limit: 100 },
      });
      return ids.map((id) => report.topItems.find((row) => row.item.id === id)?.injected ?? 0);
    };
    const kernel = session({
      budget: { maxContextTokens: 2_000, maxRecentMessages: 2, maxToolSnippetTokens: 400 },
    });
    await kernel.beforeTurn({ changes: false });
    const written = [];
    for (const title of ['Oldest news', 'Older news', 'Newer news', 'Newest news']) {
      written.push((await other.write({ type: 'discovery', title })).items[0]?.id as string);
    }
    const turn = await kernel.beforeTurn({ prompt: 'what changed?' });
    expect(turn.changes).toHaveLength(4);
    // The window holds two messages: the two oldest changes are dropped, not injected.
    expect(turn.injection).not.toContain('Oldest news');
    expect(turn.injection).toContain('Newest news');
    const went = written.filter((id) => kernel.state().injected.includes(id));
    expect(went).toHaveLength(2);
    // Told after the turn; the next turn has nothing left to tell (no double count).
    expect((await kernel.afterTurn('Noted.')).delivered).toBe(true);
    expect(kernel.state().injected).toEqual([]);
    await kernel.beforeTurn({ prompt: 'anything else?' });
    expect(await injected(written)).toEqual(written.map((id) => (went.includes(id) ? 1 : 0)));

    // When the hub does not take the report, the injection waits in the session's state.
    let refuse = true;
    const lite = createHubLite({ url: hub.url, token, timeoutMs: 30_000, runtime: 'codex' });
    const flaky = session({
      hub: {
        ...liteSessionHub(lite),
        reportInjections: async (ids) => {
          if (refuse) throw new Error('the hub is not answering');
          await lite.reportInjections(ids);
        },
      },
    });
    const late = (await other.write({ type: 'alert', title: 'Latest news' })).items[0]?.id ?? '';
    await flaky.beforeTurn({ prompt: 'and now?' });
    await flaky.afterTurn('Seen.');
    expect(flaky.state().injected).toEqual([late]);
    refuse = false;
    await flaky.beforeTurn({ prompt: 'still there?' });
    expect(flaky.state().injected).toEqual([]);
    expect(await injected([late])).toEqual([1]);
  });

  it('tells a model switch once, and an unusable handoff as one notice', async () => {
    const pending: PendingResume[] = [
      { switchSequence: 3, note: 'Continuing from opus on the billing migration.' },
      { switchSequence: 4, problem: 'the checksum does not match' },
    ];
    const resume = {
      pending: (seen: number) => pending.find((entry) => entry.switchSequence > seen) ?? null,
    };
    const kernel = session({ resume });
    const first = await kernel.beforeTurn({ prompt: 'go' });
    expect(first.resume).toBe('Continuing from opus on the billing migration.');
    expect(first.notice).toBeNull();
    const second = await kernel.beforeTurn({ prompt: 'go on' });
    expect(second.resume).toBeNull();
    expect(second.notice).toBe(
      'ctxbus: the model-switch handoff is unusable: the checksum does not match',
    );
    expect((await kernel.beforeTurn({ prompt: 'more' })).notice).toBeNull();
  });

  it("holds seed 002's recent chat: the session's own inbound and outbound messages, oldest trimmed first", async () => {
    const kernel = session({
      budget: { maxContextTokens: 2_000, maxRecentMessages: 4, maxToolSnippetTokens: 400 },
    });
    for (const turn of [1, 2, 3]) {
      await kernel.beforeTurn({ prompt: `question ${turn}` });
      await kernel.afterTurn(`answer ${turn}`);
    }
    await other.write({ type: 'alert', title: 'Staging is down', urgency: 'blocking' });
    const turn = await kernel.beforeTurn({ prompt: 'question 4' });
    // The window holds the 4 newest of 6 own messages + 1 change: oldest dropped first.
    expect(turn.snapshot?.sourceCounts.messages).toBe(4);
    const text = turn.injection;
    // Own messages are in the runtime's transcript: the injection carries only the news.
    expect(text).toContain('Staging is down');
    expect(text).not.toContain('question 3');
    expect(text).not.toContain('→ codex');
    expect(kernel.state().chat.map((entry) => [entry.direction, entry.text])).toEqual([
      ['inbound', 'question 1'],
      ['outbound', 'answer 1'],
      ['inbound', 'question 2'],
      ['outbound', 'answer 2'],
      ['inbound', 'question 3'],
      ['outbound', 'answer 3'],
      ['inbound', 'question 4'],
    ]);
    // A new session on the same state file starts its own chat.
    const next = session({ sessionId: 'sess-2' });
    await next.beforeTurn({ prompt: 'fresh' });
    expect(next.state().chat.map((entry) => entry.text)).toEqual(['fresh']);
  });

  it('gives tool results to source 4, raw within maxToolSnippetTokens and summaries beyond', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'ctxbus-kernel-data-'));
    try {
      const kernel = session({
        budget: { maxContextTokens: 4_000, maxRecentMessages: 12, maxToolSnippetTokens: 100 },
        turnLog: { dataDir, snapshots: true },
      });
      await kernel.beforeTurn({ prompt: 'run the tests' });
      kernel.noteTool({ id: 'call-1', tool: 'Bash', output: `${'old line\n'.repeat(40)}done` });
      kernel.noteTool({ id: 'call-2', tool: 'Bash', output: '12 tests passed' });
      kernel.noteTool({ id: 'call-3', tool: 'Read', output: '', error: 'no such file' });
      await kernel.afterTurn('Ran them.');
      const turn = await kernel.beforeTurn({ prompt: 'and?' });
      expect(turn.snapshot?.sourceCounts.toolSnippets).toBe(3);
      const file = join(dataDir, 'agents', 'codex', 'context', 'sess-1.jsonl');
      const record = JSON.parse(readFileSync(file, 'utf8').trim().split('\n').at(-1) as string);
      expect(record.input.budgets.maxToolSnippetTokens).toBe(100);
      expect(
        record.trace.parts
          .filter((part: { source: string }) => part.source === 'toolSnippets')
          .map((part: { id: string; mode: string }) => [part.id, part.mode]),
      ).toEqual([
        ['call-1', 'summary'],
        ['call-2', 'full'],
        ['call-3', 'full'],
      ]);
      expect(record.input.sources.toolSnippets[0].summary).toContain('41 lines');
      expect(record.input.sources.toolSnippets[2].output).toContain('error: no such file');
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('injects the last good bundle, marked stale with its age, when the hub stops answering', async () => {
    await other.write({ type: 'decision', title: 'Bundle to remember' });
    let clock = new Date('2026-11-28T10:00:00Z');
    const now = () => clock;
    const good = session({ now });
    await good.beforeTurn({ prompt: 'hi', bundle: { tokens: 1_000 } });
    await good.afterTurn('Noted.');
    clock = new Date('2026-11-28T10:12:30Z');
    const dead = createHubLite({
      url: 'http://127.0.0.1:1',
      token,
      timeoutMs: 2_000,
      runtime: 'codex',
    });
    const down = session({ now, hub: liteSessionHub(dead) });
    const turn = await down.beforeTurn({ prompt: 'still there?' });
    expect(turn.fromHub).toBe(false);
    expect(turn.stale).toMatchObject({ age: '12 min ago' });
    expect(turn.notice).toContain('hub unreachable');
    expect(turn.injection).toContain(
      'shared context from 12 min ago; the hub is unreachable, so it may be out of date',
    );
    expect(turn.injection).toContain('Bundle to remember');
    expect(turn.injection).toContain('Last checkpoint: turn 1: Noted.');
    // Later turns of the same outage that ask for no bundle stay quiet.
    expect((await down.beforeTurn({ prompt: 'and?' })).injection).toBe('');
    // A hub that refuses the token (401) is not an outage to paper over.
    const refused = createHubLite({
      url: hub.url,
      token: 'ctxbus_nope',
      timeoutMs: 2_000,
      runtime: 'codex',
    });
    const denied = session({
      now,
      hub: { ...liteSessionHub(refused), cacheKey: liteSessionHub(dead).cacheKey as string },
      sessionId: 'sess-3',
    });
    const refusedTurn = await denied.beforeTurn({ prompt: 'x', bundle: { tokens: 1_000 } });
    expect(refusedTurn.stale).toBeNull();
    expect(refusedTurn.injection).not.toContain('Bundle to remember');
  });

  it('stays cold-start cheap: the built subpath loads neither zod nor ky', () => {
    const dist = new URL('../dist/', import.meta.url);
    const seen = new Set<string>();
    const imports = (file: string): string[] => {
      if (seen.has(file)) return [];
      seen.add(file);
      const text = readFileSync(new URL(file, dist), 'utf8');
      const specifiers = [...text.matchAll(/from\s*"([^"]+)"/g)].map((match) => match[1] as string);
      return specifiers.flatMap((specifier) =>
        specifier.startsWith('./') ? imports(specifier.slice(2)) : [specifier],
      );
    };
    const packages = new Set(imports('session.js'));
    expect([...packages].filter((name) => !name.startsWith('node:')).sort()).toEqual([
      '@ctxbus/core/light',
    ]);
  });
});
