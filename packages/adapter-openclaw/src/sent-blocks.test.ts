import { mkdtempSync, readdirSync, rmSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SESSION_MAX_AGE_MS, SESSIONS_KEPT } from '@ctxbus/client/session';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CONTEXT_ENGINE_ID, ctxbusContextEngine } from './context-engine.js';
import { readSentBlocks, recordSentBlock, sentBlocksFile, withSentBlocks } from './sent-blocks.js';

const OPEN = '<team-context source="ctxbus">';
const block = (text: string) => `${OPEN}\n${text}\n</team-context>`;
const user = (content: unknown) => ({ role: 'user', content });
const assistant = (text: string) => ({ role: 'assistant', content: [{ type: 'text', text }] });

let stateDir: string;
beforeEach(() => {
  stateDir = mkdtempSync(join(tmpdir(), 'ctxbus-sent-blocks-'));
});
afterEach(() => rmSync(stateDir, { recursive: true, force: true }));

describe('withSentBlocks', () => {
  it('shows each bare prompt with its block as the request had it, after OpenClaw’s timestamp', () => {
    const blocks = [
      { prompt: 'Question 1', block: block('bundle') },
      { prompt: 'Question 2', block: block('changes') },
    ];
    const history = [
      user('[Sun 2026-11-29 21:12 UTC] Question 1'),
      assistant('Understood.'),
      user([{ type: 'text', text: '[Sun 2026-11-29 21:13 UTC] Question 2' }]),
      assistant('Understood.'),
    ];
    const { messages, restored, matched } = withSentBlocks(history, blocks, OPEN);
    expect([restored, matched]).toEqual([2, 2]);
    expect(messages[0]).toEqual(
      user(`[Sun 2026-11-29 21:12 UTC] ${block('bundle')}\n\nQuestion 1`),
    );
    expect(messages[2]).toEqual(
      user([
        { type: 'text', text: `[Sun 2026-11-29 21:13 UTC] ${block('changes')}\n\nQuestion 2` },
      ]),
    );
    expect(messages[1]).toBe(history[1]);
    // The session's history itself is left as it was.
    expect(history[0]).toEqual(user('[Sun 2026-11-29 21:12 UTC] Question 1'));
  });

  it('leaves a message that holds its block (an --local turn), and others, as they are', () => {
    const blocks = [
      { prompt: 'Question 1', block: block('bundle') },
      { prompt: 'Question 2', block: block('changes') },
    ];
    const written = user(`${block('bundle')}\n\nQuestion 1`);
    const internal = user('<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>\nnone');
    const history = [written, internal, assistant('ok'), user('Question 2')];
    const { messages, restored, matched } = withSentBlocks(history, blocks, OPEN);
    expect([restored, matched]).toEqual([1, 2]);
    expect(messages[0]).toBe(written);
    expect(messages[1]).toBe(internal);
    expect(messages[3]).toEqual(user(`${block('changes')}\n\nQuestion 2`));
  });

  it('matches in order: the same prompt twice gets each its own block; a turn never written is skipped', () => {
    const blocks = [
      { prompt: 'again', block: block('one') },
      { prompt: 'lost', block: block('never written') },
      { prompt: 'again', block: block('two') },
    ];
    const { messages } = withSentBlocks([user('again'), user('again')], blocks, OPEN);
    expect(messages).toEqual([user(`${block('one')}\n\nagain`), user(`${block('two')}\n\nagain`)]);
  });
});

describe('the sent blocks of a session', () => {
  it('are kept per session across reads, oldest first', () => {
    recordSentBlock(stateDir, 'session-a', { prompt: 'Q1', block: block('1') });
    recordSentBlock(stateDir, 'session-a', { prompt: 'Q2', block: block('2') });
    recordSentBlock(stateDir, 'session-b', { prompt: 'Q1', block: block('b') });
    recordSentBlock(stateDir, 'session-b', { prompt: 'Q2', block: '' });
    expect(readSentBlocks(stateDir, 'session-a').map((sent) => sent.prompt)).toEqual(['Q1', 'Q2']);
    expect(readSentBlocks(stateDir, 'session-b')).toEqual([{ prompt: 'Q1', block: block('b') }]);
    expect(readSentBlocks(stateDir, 'session-c')).toEqual([]);
  });
});

describe('the ctxbus context engine', () => {
  it('assembles the session’s history with its blocks, declares what gateway turns need, delegates compaction', async () => {
    const compacted: unknown[] = [];
    const engine = ctxbusContextEngine({
      stateDir,
      open: OPEN,
      logger: { info: () => undefined, warn: () => undefined, error: () => undefined },
      compaction: async () => async (params) => {
        compacted.push(params);
        return { ok: true, compacted: true };
      },
    });
    expect(engine.info).toMatchObject({
      id: CONTEXT_ENGINE_ID,
      ownsCompaction: false,
      transcriptSemantics: {
        currentTurnFence: 'before-current-turn-entry-v1',
        turnAdvancementIdempotency: 'atomic-idempotent-v1',
      },
    });
    recordSentBlock(stateDir, 'sid-1', { prompt: 'Question 1', block: block('bundle') });
    const history = [user('Question 1'), assistant('ok')];
    const assembled = await engine.assemble({ sessionId: 'sid-1', messages: history });
    expect(assembled.messages[0]).toEqual(user(`${block('bundle')}\n\nQuestion 1`));
    // Another session (a reset gives a new id) keeps its history as it is.
    const other = await engine.assemble({ sessionId: 'sid-2', messages: history });
    expect(other.messages).toEqual(history);

    expect(await engine.ingest({ sessionId: 'sid-1', message: history[0] })).toEqual({
      ingested: false,
    });
    const commit = { advancementKey: 'turn-1', sessionId: 'sid-1', messages: [] };
    expect(await engine.commitTurn(commit)).toEqual({ status: 'committed' });
    expect(await engine.commitTurn(commit)).toEqual({ status: 'duplicate' });
    expect(await engine.compact({ sessionId: 'sid-1', force: true })).toEqual({
      ok: true,
      compacted: true,
    });
    expect(compacted).toEqual([{ sessionId: 'sid-1', force: true }]);
  });
});

describe('recordSentBlock', () => {
  const dir = () => join(stateDir, 'sent-blocks');
  const lastUsed = (session: string, secondsAgo: number) => {
    const at = Date.now() / 1000 - secondsAgo;
    utimesSync(sentBlocksFile(stateDir, session), at, at);
  };

  it('keeps the SESSIONS_KEPT most recently used sessions when a new one starts', () => {
    for (let index = 0; index < SESSIONS_KEPT; index += 1) {
      recordSentBlock(stateDir, `old-${index}`, { prompt: 'Q', block: block(String(index)) });
    }
    lastUsed('old-1', 3_600);
    // Another turn of a known session prunes nothing.
    recordSentBlock(stateDir, 'old-5', { prompt: 'Q2', block: block('again') });
    expect(readdirSync(dir())).toHaveLength(SESSIONS_KEPT);
    recordSentBlock(stateDir, 'new', { prompt: 'Q', block: block('new') });
    expect(readdirSync(dir())).toHaveLength(SESSIONS_KEPT);
    expect(readSentBlocks(stateDir, 'old-1')).toEqual([]);
    expect(readSentBlocks(stateDir, 'new')).toHaveLength(1);
    expect(readSentBlocks(stateDir, 'old-5')).toHaveLength(2);
    expect(readSentBlocks(stateDir, 'old-0')).toHaveLength(1);
  });

  it('drops a session unused for SESSION_MAX_AGE_MS when a new one starts', () => {
    for (const session of ['a', 'b', 'c']) {
      recordSentBlock(stateDir, session, { prompt: 'Q', block: block(session) });
    }
    const month = SESSION_MAX_AGE_MS / 1000;
    lastUsed('a', month + 60);
    lastUsed('b', month - 3_600);
    recordSentBlock(stateDir, 'd', { prompt: 'Q', block: block('d') });
    expect(readSentBlocks(stateDir, 'a')).toEqual([]);
    for (const session of ['b', 'c', 'd'])
      expect(readSentBlocks(stateDir, session)).toHaveLength(1);
  });
});
