import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient } from '@ctxbus/client';
import { mintToken, startHub } from '@ctxbus/hub';
import { waitFor, waitUntil } from '@ctxbus/test-kit';
import type { InProcessHub } from '@ctxbus/test-kit/in-process-hub';
import { startInProcessHub } from '@ctxbus/test-kit/in-process-hub';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readLiveLog, readLiveRecord } from './live-files.js';
import { processAlive, startLivePush, stopLivePush } from './live-start.js';

// The live process as the SessionStart hook starts it: the built plugin script, detached, with
// the session's inbox socket in its environment (a Unix socket that reads lines as Claude
// Code's inbox does; the real one is in test/e2e), against a real hub on loopback.

const SCRIPT = fileURLToPath(new URL('../plugin/dist/ctxbus-claude-live.js', import.meta.url));

let hub: InProcessHub<'code' | 'chat'>;
let token: string;
let chat: ReturnType<typeof createClient>;
let dir: string;
let inbox: Server;
const socket = () => join(dir, 'inbox.sock');
const received: string[] = [];
let wake: (() => void) | null = null;

beforeAll(async () => {
  hub = await startInProcessHub(
    { startHub, mintToken },
    { tokens: { code: ['acme', 'claude-code'], chat: ['acme', 'openclaw'] } },
  );
  token = hub.tokens.code;
  chat = createClient({ url: hub.url, token: hub.tokens.chat });
  dir = mkdtempSync(join(tmpdir(), 'ctxbus-live-start-'));
  inbox = createServer((connection) => {
    let buffer = '';
    connection.setEncoding('utf8');
    connection.on('data', (chunk: string) => {
      buffer += chunk;
    });
    connection.on('end', () => {
      for (const line of buffer.split('\n').filter(Boolean)) {
        const parsed = JSON.parse(line) as { type: string; message?: { content: string } };
        if (parsed.type === 'user' && parsed.message) received.push(parsed.message.content);
      }
      connection.end();
      wake?.();
    });
  });
  await new Promise<void>((resolve) => inbox.listen(socket(), resolve));
});

afterAll(async () => {
  await new Promise<void>((resolve) => inbox.close(() => resolve()));
  await hub.close();
  rmSync(dir, { recursive: true, force: true });
});

const stateDir = () => join(dir, 'state');
const env = (extra: Record<string, string> = {}) => ({
  PATH: process.env.PATH ?? '',
  CTXBUS_URL: hub.url,
  CTXBUS_TOKEN: token,
  CLAUDE_CODE_MESSAGING_SOCKET: socket(),
  CLAUDE_PID: String(process.pid),
  ...extra,
});

describe('startLivePush', () => {
  it('starts nothing unless live push is on and the session has an inbox socket', () => {
    const base = { stateDir: stateDir(), sessionId: 's-off', since: 0, script: SCRIPT };
    expect(startLivePush({ ...base, env: env() })).toBe('off');
    expect(
      startLivePush({
        ...base,
        env: env({ CTXBUS_LIVE: '1', CLAUDE_CODE_MESSAGING_SOCKET: join(dir, 'no.sock') }),
      }),
    ).toBe('no inbox socket');
    expect(readLiveRecord(stateDir(), 's-off')).toBeNull();
  });

  it('starts one detached process per session, which pushes and ends with the session', async () => {
    const since = (await chat.write({ type: 'discovery', title: 'before' })).items[0]?.seq ?? 0;
    const options = {
      env: env({ CTXBUS_LIVE: '1' }),
      stateDir: stateDir(),
      sessionId: 's-live',
      since,
      script: SCRIPT,
    };
    expect(startLivePush(options)).toBe('started');
    const record = readLiveRecord(stateDir(), 's-live');
    expect(record?.socket).toBe(socket());
    const pid = record?.pid ?? 0;
    expect(processAlive(pid)).toBe(true);
    // SessionStart again in the same process (resume, /compact): the running one serves.
    expect(startLivePush(options)).toBe('running');

    const arrived = new Promise<void>((resolve) => {
      wake = resolve;
    });
    await chat.write({ type: 'alert', title: 'Prod is down (marker s7)', urgency: 'blocking' });
    await waitFor(arrived, 'the blocking item in the inbox');
    expect(received.at(-1)).toContain('A blocking item from the runtime "openclaw"');
    expect(received.at(-1)).toContain('Prod is down (marker s7)');

    stopLivePush(stateDir(), 's-live');
    await waitUntil(() => !processAlive(pid), 'the live process to exit');
    const log = readLiveLog(stateDir(), 's-live');
    expect(log).toMatch(/started \(pid \d+\)/);
    expect(log).toMatch(/delivered seq \d+ from openclaw: Prod is down/);
    expect(log).toContain('ending: the session ended');
  });
});
