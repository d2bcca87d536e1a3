import type { Store } from '@ctxbus/store';
import { openSqliteStore } from '@ctxbus/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintToken } from './auth.js';
import type { RunningHub } from './start-hub.js';
import { startHub } from './start-hub.js';

// CORS is off unless origins are named; then exactly those origins may call the API and read
// the live stream from their pages (the stream's headers are written by the hub itself, so it
// is checked on a listening hub, not in process).

const APP = 'https://app.example.com';
let store: Store;
let open: RunningHub;
let closed: RunningHub;
let token: string;

beforeAll(async () => {
  store = openSqliteStore({ path: ':memory:' });
  open = await startHub({ store, port: 0, corsOrigins: [APP] });
  closed = await startHub({ store, port: 0 });
  token = (await mintToken(store, { role: 'runtime', teamId: 'acme', runtime: 'web' })).token;
});

afterAll(async () => {
  await open?.close();
  await closed?.close();
  await store?.close();
});

const preflight = (hub: RunningHub, origin: string, path = '/api/context') =>
  fetch(`${hub.url}${path}`, {
    method: 'OPTIONS',
    headers: {
      origin,
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization, content-type',
    },
  });

describe('CORS', () => {
  it('answers a listed origin’s preflight with the headers its page needs', async () => {
    const response = await preflight(open, APP);
    expect(response.status).toBe(204);
    expect(response.headers.get('access-control-allow-origin')).toBe(APP);
    expect(response.headers.get('access-control-allow-headers')).toBe(
      'authorization,content-type,last-event-id',
    );
    expect(response.headers.get('access-control-allow-methods')).toBe('GET,POST,DELETE');
    expect(response.headers.get('access-control-allow-credentials')).toBeNull();
  });

  it('gives any other origin, or any origin of a hub without the option, no CORS header', async () => {
    for (const response of [
      await preflight(open, 'https://evil.example.com'),
      await preflight(closed, APP),
    ]) {
      expect(response.headers.get('access-control-allow-origin')).toBeNull();
    }
    const read = await fetch(`${closed.url}/api/context`, {
      headers: { origin: APP, authorization: `Bearer ${token}` },
    });
    expect(read.status).toBe(200);
    expect(read.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('lets a listed origin read answers, errors and the live stream', async () => {
    const read = await fetch(`${open.url}/api/context`, {
      headers: { origin: APP, authorization: `Bearer ${token}` },
    });
    expect(read.status).toBe(200);
    expect(read.headers.get('access-control-allow-origin')).toBe(APP);
    const refused = await fetch(`${open.url}/api/context`, { headers: { origin: APP } });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('access-control-allow-origin')).toBe(APP);
    const health = await fetch(`${open.url}/health`, { headers: { origin: APP } });
    expect(health.headers.get('access-control-allow-origin')).toBe(APP);
    const controller = new AbortController();
    const stream = await fetch(`${open.url}/api/stream`, {
      headers: { origin: APP, authorization: `Bearer ${token}` },
      signal: controller.signal,
    });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toBe('text/event-stream');
    expect(stream.headers.get('access-control-allow-origin')).toBe(APP);
    controller.abort();
  });
});
