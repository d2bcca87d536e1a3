import type { Readable, Writable } from 'node:stream';
import { createClient } from '@ctxbus/client';
import type { Logger } from '@ctxbus/core/contract';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  isJSONRPCErrorResponse,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import type { ContextBackend } from './context-backend.js';
import { createCtxbusMcpServer } from './create-ctxbus-mcp-server.js';
import { stderrLogger } from './logger.js';
import { refuseInvalidParams } from './request-params.js';

export interface StdioServerOptions {
  /** Hub URL; falls back to CTXBUS_URL. */
  url?: string;
  /** Runtime token; falls back to CTXBUS_TOKEN. */
  token?: string;
  /** Runtime the shared bundle is formatted for (default: the token's runtime). */
  runtime?: string;
  /** Default: warnings and errors as JSON lines on stderr (stdout carries the protocol). */
  logger?: Logger;
  /** Serve this backend instead of a client built from url and token. */
  backend?: ContextBackend;
  stdin?: Readable;
  stdout?: Writable;
}

/** How long the end of stdin waits for the requests read before it to be answered. */
export const STDIN_END_DRAIN_MS = 60_000;

export interface RunningStdioServer {
  server: McpServer;
  /**
   * Settles once the server has closed: stdin ended and every request read before its end was
   * answered (or STDIN_END_DRAIN_MS passed), or `close()` was called.
   */
  closed: Promise<void>;
  close(): Promise<void>;
}

/**
 * Serves the ctxbus MCP server over stdio, the way MCP clients launch local servers
 * (`claude mcp add ctxbus -- ctxbus mcp`). Only protocol messages go to stdout. Closes when
 * stdin ends, i.e. when the client goes away, once the requests read before the end are
 * answered: a script that pipes a write in and closes stdin learns whether it happened. Throws
 * a `CtxbusError` (validation_failed) when neither the options nor the environment name the hub
 * and the token.
 */
export async function runStdioServer(
  options: StdioServerOptions = {},
): Promise<RunningStdioServer> {
  const logger = options.logger ?? stderrLogger('warn');
  const backend =
    options.backend ??
    createClient({
      ...(options.url !== undefined && { url: options.url }),
      ...(options.token !== undefined && { token: options.token }),
    });
  const server = createCtxbusMcpServer({
    backend,
    logger,
    ...(options.runtime !== undefined && { runtime: options.runtime }),
  });
  const stdin = options.stdin ?? process.stdin;
  const transport = new StdioServerTransport(stdin, options.stdout ?? process.stdout);

  let markClosed = () => {};
  const closed = new Promise<void>((resolve) => {
    markClosed = resolve;
  });
  transport.onclose = () => markClosed();
  transport.onerror = (error) =>
    logger.warn({ err: error }, `stdio transport error: ${error.message}`);

  const close = async () => {
    stdin.off('end', onEnd);
    stdin.off('close', onEnd);
    await server.close();
    markClosed();
  };
  let pending: PendingRequests | undefined;
  const onEnd = () => {
    stdin.off('end', onEnd);
    stdin.off('close', onEnd);
    (pending?.answered(STDIN_END_DRAIN_MS) ?? Promise.resolve())
      .then(close)
      .catch((error: unknown) => {
        logger.warn({ err: error }, 'closing the stdio server failed');
        markClosed();
      });
  };
  // The SDK's stdio transport never notices end of input; a client closes our stdin to stop us.
  stdin.once('end', onEnd);
  stdin.once('close', onEnd);

  await server.connect(transport);
  refuseInvalidParams(transport);
  pending = trackPending(transport);
  return { server, closed, close };
}

interface PendingRequests {
  /** Settles once every request read so far has its answer sent, or after `ms`. */
  answered(ms: number): Promise<void>;
}

/**
 * Counts the requests a connected transport delivered and has not answered yet (call it last:
 * its handler must see every request first, refused ones included).
 */
function trackPending(transport: Transport): PendingRequests {
  const ids = new Set<RequestId>();
  let drained = () => {};
  const deliver = transport.onmessage;
  transport.onmessage = (message, extra) => {
    if (isJSONRPCRequest(message)) ids.add(message.id);
    deliver?.call(transport, message, extra);
  };
  const send = transport.send.bind(transport);
  transport.send = async (message, options) => {
    try {
      await send(message, options);
    } finally {
      const answer = isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message);
      if (answer && message.id !== undefined && ids.delete(message.id) && ids.size === 0) {
        drained();
      }
    }
  };
  return {
    answered(ms) {
      if (ids.size === 0) return Promise.resolve();
      return new Promise((resolve) => {
        const timer = setTimeout(resolve, ms);
        drained = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    },
  };
}
