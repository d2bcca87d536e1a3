import { request as httpRequest } from 'node:http';
import { createClient } from '@ctxbus/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { McpHttpHandler, McpHttpHandlerOptions } from './mcp-http-handler.js';
import { createMcpHttpHandler } from './mcp-http-handler.js';
import type { TestHub } from './test-kit.js';
import { serveOnNode, sleep, startTestHub, textOf, watchUpdates } from './test-kit.js';

let hub: TestHub;

beforeAll(async () => {
  hub = await startTestHub();
});

afterAll(async () => {
  await hub.close();
});

/** The handler the hub would mount: tokens checked by the hub's verifier, a client backend. */
function handlerOptions(extra: Partial<McpHttpHandlerOptions> = {}): McpHttpHandlerOptions {
  return {
    createBackend: (token) => createClient({ url: hub.url, token }),
    verifyToken: (token) => hub.running.hub.services.verifier.verify(`Bearer ${token}`),
    ...extra,
  };
}

async function withEndpoint(
  options: McpHttpHandlerOptions,
  run: (endpoint: string, handler: McpHttpHandler) => Promise<void>,
): Promise<void> {
  const handler = createMcpHttpHandler(options);
  const server = await serveOnNode((request) => handler.handle(request));
  try {
    await run(`${server.url}/mcp`, handler);
  } finally {
    await handler.close();
    await server.close();
  }
}

async function connect(endpoint: string, token: string) {
  const transport = new StreamableHTTPClientTransport(new URL(endpoint), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: 'http-test', version: '0.0.0' });
  const updates = watchUpdates(client);
  await client.connect(transport);
  return { client, transport, updates };
}

const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 'raw', version: '0' },
  },
});

function post(endpoint: string, headers: Record<string, string>, body = INITIALIZE) {
  return fetch(endpoint, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...headers,
    },
    body,
  });
}

/** A request with a Host header of our choosing (fetch does not let one set it). */
function postWithHost(endpoint: string, host: string, token: string) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const request = httpRequest(
      endpoint,
      {
        method: 'POST',
        headers: {
          host,
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
      },
      (response) => {
        let body = '';
        response.on('data', (chunk) => {
          body += chunk;
        });
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
      },
    );
    request.on('error', reject);
    request.end(INITIALIZE);
  });
}

describe('Streamable HTTP endpoint', () => {
  it('serves a real client: tools as the token’s runtime, updates over the GET stream, DELETE ends the session', async () => {
    const openclaw = await hub.mint('openclaw');
    await withEndpoint(handlerOptions(), async (endpoint, handler) => {
      const { client, transport, updates } = await connect(endpoint, openclaw);
      expect(handler.sessionCount).toBe(1);
      expect(transport.sessionId).toMatch(/^[0-9a-f-]{36}$/);

      const written = await client.callTool({
        name: 'context_write',
        arguments: { type: 'discovery', title: 'Written over Streamable HTTP' },
      });
      expect((written.structuredContent as { item: { runtime: string } }).item.runtime).toBe(
        'openclaw',
      );
      const shared = await client.callTool({ name: 'context_shared', arguments: {} });
      expect((shared.structuredContent as { format: string }).format).toBe('text');
      expect(textOf(shared)).toContain('Written over Streamable HTTP');

      await client.subscribeResource({ uri: 'team-context://current' });
      await hub.client.write({ type: 'alert', title: 'Pushed to the HTTP session' });
      await updates.nextUpdate('team-context://current');

      await transport.terminateSession();
      expect(handler.sessionCount).toBe(0);
      await client.close();
    });
  });

  it('answers 401 with a JSON body to a request without a valid bearer token', async () => {
    await withEndpoint(handlerOptions(), async (endpoint, handler) => {
      const missing = await post(endpoint, {});
      expect(missing.status).toBe(401);
      expect(missing.headers.get('www-authenticate')).toBe('Bearer realm="ctxbus"');
      expect(await missing.json()).toMatchObject({
        jsonrpc: '2.0',
        error: { message: expect.stringMatching(/Authorization: Bearer <token>/) },
      });

      const wrong = await post(endpoint, { authorization: 'Bearer cbx_not-a-token' });
      expect(wrong.status).toBe(401);
      expect(await wrong.json()).toMatchObject({
        error: {
          message: expect.stringMatching(/unknown or revoked/),
          data: { code: 'unauthorized' },
        },
      });
      expect(handler.sessionCount).toBe(0);
    });
  });

  it('refuses a Host header that is not allowed (DNS rebinding)', async () => {
    await withEndpoint(handlerOptions(), async (endpoint, handler) => {
      const refused = await postWithHost(endpoint, 'evil.example:7420', hub.token);
      expect(refused.status).toBe(403);
      expect(JSON.parse(refused.body)).toMatchObject({
        error: { message: 'Invalid Host header: evil.example:7420' },
      });
      const allowed = await postWithHost(endpoint, 'localhost:7420', hub.token);
      expect(allowed.status).toBe(200);
      expect(handler.sessionCount).toBe(1);
    });
    await withEndpoint(handlerOptions({ allowedHosts: ['ctxbus.internal'] }), async (endpoint) => {
      expect((await postWithHost(endpoint, 'ctxbus.internal', hub.token)).status).toBe(200);
      expect((await postWithHost(endpoint, '127.0.0.1', hub.token)).status).toBe(403);
    });
  });

  it('keeps a session to the token that opened it, and routes unknown sessions to 404', async () => {
    await withEndpoint(handlerOptions(), async (endpoint) => {
      const opened = await post(endpoint, { authorization: `Bearer ${hub.token}` });
      await opened.text();
      const sessionId = opened.headers.get('mcp-session-id') ?? '';
      expect(sessionId).not.toBe('');

      const other = await hub.mint('web');
      const stolen = await post(
        endpoint,
        { authorization: `Bearer ${other}`, 'mcp-session-id': sessionId },
        JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
      );
      expect(stolen.status).toBe(403);

      const unknown = await post(
        endpoint,
        { authorization: `Bearer ${hub.token}`, 'mcp-session-id': 'no-such-session' },
        JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
      );
      expect(unknown.status).toBe(404);

      const get = await fetch(endpoint, {
        headers: { authorization: `Bearer ${hub.token}`, accept: 'text/event-stream' },
      });
      expect(get.status).toBe(400);
      const put = await fetch(endpoint, {
        method: 'PUT',
        headers: { authorization: `Bearer ${hub.token}` },
      });
      expect(put.status).toBe(405);
      expect(put.headers.get('allow')).toBe('POST, GET, DELETE');
    });
  });

  it('does not keep a session for a request that is not an initialize', async () => {
    await withEndpoint(handlerOptions(), async (endpoint, handler) => {
      const response = await post(
        endpoint,
        { authorization: `Bearer ${hub.token}` },
        JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      );
      expect(response.status).toBe(400);
      expect(handler.sessionCount).toBe(0);
    });
  });

  it('closes idle sessions, and caps how many are open', async () => {
    await withEndpoint(
      handlerOptions({ idleTimeoutMs: 150, maxSessions: 1 }),
      async (endpoint, handler) => {
        const first = await post(endpoint, { authorization: `Bearer ${hub.token}` });
        await first.text();
        expect(handler.sessionCount).toBe(1);
        const second = await post(endpoint, { authorization: `Bearer ${hub.token}` });
        expect(second.status).toBe(503);
        await second.text();
        await sleep(500);
        expect(handler.sessionCount).toBe(0);
      },
    );
  });

  it("limits sessions per token, closing that token's least recently used idle one; other tokens are unaffected", async () => {
    const flooder = await hub.mint('flooder', 'globex');
    const neighbour = await hub.mint('web');
    await withEndpoint(
      handlerOptions({ maxSessionsPerToken: 3, maxSessions: 10 }),
      async (endpoint, handler) => {
        const { client: kept } = await connect(endpoint, neighbour);
        const opened: string[] = [];
        for (let index = 0; index < 20; index++) {
          const response = await post(endpoint, { authorization: `Bearer ${flooder}` });
          expect(response.status, `flood ${index}`).toBe(200);
          opened.push(response.headers.get('mcp-session-id') ?? '');
          await response.text();
        }
        // The flooder holds its 3 newest sessions; the endpoint's cap (10) was never reached.
        expect(handler.sessionCount).toBe(4);
        const ping = (sessionId: string) =>
          post(
            endpoint,
            {
              authorization: `Bearer ${flooder}`,
              'mcp-session-id': sessionId,
              'mcp-protocol-version': '2025-06-18',
            },
            JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' }),
          ).then(async (response) => {
            await response.text();
            return response.status;
          });
        expect(await ping(opened[0] ?? '')).toBe(404);
        expect(await ping(opened[16] ?? '')).toBe(404);
        for (const sessionId of opened.slice(17)) expect(await ping(sessionId)).toBe(200);
        // The neighbour's session is untouched, and it can open more.
        expect((await kept.listTools()).tools.length).toBeGreaterThan(0);
        const { client: another } = await connect(endpoint, neighbour);
        expect((await another.listTools()).tools.length).toBeGreaterThan(0);
        await kept.close();
        await another.close();
      },
    );
  });

  it('refuses a token whose sessions all have open event streams with 429', async () => {
    const busy = await hub.mint('busy');
    await withEndpoint(handlerOptions({ maxSessionsPerToken: 2 }), async (endpoint) => {
      const streams = [];
      for (let index = 0; index < 2; index++) {
        const { client } = await connect(endpoint, busy);
        // A resource subscription keeps the session's GET event stream open.
        await client.subscribeResource({ uri: 'decisions://recent' });
        streams.push(client);
      }
      const refused = await post(endpoint, { authorization: `Bearer ${busy}` });
      expect(refused.status).toBe(429);
      expect(await refused.json()).toMatchObject({
        error: {
          message: expect.stringMatching(/holds 2 MCP sessions/),
          data: { code: 'limit_reached' },
        },
      });
      for (const client of streams) await client.close();
    });
  });

  it('a session with an open event stream is not idle; close() ends it and its hub stream', async () => {
    await withEndpoint(handlerOptions({ idleTimeoutMs: 150 }), async (endpoint, handler) => {
      const { client } = await connect(endpoint, hub.token);
      await client.subscribeResource({ uri: 'decisions://recent' });
      await sleep(500);
      expect(handler.sessionCount).toBe(1);
      expect(hub.running.hub.services.feed.subscriberCount).toBeGreaterThan(0);
      await handler.close();
      expect(handler.sessionCount).toBe(0);
      const until = Date.now() + 2_000;
      while (hub.running.hub.services.feed.subscriberCount > 0 && Date.now() < until) {
        await sleep(10);
      }
      expect(hub.running.hub.services.feed.subscriberCount).toBe(0);
      await client.close();
    });
  });
});
