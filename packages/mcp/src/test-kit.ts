// Shared by this package's tests: a real hub in process (the test kit's), and MCP clients
// connected the way real ones are. Not part of the build (only index and stdio-bin are).
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { Readable } from 'node:stream';
import type { CtxbusClient } from '@ctxbus/client';
import { createClient } from '@ctxbus/client';
import type { RunningHub } from '@ctxbus/hub';
import { mintToken, startHub } from '@ctxbus/hub';
import type { Store } from '@ctxbus/store';
import { startInProcessHub } from '@ctxbus/test-kit/in-process-hub';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

export interface TestHub {
  url: string;
  store: Store;
  running: RunningHub;
  /** A runtime token of team acme for `runtime` (claude-code by default). */
  token: string;
  client: CtxbusClient;
  mint(runtime: string, teamId?: string): Promise<string>;
  close(): Promise<void>;
}

/** The repository's capabilities.yaml: claude-code runs code, openclaw hands it over. */
export { REPO_CAPABILITIES } from '@ctxbus/test-kit/in-process-hub';

export async function startTestHub(
  runtime = 'claude-code',
  options: { capabilitiesFile?: string } = {},
): Promise<TestHub> {
  const hub = await startInProcessHub(
    { startHub, mintToken },
    {
      tokens: { own: ['acme', runtime] },
      hub: {
        ...(options.capabilitiesFile !== undefined && {
          capabilities: { file: options.capabilitiesFile, pollMs: 0 },
        }),
      },
    },
  );
  return {
    url: hub.url,
    store: hub.store,
    running: hub.running,
    token: hub.tokens.own,
    client: createClient({ url: hub.url, token: hub.tokens.own }),
    mint: async (name, teamId) => (await hub.mint(name, teamId)).token,
    close: () => hub.close(),
  };
}

/** A URL where nothing listens: a port the OS handed out and that was closed again. */
export async function closedPortUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 9;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

export interface ConnectedClient {
  client: Client;
  /** URIs of every `notifications/resources/updated` received, in order. */
  updates: string[];
  /** Resolves with the next update for `uri` (one already received and not yet awaited counts). */
  nextUpdate(uri: string, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** Tracks resource-update notifications on a client. */
export function watchUpdates(client: Client): Omit<ConnectedClient, 'client' | 'close'> {
  const updates: string[] = [];
  let seen = 0;
  const waiters: (() => void)[] = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => {
    updates.push(notification.params.uri);
    for (const wake of waiters.splice(0)) wake();
  });
  return {
    updates,
    nextUpdate(uri, timeoutMs = 90_000) {
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () =>
            reject(new Error(`no notifications/resources/updated for ${uri} in ${timeoutMs} ms`)),
          timeoutMs,
        );
        const check = () => {
          const index = updates.indexOf(uri, seen);
          if (index >= 0) {
            seen = index + 1;
            clearTimeout(timer);
            resolve();
          } else {
            waiters.push(check);
          }
        };
        check();
      });
    },
  };
}

/** A real SDK client connected to `server` over a linked in-memory transport pair. */
export async function connectInMemory(server: McpServer): Promise<ConnectedClient> {
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  const client = new Client({ name: 'ctxbus-test', version: '0.0.0' });
  const watcher = watchUpdates(client);
  await server.connect(serverTransport);
  await client.connect(clientTransport);
  return {
    client,
    ...watcher,
    async close() {
      await client.close();
      await server.close();
    },
  };
}

/** The text of a tool result (its first content block). */
export function textOf(result: unknown): string {
  const content = (result as CallToolResult).content[0];
  return content?.type === 'text' ? content.text : '';
}

/**
 * Hosts a web-standard handler on a plain node:http server, the way @hono/node-server does for
 * the hub: requests become `Request`s (body streamed), responses are streamed back, and a client
 * that goes away cancels the response body.
 */
export async function serveOnNode(
  handle: (request: Request) => Promise<Response>,
): Promise<{ url: string; close(): Promise<void> }> {
  const server = createHttpServer(async (incoming, outgoing) => {
    const headers = new Headers();
    for (let index = 0; index < incoming.rawHeaders.length; index += 2) {
      headers.append(incoming.rawHeaders[index] ?? '', incoming.rawHeaders[index + 1] ?? '');
    }
    const hasBody = incoming.method !== 'GET' && incoming.method !== 'HEAD';
    const request = new Request(`http://${incoming.headers.host ?? 'localhost'}${incoming.url}`, {
      method: incoming.method ?? 'GET',
      headers,
      ...(hasBody && { body: Readable.toWeb(incoming) as ReadableStream, duplex: 'half' }),
    } as RequestInit);
    const response = await handle(request);
    outgoing.writeHead(response.status, Object.fromEntries(response.headers));
    outgoing.flushHeaders();
    if (!response.body) {
      outgoing.end();
      return;
    }
    const reader = response.body.getReader();
    outgoing.on('close', () => {
      reader.cancel().catch(() => {});
    });
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        outgoing.write(value);
      }
    } catch {
      // The client went away.
    }
    outgoing.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A raw JSON-RPC `initialize` request, for tests that speak the wire without an SDK client. */
export const INITIALIZE_REQUEST = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 'raw', version: '0' },
  },
} as const;
