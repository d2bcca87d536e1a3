import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hashValue } from '../shared/canonical-hash.js';
import { canonicalJson } from '../shared/canonical-json.js';
import { o200kTokenCounter } from '../shared/tokens.js';
import type { TurnContextInput, TurnMessage, TurnSources } from './turn-context.js';
import {
  buildTurnContext,
  estimateTokenCounter,
  TURN_BUILDER_VERSION,
  tryBuildTurnContext,
  turnContextRecord,
  utf8EstimateTokenCounter,
} from './turn-context.js';
import { turnContextRecordSchema } from './turn-context-schema.js';

const NOW = 1_760_000_000_000;

function message(index: number, kind = 'human'): TurnMessage {
  return {
    id: `m${index}`,
    direction: index % 2 === 0 ? 'inbound' : 'outbound',
    sender: { id: index % 2 === 0 ? 'alice' : 'agent-a', kind },
    text: `message number ${index} about the billing migration and its rollout plan`,
  };
}

function sources(overrides: Partial<TurnSources> = {}): TurnSources {
  return {
    recentMessages: [0, 1, 2, 3, 4, 5].map((index) => message(index)),
    runtimeState: {
      lastCheckpointSummary: 'Invoices table migrated; backfill pending',
      pendingQueueSummary: '2 messages queued from agent-b',
      lastTerminalStatus: 'completed',
    },
    memoryPointers: [
      { id: 'mem1', text: 'workspace/notes/billing.md: the migration plan' },
      { id: 'mem2', text: 'workspace/notes/rollout.md: who signs off' },
    ],
    toolSnippets: [
      {
        id: 't1',
        tool: 'bash',
        output: `npm test\n${'ok '.repeat(60)}\n60 passing`,
        summary: '60 tests passing',
      },
      {
        id: 't2',
        tool: 'read',
        output: `src/billing.ts\n${'line '.repeat(20)}`,
        summary: 'read src/billing.ts (40 lines)',
      },
    ],
    currentInput: {
      id: 'in1',
      sender: { id: 'alice', kind: 'human' },
      text: 'Start the backfill.',
    },
    ...overrides,
  };
}

function input(overrides: Partial<TurnContextInput> = {}): TurnContextInput {
  return {
    agentId: 'main',
    sessionId: 'sess_1',
    turnId: 'turn_1',
    tokenizer: estimateTokenCounter.name,
    sources: sources(),
    budgets: { maxContextTokens: 10_000, maxRecentMessages: 20, maxToolSnippetTokens: 10_000 },
    ...overrides,
  };
}

const budget = (maxContextTokens: number, rest: Partial<TurnContextInput['budgets']> = {}) => ({
  maxContextTokens,
  maxRecentMessages: 20,
  maxToolSnippetTokens: 10_000,
  ...rest,
});

describe('buildTurnContext', () => {
  it('assembles the five sources in the seed order, current input last', () => {
    const built = buildTurnContext(input(), estimateTokenCounter, NOW);
    const titles = built.text.split('\n').filter((line) => line.startsWith('## '));
    expect(titles).toEqual([
      '## Recent chat',
      '## Session state',
      '## Memory',
      '## Tool results',
      '## Current input',
    ]);
    expect(built.text.endsWith('From alice:\nStart the backfill.')).toBe(true);
    expect(built.injection).not.toContain('Start the backfill.');
    expect(built.trim).toMatchObject({ trimmed: false, overBudget: false, actions: [] });
    expect(built.snapshot).toEqual({
      sessionId: 'sess_1',
      turnId: 'turn_1',
      contextHash: built.contextHash,
      sourceCounts: { messages: 6, memoryPointers: 2, toolSnippets: 2 },
      trimmed: false,
      timestampMs: NOW,
    });
    expect(built.contextHash).toMatch(/^ctx_[0-9a-f]{64}$/);
  });

  it('keeps the newest maxRecentMessages and shows tool summaries past maxToolSnippetTokens', () => {
    const built = buildTurnContext(
      input({ budgets: budget(10_000, { maxRecentMessages: 4, maxToolSnippetTokens: 60 }) }),
      estimateTokenCounter,
      NOW,
    );
    expect(built.trim.actions).toEqual([
      { source: 'messages', id: 'm0', action: 'drop', reason: 'window' },
      { source: 'messages', id: 'm1', action: 'drop', reason: 'window' },
      // newest raw output first: t2 fits the 60 tokens, t1 becomes its summary
      { source: 'toolSnippets', id: 't1', action: 'compact', reason: 'tool-cap' },
    ]);
    // The window and the tool cap trimmed the context (seed 002's three bounds), so it says so.
    expect(built.trim.trimmed).toBe(true);
    expect(built.snapshot.trimmed).toBe(true);
    expect(built.text).toContain('bash (summary): 60 tests passing');
    expect(built.text).toContain('src/billing.ts');
  });

  it('says trimmed when any of the three bounds dropped or compacted a line, with the hash unchanged', () => {
    // Within every budget: nothing trimmed.
    const whole = buildTurnContext(input(), estimateTokenCounter, NOW);
    expect(whole.trim).toMatchObject({ trimmed: false, actions: [] });
    expect(whole.snapshot.trimmed).toBe(false);
    // Only maxRecentMessages: the two oldest messages are left out, well within maxContextTokens.
    const window = buildTurnContext(
      input({ budgets: budget(10_000, { maxRecentMessages: 4 }) }),
      estimateTokenCounter,
      NOW,
    );
    expect(window.trim.actions.map((action) => action.reason)).toEqual(['window', 'window']);
    expect(window.trim).toMatchObject({ trimmed: true, overBudget: false });
    expect(window.snapshot).toMatchObject({ trimmed: true, sourceCounts: { messages: 4 } });
    // Only maxToolSnippetTokens: the older raw output shows its summary.
    const toolCap = buildTurnContext(
      input({ budgets: budget(10_000, { maxToolSnippetTokens: 60 }) }),
      estimateTokenCounter,
      NOW,
    );
    expect(toolCap.trim.actions).toEqual([
      { source: 'toolSnippets', id: 't1', action: 'compact', reason: 'tool-cap' },
    ]);
    expect(toolCap.trim.trimmed).toBe(true);
    expect(toolCap.snapshot.trimmed).toBe(true);
    // `trimmed` is not hashed: these are the hashes the builder gave before it said trimmed for
    // the window and the tool cap, so turns recorded then still replay to the same hash.
    expect(window.contextHash).toBe(
      'ctx_386144ddbe75616aee5d38bc842ec6edd2eda554376ca1772d100d2f4e954f4a',
    );
    expect(toolCap.contextHash).toBe(
      'ctx_27d9c2a392dd4c459d33d52616f8f71b000d9e92ae9b2cf36b9df1f68ab77a53',
    );
    // Whatever the bounds: trimmed exactly when the trace lists an action.
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 400 }),
        fc.integer({ min: 0, max: 8 }),
        fc.integer({ min: 0, max: 200 }),
        (max, recent, toolTokens) => {
          const built = buildTurnContext(
            input({
              budgets: budget(max, { maxRecentMessages: recent, maxToolSnippetTokens: toolTokens }),
            }),
            estimateTokenCounter,
            NOW,
          );
          expect(built.trim.trimmed).toBe(built.trim.actions.length > 0);
          expect(built.snapshot.trimmed).toBe(built.trim.trimmed);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('trims oldest chat first, then compacts tool outputs, keeping the input and checkpoint', () => {
    const whole = buildTurnContext(input(), estimateTokenCounter, NOW);
    const chat = whole.parts.filter((part) => part.source === 'messages');
    const chatTokens = chat.reduce((sum, part) => sum + part.tokens, 0);
    // Room for everything but three chat lines: exactly the three oldest go.
    const [first, second] = chat.map((part) => part.tokens);
    const someBudget = whole.totalTokens - (first ?? 0) - (second ?? 0) - 1;
    const some = buildTurnContext(
      input({ budgets: budget(someBudget) }),
      estimateTokenCounter,
      NOW,
    );
    expect(some.trim.actions.map((action) => action.id)).toEqual(['m0', 'm1', 'm2']);
    expect(some.trim).toMatchObject({ trimmed: true, tokensBeforeTrim: whole.totalTokens });
    expect(some.totalTokens).toBeLessThanOrEqual(someBudget);

    // Less room: every chat line goes, then tool outputs are compacted oldest first.
    const tight = buildTurnContext(
      input({ budgets: budget(whole.totalTokens - chatTokens - 20) }),
      estimateTokenCounter,
      NOW,
    );
    expect(tight.trim.actions.map((action) => `${action.action}:${action.id}`)).toEqual([
      'drop:m0',
      'drop:m1',
      'drop:m2',
      'drop:m3',
      'drop:m4',
      'drop:m5',
      'compact:t1',
    ]);
    expect(tight.totalTokens).toBeLessThanOrEqual(whole.totalTokens - chatTokens - 20);

    // No room at all: only the current input and the latest checkpoint survive.
    const none = buildTurnContext(input({ budgets: budget(1) }), estimateTokenCounter, NOW);
    expect(none.parts.filter((part) => part.mode !== 'dropped').map((part) => part.id)).toEqual([
      'lastCheckpointSummary',
      'in1',
    ]);
    expect(none.trim.overBudget).toBe(true);
    expect(none.text).toContain('Last checkpoint: Invoices table migrated');
    expect(none.text).toContain('Start the backfill.');
    expect(none.snapshot.sourceCounts).toEqual({ messages: 0, memoryPointers: 0, toolSnippets: 0 });
    const order = none.trim.actions.map((action) => `${action.action}:${action.id}`);
    expect(order.slice(6)).toEqual([
      'compact:t1',
      'compact:t2',
      'drop:t1',
      'drop:t2',
      'drop:mem2',
      'drop:mem1',
      'drop:lastTerminalStatus',
      'drop:pendingQueueSummary',
    ]);
  });

  it('takes one path for human and agent senders: the same hash and trim', () => {
    const asAgent = sources({
      recentMessages: [0, 1, 2, 3, 4, 5].map((index) => message(index, 'agent')),
      currentInput: {
        id: 'in1',
        sender: { id: 'alice', kind: 'agent' },
        text: 'Start the backfill.',
      },
    });
    for (const max of [10_000, 120, 1]) {
      const human = buildTurnContext(input({ budgets: budget(max) }), estimateTokenCounter, NOW);
      const agent = buildTurnContext(
        input({ sources: asAgent, budgets: budget(max) }),
        estimateTokenCounter,
        NOW,
      );
      expect(agent.contextHash).toBe(human.contextHash);
      expect(agent.trim).toEqual(human.trim);
      expect(agent.text).toBe(human.text);
    }
  });

  it('hashes when read, as it did when built: the same values, keys and JSON', () => {
    const built = buildTurnContext(input(), estimateTokenCounter, NOW);
    // The input of the context hash, spelled out: what every earlier build hashed at once.
    const expected = `ctx_${hashValue({
      builder: TURN_BUILDER_VERSION,
      tokenizer: estimateTokenCounter.name,
      budgets: input().budgets,
      text: built.text,
      parts: built.parts.map(({ source, id, mode }) => ({ source, id, mode })),
    })}`;
    const json = JSON.parse(JSON.stringify(built));
    expect(Object.keys(json)).toEqual([
      'text',
      'injection',
      'totalTokens',
      'contextHash',
      'parts',
      'trim',
      'snapshot',
    ]);
    expect(Object.keys(json.snapshot)).toEqual([
      'sessionId',
      'turnId',
      'contextHash',
      'sourceCounts',
      'trimmed',
      'timestampMs',
    ]);
    expect(json.contextHash).toBe(expected);
    expect(built.snapshot.contextHash).toBe(expected);
    expect(Object.keys(json.parts[0])).toEqual(['source', 'id', 'mode', 'tokens', 'hash']);
    expect(built.parts[0]?.hash).toMatch(/^[0-9a-f]{64}$/);
    expect({ ...built.parts[0] }).toEqual(json.parts[0]);
  });

  it('gives the same hash for the same inputs whatever their key order, and counts with o200k', () => {
    const reorder = (value: unknown): unknown => {
      if (Array.isArray(value)) return value.map(reorder);
      if (value !== null && typeof value === 'object') {
        return Object.fromEntries(
          Object.entries(value)
            .reverse()
            .map(([k, v]) => [k, reorder(v)]),
        );
      }
      return value;
    };
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 400 }),
        fc.integer({ min: 0, max: 8 }),
        fc.integer({ min: 0, max: 200 }),
        (max, window, toolCap) => {
          const base = input({
            budgets: budget(max, { maxRecentMessages: window, maxToolSnippetTokens: toolCap }),
          });
          const a = buildTurnContext(base, estimateTokenCounter, NOW);
          const b = buildTurnContext(
            JSON.parse(JSON.stringify(reorder(base))) as TurnContextInput,
            estimateTokenCounter,
            NOW + 5,
          );
          expect(b.contextHash).toBe(a.contextHash);
          expect(canonicalJson(b.parts)).toBe(canonicalJson(a.parts));
          if (!a.trim.overBudget) expect(a.totalTokens).toBeLessThanOrEqual(max);
        },
      ),
      { numRuns: 60 },
    );
    const exact = buildTurnContext(
      input({ tokenizer: o200kTokenCounter.name }),
      o200kTokenCounter,
      NOW,
    );
    expect(exact.contextHash).not.toBe(
      buildTurnContext(input(), estimateTokenCounter, NOW).contextHash,
    );
  });

  it('keeps held messages and tool results in the context and its hash, not in the injection', () => {
    const held = sources({
      recentMessages: [{ ...message(0), held: true }, { ...message(1), held: true }, message(2)],
      toolSnippets: [{ id: 't1', tool: 'bash', output: '60 passing', summary: 'ok', held: true }],
    });
    const built = buildTurnContext(input({ sources: held }), estimateTokenCounter, NOW);
    expect(built.text).toContain('message number 0');
    expect(built.text).toContain('- bash: 60 passing');
    expect(built.snapshot.sourceCounts).toMatchObject({ messages: 3, toolSnippets: 1 });
    expect(built.injection).not.toContain('message number 0');
    expect(built.injection).not.toContain('message number 1');
    expect(built.injection).toContain('message number 2');
    expect(built.injection).not.toContain('## Tool results');
    // Whether a line is held changes what is injected, never the context or its hash.
    const plain = sources({ ...held, recentMessages: [message(0), message(1), message(2)] });
    plain.toolSnippets = [{ id: 't1', tool: 'bash', output: '60 passing', summary: 'ok' }];
    const unheld = buildTurnContext(input({ sources: plain }), estimateTokenCounter, NOW);
    expect(unheld.contextHash).toBe(built.contextHash);
    const record = JSON.parse(JSON.stringify(turnContextRecord(input({ sources: held }), built)));
    expect(turnContextRecordSchema.parse(record).input.sources.recentMessages[0]?.held).toBe(true);
  });

  it('stores a record the schema reads back', () => {
    const base = input({ budgets: budget(120) });
    const built = buildTurnContext(base, estimateTokenCounter, NOW);
    const record = JSON.parse(JSON.stringify(turnContextRecord(base, built)));
    expect(turnContextRecordSchema.parse(record)).toEqual(record);
    expect(buildTurnContext(record.input, estimateTokenCounter, NOW).contextHash).toBe(
      record.snapshot.contextHash,
    );
  });
});

describe('utf8EstimateTokenCounter', () => {
  it('counts UTF-8 bytes over 3.5: the ASCII estimate for ASCII, three times it for CJK', () => {
    const english = 'Deploys go through the queue.';
    expect(utf8EstimateTokenCounter.count(english)).toBe(estimateTokenCounter.count(english));
    expect(utf8EstimateTokenCounter.count('漢'.repeat(7))).toBe(6);
    expect(utf8EstimateTokenCounter.count('é'.repeat(7))).toBe(4);
    // A pair is 4 bytes; a lone surrogate 3 (what TextEncoder writes for it).
    expect(utf8EstimateTokenCounter.count('😀'.repeat(7))).toBe(8);
    for (const text of ['a😀é漢', '\ud800x', 'x\udc00']) {
      expect(utf8EstimateTokenCounter.count(text)).toBe(
        Math.ceil(new TextEncoder().encode(text).length / 3.5),
      );
    }
  });
});

describe('tryBuildTurnContext', () => {
  it('classifies a failed build as context_build_error with a next action', () => {
    const broken = input({ budgets: budget(-1) });
    const result = tryBuildTurnContext(broken, estimateTokenCounter, NOW);
    expect(result).toEqual({
      ok: false,
      failure: expect.objectContaining({
        kind: 'failure',
        code: 'context_build_error',
        status: 'failed',
        agentId: 'main',
        sessionId: 'sess_1',
        turnId: 'turn_1',
        message: 'turn context input: budgets.maxContextTokens must be an integer >= 0',
        nextAction: expect.stringContaining('retry the turn'),
        timestampMs: NOW,
      }),
    });
    const wrongCounter = tryBuildTurnContext(input(), o200kTokenCounter, NOW);
    expect(wrongCounter.ok).toBe(false);
    const throwing = tryBuildTurnContext(
      input(),
      {
        name: estimateTokenCounter.name,
        count: () => {
          throw new Error('counter exploded');
        },
      },
      NOW,
    );
    expect(throwing).toMatchObject({ ok: false, failure: { message: 'counter exploded' } });
  });
});
