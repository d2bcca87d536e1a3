import type { IncomingMessage } from 'node:http';
import { STATUS_CODES } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { ErrorCode, Logger } from '@ctxbus/core';
import { CtxbusError, DEFAULT_HUB_HOST, DEFAULT_HUB_PORT, ERROR_CODES } from '@ctxbus/core';
import type { Store } from '@ctxbus/store';
import type { Http2Bindings, HttpBindings, ServerType } from '@hono/node-server';
import { serve } from '@hono/node-server';
import { WebSocketServer } from 'ws';
import type { Hub, HubOptions } from './create-hub.js';
import { createHub } from './create-hub.js';
import { logStoreDamage } from './store-damage.js';

/** The largest WebSocket frame a client may send (the streams read none). */
export const MAX_INBOUND_FRAME_BYTES = 4 * 1024;

export interface StartHubOptions extends HubOptions {
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  /** How long a request may take to arrive whole, headers and body (default 60 s). */
  requestTimeoutMs?: number;
}

export interface RunningHub {
  url: string;
  hub: Hub;
  server: ServerType;
  /** Ends live streams and stops listening (the store stays open). */
  close(): Promise<void>;
}

function urlFor(address: AddressInfo): string {
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${host}:${address.port}`;
}

/** How long a request may take to arrive whole, headers and body. */
export const REQUEST_TIMEOUT_MS = 60_000;

/**
 * What Node's HTTP parser refuses before any route sees it (headers over Node's 16 KiB, a
 * request that did not arrive within `timeoutMs`, bytes that are not HTTP), answered in the
 * API's error shape rather than Node's bare status line.
 */
function answerClientError(error: NodeJS.ErrnoException, socket: Duplex, timeoutMs: number): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const [code, message]: [ErrorCode, string] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? ['headers_too_large', 'the request line and headers are larger than the hub takes (16 KiB)']
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? ['request_timeout', `the request did not arrive whole within ${timeoutMs / 1000} s`]
        : ['validation_failed', 'the request is not valid HTTP'];
  const status = ERROR_CODES[code];
  const body = JSON.stringify({ error: { code, message } });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/**
 * Upgrade requests. Only a WebSocket upgrade is one: a request asking for another protocol
 * (`Upgrade: h2c`, which `curl --http2` sends) is served as plain HTTP/1.1 (Node's
 * `shouldUpgradeCallback`; without it, such a request went unanswered). A WebSocket upgrade
 * the hub refuses is answered by the WebSocket server with its status line alone, no body: the
 * body (the API's error shape) is added to that answer on its socket.
 */
function isWebSocketUpgrade(request: IncomingMessage): boolean {
  return request.headers.upgrade?.toLowerCase() === 'websocket';
}

const EMPTY_LENGTH = 'Content-Length: 0';

/** The app's answer; a refused WebSocket upgrade's body goes with the status line it gets. */
async function answer(
  app: Hub['app'],
  request: Request,
  env: HttpBindings | Http2Bindings,
): Promise<Response> {
  const response = await app.fetch(request, env);
  // An upgrade comes with the request and no response object (HTTP/1.1 only).
  const incoming = env.incoming;
  if (env.outgoing !== undefined || !('headersDistinct' in incoming)) return response;
  if (!isWebSocketUpgrade(incoming) || response.status < 400) return response;
  const body = await response.text();
  const socket = incoming.socket;
  const end = socket.end.bind(socket) as (chunk?: unknown) => typeof socket;
  socket.end = ((chunk?: unknown) =>
    typeof chunk === 'string' && chunk.includes(EMPTY_LENGTH)
      ? end(`${chunk.replace(EMPTY_LENGTH, `Content-Length: ${Buffer.byteLength(body)}`)}${body}`)
      : end(chunk)) as typeof socket.end;
  return new Response(body, { status: response.status, headers: response.headers });
}

/**
 * The store's integrity check (a damaged SQLite file), in the background once the hub
 * listens: damage found is logged, and every call and /health answer 503 naming it.
 */
function checkStoreIntegrity(store: Store, logger: Logger): void {
  store.checkIntegrity?.().then(
    (damage) => {
      if (damage) logStoreDamage(logger, damage);
    },
    (error: unknown) => logger.warn({ err: error }, 'the store integrity check could not run'),
  );
}

/** Creates a hub and serves it over HTTP on Node. */
export async function startHub(options: StartHubOptions): Promise<RunningHub> {
  const hub = await createHub(options);
  const host = options.host ?? DEFAULT_HUB_HOST;
  const port = options.port ?? DEFAULT_HUB_PORT;
  // The stream routes ignore what clients send: a frame larger than this closes the socket (1009).
  const sockets = new WebSocketServer({ noServer: true, maxPayload: MAX_INBOUND_FRAME_BYTES });
  // A request must arrive whole within this (Node's default is 300 s): a client sending its
  // body slowly holds a place in the bodies the hub receives at once (create-hub-app.ts).
  // Node looks for late requests every connectionsCheckingInterval (30 s by default).
  const requestTimeout = options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
  const serverOptions = {
    requestTimeout,
    connectionsCheckingInterval: Math.min(30_000, Math.max(100, requestTimeout / 4)),
    shouldUpgradeCallback: isWebSocketUpgrade,
  };
  const listening = new Promise<ServerType>((resolve, reject) => {
    const started = serve(
      {
        fetch: (request, env) => answer(hub.app, request, env),
        hostname: host,
        port,
        serverOptions,
        websocket: { server: sockets },
      },
      () => resolve(started),
    );
    started.once('error', (error: NodeJS.ErrnoException) => {
      // A port held by another process is a conflict (CLI exit 5), not an unreachable hub.
      reject(
        error.code === 'EADDRINUSE'
          ? new CtxbusError(
              'conflict',
              `port ${port} on ${host} is already in use; pick another with --port`,
              { cause: error },
            )
          : new CtxbusError('unavailable', `cannot listen on ${host}:${port}: ${error.message}`, {
              cause: error,
            }),
      );
    });
  });
  let server: ServerType;
  try {
    server = await listening;
  } catch (error) {
    // Nothing listens: stop what createHub started (the change feed, webhook delivery).
    await hub.close();
    sockets.close();
    throw error;
  }
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    hub.services.logger.info(
      { code: error.code, reason: error.message },
      'refused a request the HTTP parser could not read',
    );
    answerClientError(error, socket, requestTimeout);
  });
  checkStoreIntegrity(hub.services.store, hub.services.logger);
  const address = server.address() as AddressInfo;
  return {
    url: urlFor(address),
    hub,
    server,
    async close() {
      await hub.close();
      for (const socket of sockets.clients) socket.terminate();
      sockets.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        if ('closeAllConnections' in server) server.closeAllConnections();
      });
    },
  };
}
