import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '@ctxbus/core';
import { openSqliteStore } from '@ctxbus/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintToken } from './auth.js';
import type { RunningHub } from './start-hub.js';
import { REQUEST_TIMEOUT_MS, startHub } from './start-hub.js';

// A request must arrive whole within the hub's request timeout: a client that announces a body
// and sends part of it, then stalls, is answered 408 in the API's error shape and let go, so
// it cannot keep its place in the bodies the hub receives at once.

const dir = mkdtempSync(join(tmpdir(), 'ctxbus-request-timeout-'));
const store = openSqliteStore({ path: join(dir, 'ctxbus.db') });
let hub: RunningHub;
let token: string;

beforeAll(async () => {
  token = (await mintToken(store, { role: 'runtime', teamId: 'acme', runtime: 'web' })).token;
  hub = await startHub({ store, port: 0, logger: silentLogger, requestTimeoutMs: 1_000 });
});

afterAll(async () => {
  await hub?.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Sends `request` on a new connection and reads until the hub closes it. */
function exchange(request: string): Promise<{ answer: string; elapsedMs: number }> {
  const target = new URL(hub.url);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    let answer = '';
    const socket = connect(Number(target.port), target.hostname, () => socket.write(request));
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      answer += chunk;
    });
    socket.on('close', () => resolve({ answer, elapsedMs: performance.now() - started }));
    socket.on('error', reject);
  });
}

describe('the request timeout', () => {
  it('is 60 s unless set', () => {
    expect(REQUEST_TIMEOUT_MS).toBe(60_000);
  });

  it('answers a body that stalls 408 request_timeout in the API shape, and closes', async () => {
    const { answer, elapsedMs } = await exchange(
      `POST /api/context HTTP/1.1\r\nHost: ${new URL(hub.url).host}\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n{"type":`,
    );
    const [head = '', body = ''] = answer.split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    expect(head).toMatch(/content-type: application\/json/i);
    expect(JSON.parse(body)).toEqual({
      error: { code: 'request_timeout', message: 'the request did not arrive whole within 1 s' },
    });
    // Not before the timeout, and long before Node's default of 300 s.
    expect(elapsedMs).toBeGreaterThanOrEqual(900);
    expect(elapsedMs).toBeLessThan(60_000);
  });

  it('answers a request whose headers never end the same way', async () => {
    const { answer } = await exchange(
      `GET /api/context HTTP/1.1\r\nHost: ${new URL(hub.url).host}\r\nAuthorization: Bearer ${token}\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(answer).toContain('"code":"request_timeout"');
  });

  it('leaves a request that arrives in time alone', async () => {
    const response = await fetch(`${hub.url}/api/context`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'status', title: 'on time' }),
    });
    expect(response.status).toBe(201);
  });
});
