import type { Readable, Writable } from 'node:stream';
import { createClient } from '@ctxbus/client';
import type { Logger } from '@ctxbus/core/contract';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
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

export interface RunningStdioServer {
  server: McpServer;
  /** Settles once the server has closed: stdin ended, or `close()` was called. */
  closed: Promise<void>;
  close(): Promise<void>;
}

/**
 * Serves the ctxbus MCP server over stdio, the way MCP clients launch local servers
 * (`claude mcp add ctxbus -- ctxbus mcp`). Only protocol messages go to stdout. Closes when
 * stdin ends, i.e. when the client goes away. Throws a `CtxbusError` (validation_failed) when
 * neither the options nor the environment name the hub and the token.
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
  const onEnd = () => {
    close().catch((error: unknown) => {
      logger.warn({ err: error }, 'closing the stdio server failed');
      markClosed();
    });
  };
  // The SDK's stdio transport never notices end of input; a client closes our stdin to stop us.
  stdin.once('end', onEnd);
  stdin.once('close', onEnd);

  await server.connect(transport);
  refuseInvalidParams(transport);
  return { server, closed, close };
}
