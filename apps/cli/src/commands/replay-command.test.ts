import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { recordTurn, turnLogPaths } from '@ctxbus/client/turn-log';
import type { TurnContextInput } from '@ctxbus/core';
import { estimateTokenCounter, o200kTokenCounter } from '@ctxbus/core';
import { removeDir, runCli, tempDir } from '@ctxbus/test-kit';
import { afterAll, describe, expect, it } from 'vitest';

// `ctxbus replay` run as the real command on snapshot files the real writer appended: no hub
// is started and the CLI is given no URL, so the proof comes from the local files alone.

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) removeDir(dir);
});
const fresh = () => {
  const dir = tempDir('ctxbus-replay-');
  dirs.push(dir);
  return dir;
};
const offline = (data: string) => ({
  env: { CTXBUS_DATA: data, CTXBUS_URL: 'http://127.0.0.1:9', CTXBUS_TOKEN: '' },
});

function turn(
  turnId: string,
  prompt: string,
  tokenizer = estimateTokenCounter.name,
): TurnContextInput {
  return {
    agentId: 'main',
    sessionId: 'agent:main:chat-7',
    turnId,
    tokenizer,
    budgets: { maxContextTokens: 90, maxRecentMessages: 4, maxToolSnippetTokens: 20 },
    sources: {
      recentMessages: [1, 2, 3, 4, 5].map((index) => ({
        id: `m${index}`,
        direction: index % 2 ? ('inbound' as const) : ('outbound' as const),
        sender: { id: index % 2 ? 'alice' : 'main', kind: index % 2 ? 'human' : 'agent' },
        text: `message ${index} on the billing backfill`,
      })),
      runtimeState: { lastCheckpointSummary: 'invoices migrated', lastTerminalStatus: 'completed' },
      memoryPointers: [{ id: 'mem1', text: 'notes/billing.md' }],
      toolSnippets: [
        { id: 't1', tool: 'bash', output: 'x'.repeat(200), summary: 'ran the backfill' },
      ],
      currentInput: { id: `in-${turnId}`, sender: { id: 'alice' }, text: prompt },
    },
  };
}

function record(data: string, input: TurnContextInput, at: number) {
  const result = recordTurn({
    input,
    counter: input.tokenizer === 'o200k_base' ? o200kTokenCounter : estimateTokenCounter,
    now: () => at,
    dataDir: data,
    snapshots: true,
  });
  if (!result.ok) throw new Error(result.failure.message);
  return result.context;
}

describe('ctxbus replay', () => {
  it('proves every recorded hash from the files alone, one turn or all', async () => {
    const data = fresh();
    const first = record(data, turn('turn_1', 'Start the backfill.'), 1_000);
    const second = record(data, turn('turn_2', 'And check the totals.', 'o200k_base'), 2_000);
    expect(first.trim.trimmed).toBe(true);
    const path = turnLogPaths(data, 'main', 'agent:main:chat-7').context;
    expect(path).toBe(join(data, 'agents', 'main', 'context', 'agent_main_chat-7.jsonl'));
    const lines = readFileSync(path, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines[0].snapshot).toEqual({
      sessionId: 'agent:main:chat-7',
      turnId: 'turn_1',
      contextHash: first.contextHash,
      sourceCounts: first.snapshot.sourceCounts,
      trimmed: true,
      timestampMs: 1_000,
    });

    const all = await runCli(['replay', 'agent:main:chat-7'], offline(data));
    expect(all.code, all.stderr).toBe(0);
    expect(all.stdout).toContain(`turn turn_1 (line 1): ${first.contextHash} proven`);
    expect(all.stdout).toContain(`turn turn_2 (line 2): ${second.contextHash} proven`);
    expect(all.stdout).toContain('2 turns rebuilt from');

    const one = await runCli(
      ['replay', 'agent:main:chat-7', '--turn', 'turn_2', '--json'],
      offline(data),
    );
    expect(one.code, one.stderr).toBe(0);
    expect(JSON.parse(one.stdout)).toMatchObject({
      agentId: 'main',
      turns: [{ line: 2, turnId: 'turn_2', contextHash: second.contextHash, proven: true }],
    });

    const missing = await runCli(
      ['replay', 'agent:main:chat-7', '--turn', 'turn_9'],
      offline(data),
    );
    expect(missing.code).toBe(4);
    expect(missing.stderr).toMatch(/turn turn_9 is not recorded/);
    const none = await runCli(['replay', 'nope'], offline(data));
    expect(none.code).toBe(4);

    record(data, { ...turn('turn_1', 'Elsewhere.'), agentId: 'ops' }, 3_000);
    const two = await runCli(['replay', 'agent:main:chat-7'], offline(data));
    expect(two.code).toBe(2);
    expect(two.stderr).toMatch(/recorded for agents main, ops; name one with --agent/);
    const named = await runCli(['replay', 'agent:main:chat-7', '--agent', 'ops'], offline(data));
    expect(named.code, named.stderr).toBe(0);
    expect(named.stdout).toContain('session agent:main:chat-7 (agent ops): 1 turn rebuilt');
  });

  it('shows the first difference once a recorded file is altered', async () => {
    const data = fresh();
    record(data, turn('turn_1', 'Start the backfill.'), 1_000);
    record(data, turn('turn_2', 'And check the totals.'), 2_000);
    const path = turnLogPaths(data, 'main', 'agent:main:chat-7').context;
    const [one, two] = readFileSync(path, 'utf8').trim().split('\n');
    const edited = JSON.parse(two as string);
    edited.input.sources.recentMessages[3].text = 'message 4, quietly rewritten';
    writeFileSync(path, `${one}\n${JSON.stringify(edited)}\n`);

    const result = await runCli(['replay', 'agent:main:chat-7'], offline(data));
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('turn turn_1 (line 1):');
    expect(result.stdout).toMatch(
      /turn turn_2 \(line 2\): differs; first difference: part 4 — recorded messages m4: dropped, 0 tokens, sha256 [0-9a-f]{12}; rebuilt messages m4: dropped, 0 tokens, sha256 [0-9a-f]{12}/,
    );
    expect(result.stderr).toMatch(/1 of 2 turns differs from/);

    // A forged hash with untouched inputs is caught at the snapshot itself.
    const forged = JSON.parse(one as string);
    forged.snapshot.contextHash = `ctx_${'0'.repeat(64)}`;
    writeFileSync(path, `${JSON.stringify(forged)}\n`);
    const hash = await runCli(['replay', 'agent:main:chat-7', '--turn', 'turn_1'], offline(data));
    expect(hash.code).toBe(1);
    expect(hash.stdout).toContain(
      `first difference: snapshot.contextHash — recorded ctx_${'0'.repeat(64)}`,
    );

    writeFileSync(path, `${one}\n{"kind":"turn","snap`);
    const torn = await runCli(['replay', 'agent:main:chat-7'], offline(data));
    expect(torn.code).toBe(1);
    expect(torn.stdout).toContain(
      'turn ? (line 2): differs; first difference: the line is not JSON',
    );
  });

  it('proves a turn recorded before trimmed counted the window and the tool cap', async () => {
    const data = fresh();
    // Within maxContextTokens: only the window (5 messages, 4 kept) and the tool cap trim.
    const roomy = {
      ...turn('turn_1', 'Start the backfill.'),
      budgets: { maxContextTokens: 10_000, maxRecentMessages: 4, maxToolSnippetTokens: 20 },
    };
    const built = record(data, roomy, 1_000);
    expect(built.trim.actions.map((action) => action.reason)).toEqual(['window', 'tool-cap']);
    expect(built.snapshot.trimmed).toBe(true);
    const path = turnLogPaths(data, 'main', 'agent:main:chat-7').context;
    const line = readFileSync(path, 'utf8').trim();
    // What the builder wrote before: trimmed only when the budget had acted. The hash is the same.
    const earlier = JSON.parse(line);
    earlier.snapshot.trimmed = false;
    earlier.trace.trim.trimmed = false;
    writeFileSync(path, `${JSON.stringify(earlier)}\n`);
    const old = await runCli(['replay', 'agent:main:chat-7'], offline(data));
    expect(old.code, old.stdout + old.stderr).toBe(0);
    expect(old.stdout).toContain(`turn turn_1 (line 1): ${built.contextHash} proven`);

    // Neither then nor now was a turn the budget trimmed untrimmed, or one left whole trimmed.
    const tight = fresh();
    record(tight, turn('turn_2', 'And check the totals.'), 2_000);
    const tightPath = turnLogPaths(tight, 'main', 'agent:main:chat-7').context;
    const budgeted = JSON.parse(readFileSync(tightPath, 'utf8').trim());
    expect(budgeted.trace.trim.actions).toContainEqual(
      expect.objectContaining({ reason: 'budget' }),
    );
    budgeted.trace.trim.trimmed = false;
    writeFileSync(tightPath, `${JSON.stringify(budgeted)}\n`);
    const untrimmed = await runCli(['replay', 'agent:main:chat-7'], offline(tight));
    expect(untrimmed.code).toBe(1);
    expect(untrimmed.stdout).toContain(
      'first difference: trim note trimmed — recorded false; rebuilt true',
    );
    const whole = fresh();
    const wholeBudgets = {
      maxContextTokens: 10_000,
      maxRecentMessages: 9,
      maxToolSnippetTokens: 900,
    };
    expect(record(whole, { ...roomy, budgets: wholeBudgets }, 3_000).trim.actions).toEqual([]);
    const wholePath = turnLogPaths(whole, 'main', 'agent:main:chat-7').context;
    const claimed = JSON.parse(readFileSync(wholePath, 'utf8').trim());
    claimed.snapshot.trimmed = true;
    writeFileSync(wholePath, `${JSON.stringify(claimed)}\n`);
    const trimmed = await runCli(['replay', 'agent:main:chat-7'], offline(whole));
    expect(trimmed.code).toBe(1);
    expect(trimmed.stdout).toContain(
      'first difference: snapshot.trimmed — recorded true; rebuilt false',
    );
  });

  it('appends a failed build to the session audit log as context_build_error', async () => {
    const data = fresh();
    const broken = {
      ...turn('turn_3', 'Go.'),
      budgets: { maxContextTokens: -5, maxRecentMessages: 4, maxToolSnippetTokens: 20 },
    };
    const result = recordTurn({
      input: broken,
      counter: estimateTokenCounter,
      now: () => 3_000,
      dataDir: data,
      snapshots: true,
    });
    expect(result.ok).toBe(false);
    const { audit, context } = turnLogPaths(data, 'main', 'agent:main:chat-7');
    const lines = readFileSync(audit, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines).toEqual([
      expect.objectContaining({
        kind: 'failure',
        code: 'context_build_error',
        status: 'failed',
        sessionId: 'agent:main:chat-7',
        turnId: 'turn_3',
        nextAction: expect.any(String),
        timestampMs: 3_000,
      }),
    ]);
    expect(() => readFileSync(context)).toThrow();
  });

  it('explains itself in --help', async () => {
    const help = await runCli(['replay', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('<data>/agents/<agent>/context/<session>.jsonl');
    expect(help.stdout).toContain('--turn <turn>');
  });
});
