import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stableId } from '@ctxbus/core/light';
import type { RunningHub } from '@ctxbus/hub';
import { mintToken, startHub } from '@ctxbus/hub';
import type { Store } from '@ctxbus/store';
import { openSqliteStore } from '@ctxbus/store';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createClient } from './ctxbus-client.js';
import type { HubItem } from './hub-lite.js';
import { createHubLite } from './hub-lite.js';
import type { PendingResume, SessionOptions } from './session-kernel.js';
import { liteSessionHub, openSession } from './session-kernel.js';

// The session kernel on its own, against a real in-process hub; what every adapter must do on
// it is test/kit's adapter conformance suite, run by each adapter.

let store: Store;
let hub: RunningHub;
let token: string;
let other: ReturnType<typeof createClient>;
let stateDir: string;

beforeAll(async () => {
  store = openSqliteStore({ path: ':memory:' });
  hub = await startHub({ store, port: 0 });
  token = (await mintToken(store, { role: 'runtime', teamId: 'acme', runtime: 'codex' })).token;
  const web = (await mintToken(store, { role: 'runtime', teamId: 'acme', runtime: 'web' })).token;
  other = createClient({ url: hub.url, token: web });
});
afterAll(async () => {
  await hub.close();
  await store.close();
});
beforeEach(() => {
  stateDir = mkdtempSync(join(tmpdir(), 'ctxbus-session-kernel-'));
});
afterEach(() => rmSync(stateDir, { recursive: true, force: true }));

function session(overrides: Partial<SessionOptions<HubItem>> = {}) {
  const sessionId = 'sess-1';
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
    expect(turn.snapshot?.sourceCounts.messages).toBe(1);
    const quiet = await kernel.beforeTurn({ prompt: 'and now?' });
    expect(quiet.injection).toBe('');
    expect(kernel.state()).toMatchObject({ prompts: 2, turns: 1 });
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
