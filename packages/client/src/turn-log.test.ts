import { mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TurnContextInput } from '@ctxbus/core/light';
import { DEFAULT_TURN_BUDGETS, estimateTokenCounter } from '@ctxbus/core/light';
import { afterAll, describe, expect, it } from 'vitest';
import { pruneSessionFiles, recordTurn, turnLogPaths } from './turn-log.js';

const root = mkdtempSync(join(tmpdir(), 'ctxbus-turn-log-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function input(sessionId: string): TurnContextInput {
  return {
    agentId: 'main',
    sessionId,
    turnId: 'turn-1',
    tokenizer: estimateTokenCounter.name,
    budgets: DEFAULT_TURN_BUDGETS,
    sources: {
      recentMessages: [],
      runtimeState: {},
      memoryPointers: [],
      toolSnippets: [],
      currentInput: { id: 'in-1', sender: { id: 'alice' }, text: 'go on' },
    },
  };
}

describe('the turn log stays bounded', () => {
  it('a new session removes the oldest session files beyond keepSessions; an old one appends', () => {
    const data = join(root, 'data');
    const dir = join(data, 'agents', 'main', 'context');
    mkdirSync(dir, { recursive: true });
    // Five older sessions, written a minute apart (oldest first).
    for (let index = 0; index < 5; index++) {
      const file = join(dir, `old-${index}.jsonl`);
      writeFileSync(file, '{}\n');
      const at = new Date(Date.UTC(2026, 0, 1, 0, index));
      utimesSync(file, at, at);
    }
    const record = (sessionId: string) =>
      recordTurn({
        input: input(sessionId),
        counter: estimateTokenCounter,
        now: () => 1_000,
        dataDir: data,
        snapshots: true,
        keepSessions: 3,
      });
    expect(record('new').ok).toBe(true);
    expect(readdirSync(dir).sort()).toEqual(['new.jsonl', 'old-3.jsonl', 'old-4.jsonl']);
    // A second turn of a session already on disk prunes nothing.
    expect(record('new').ok).toBe(true);
    expect(readdirSync(dir)).toHaveLength(3);
    expect(turnLogPaths(data, 'main', 'new').context).toBe(join(dir, 'new.jsonl'));
  });

  it('pruneSessionFiles keeps the newest and ignores other files and a missing directory', () => {
    const dir = join(root, 'prune');
    mkdirSync(dir);
    for (const [name, minute] of [
      ['a.jsonl', 1],
      ['b.jsonl', 2],
      ['notes.txt', 0],
    ] as const) {
      writeFileSync(join(dir, name), '');
      const at = new Date(Date.UTC(2026, 0, 1, 0, minute));
      utimesSync(join(dir, name), at, at);
    }
    expect(pruneSessionFiles(dir, 1)).toEqual(['a.jsonl']);
    expect(readdirSync(dir).sort()).toEqual(['b.jsonl', 'notes.txt']);
    expect(pruneSessionFiles(join(root, 'missing'), 1)).toEqual([]);
  });
});
