import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '@ctxbus/core';
import { openSqliteStore } from '@ctxbus/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { mintToken } from './auth.js';
import type { RunningHub } from './start-hub.js';
import { startHub } from './start-hub.js';

// Requests with an Upgrade header: a WebSocket upgrade the hub refuses is answered in the API's
// error shape (the WebSocket server alone wrote the status line with no body), and a request
// for another protocol is served as plain HTTP (it went unanswered).

const dir = mkdtempSync(join(tmpdir(), 'ctxbus-upgrades-'));
const store = openSqliteStore({ path: join(dir, 'ctxbus.db') });
let hub: RunningHub;
let token: string;

beforeAll(async () => {
  token = (await mintToken(store, { role: 'runtime', teamId: 'acme', runtime: 'web' })).token;
  hub = await startHub({ store, port: 0, logger: silentLogger });
});

afterAll(async () => {
  await hub?.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Sends `head` on a new connection; the answer's status line, headers and body. */
function exchange(head: string): Promise<{ status: string; headers: string; body: string }> {
  const target = new URL(hub.url);
  return new Promise((resolve, reject) => {
    let answer = '';
    const socket = connect(Number(target.port), target.hostname, () =>
      socket.write(`${head.replace('HOST', target.host)}\r\n`),
    );
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      answer += chunk;
      // A kept-alive plain answer: its body is whole once Content-Length bytes came.
      const [top = '', body = ''] = answer.split('\r\n\r\n');
      const length = /content-length: (\d+)/i.exec(top)?.[1];
      if (length !== undefined && Buffer.byteLength(body) >= Number(length)) socket.end();
    });
    socket.on('close', () => {
      const [top = '', body = ''] = answer.split('\r\n\r\n');
      const [status = '', ...headers] = top.split('\r\n');
      resolve({ status, headers: headers.join('\n'), body });
    });
    socket.on('error', reject);
  });
}

const websocketHead = (path: string, auth: string | null) =>
  [
    `GET ${path} HTTP/1.1`,
    'Host: HOST',
    'Connection: Upgrade',
    'Upgrade: websocket',
    'Sec-WebSocket-Version: 13',
    'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
    ...(auth ? [`Authorization: Bearer ${auth}`] : []),
    '',
  ].join('\r\n');

describe('a refused WebSocket upgrade', () => {
  it('says why in the API error shape: a bad token, a bad since', async () => {
    const unauthorized = await exchange(websocketHead('/api/stream/ws', 'not-a-token'));
    expect(unauthorized.status).toBe('HTTP/1.1 401 Unauthorized');
    expect(unauthorized.headers).toMatch(/content-type: application\/json/i);
    expect(unauthorized.headers).toContain(
      `Content-Length: ${Buffer.byteLength(unauthorized.body)}`,
    );
    expect(JSON.parse(unauthorized.body).error.code).toBe('unauthorized');

    const badSince = await exchange(websocketHead('/api/stream/ws?since=abc', token));
    expect(badSince.status).toBe('HTTP/1.1 400 Bad Request');
    expect(JSON.parse(badSince.body).error).toMatchObject({
      code: 'validation_failed',
      message: expect.stringContaining('digits only'),
    });
  });

  it('while an accepted one streams', async () => {
    const url = `${hub.url.replace('http', 'ws')}/api/stream/ws`;
    const socket = new WebSocket(url, { headers: { authorization: `Bearer ${token}` } });
    const first = await new Promise<string>((resolve, reject) => {
      socket.once('message', (data) => resolve(String(data)));
      socket.once('error', reject);
    });
    expect(JSON.parse(first)).toMatchObject({ type: 'ready' });
    socket.close();
  });
});

describe('an upgrade to another protocol', () => {
  it('is served as plain HTTP/1.1 (what curl --http2 sends to an http:// URL)', async (context) => {
    if (typeof Reflect.get(createServer(), 'shouldUpgradeCallback') !== 'function') {
      context.skip(`Node ${process.version} has no shouldUpgradeCallback: such a request waits`);
    }
    const answer = await exchange(
      'GET /health HTTP/1.1\r\nHost: HOST\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n',
    );
    expect(answer.status).toBe('HTTP/1.1 200 OK');
    expect(JSON.parse(answer.body)).toMatchObject({ status: 'ok' });
  });
});
