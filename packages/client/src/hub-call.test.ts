import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CtxbusError } from '@ctxbus/core';
import { mintToken, startHub } from '@ctxbus/hub';
import type { InProcessHub } from '@ctxbus/test-kit/in-process-hub';
import { startInProcessHub } from '@ctxbus/test-kit/in-process-hub';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WireRequest } from './hub-call.js';
import { createHubCall, fetchTransport } from './hub-call.js';

let running: InProcessHub<'own'>;
let token: string;

beforeAll(async () => {
  running = await startInProcessHub({ startHub, mintToken }, { tokens: { own: ['acme', 'web'] } });
  token = running.tokens.own;
});

afterAll(async () => {
  await running.close();
});

/** A local server answering every request with `answer` (a hub that misbehaves). */
async function serve(answer: (request: IncomingMessage, response: ServerResponse) => void) {
  const server: Server = createServer(answer);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

describe('createHubCall', () => {
  it('builds each request from the wire table: method, filled path, comma-list query, body', async () => {
    const sent: WireRequest[] = [];
    const transport = fetchTransport({ url: running.url, token });
    const hub = createHubCall({
      url: running.url,
      transport: (request) => {
        sent.push(request);
        return transport(request);
      },
    });
    const written = await hub.call('writeContext', {
      body: { items: [{ type: 'decision', title: 'One table' }] },
    });
    const id = written.results[0]?.id ?? '';
    const listed = await hub.call('listContext', {
      query: { type: ['decision', 'alert'], limit: 5 },
    });
    expect(listed.items.map((item) => item.id)).toEqual([id]);
    const resolved = await hub.call('resolveContextItem', {
      params: { id },
      query: { runtime: 'openclaw' },
    });
    expect(resolved.resolved.format).toBe('text');
    expect(sent.map((request) => `${request.method} ${request.target}`)).toEqual([
      'POST /api/context',
      'GET /api/context?type=decision%2Calert&limit=5',
      `GET /api/context/${id}/resolved?runtime=openclaw`,
    ]);
  });

  it('turns a refusal into a CtxbusError with the hub code, and no answer into unavailable', async () => {
    const hub = createHubCall({
      url: running.url,
      transport: fetchTransport({ url: running.url, token: 'cbx_wrong' }),
    });
    const refused = await hub.call('listContext').catch((error: unknown) => error);
    expect(CtxbusError.isInstance(refused) && refused.code).toBe('unauthorized');
    expect(CtxbusError.isInstance(refused) && refused.retryable).toBe(false);
    const gone = createHubCall({
      url: 'http://127.0.0.1:9',
      transport: fetchTransport({ url: 'http://127.0.0.1:9', token }),
    });
    const unreachable = await gone.call('health').catch((error: unknown) => error);
    expect(CtxbusError.isInstance(unreachable) && unreachable.code).toBe('unavailable');
    expect((unreachable as Error).message).toMatch(/cannot reach the ctxbus hub at http:\/\/127/);
  });

  it("refuses an answer that does not match the table's schema", async () => {
    const odd = await serve((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ status: 'ok', version: 7 }));
    });
    try {
      const hub = createHubCall({ url: odd.url, transport: fetchTransport({ ...odd, token }) });
      const error = await hub.call('health').catch((caught: unknown) => caught);
      expect(CtxbusError.isInstance(error) && error.code).toBe('internal');
      expect((error as Error).message).toMatch(/^unexpected response from GET \/health: /);
    } finally {
      await odd.close();
    }
  });
});
