#!/usr/bin/env node
// `ctxbus-mcp`: the ctxbus MCP server over stdio, configured by CTXBUS_URL and CTXBUS_TOKEN.
// Everything but protocol goes to stderr; the process ends when the client closes stdin.
import { CtxbusError } from '@ctxbus/core/contract';
import { runStdioServer } from './stdio-server.js';

function fail(message: string, exitCode: number): never {
  process.stderr.write(`ctxbus-mcp: ${message}\n`);
  process.exit(exitCode);
}

try {
  const running = await runStdioServer();
  await running.closed;
  // Let pending writes flush; then leave even if a socket to the hub lingers.
  setTimeout(() => process.exit(0), 200).unref();
} catch (error) {
  if (CtxbusError.isInstance(error) && error.code === 'validation_failed') {
    fail(error.message.replace(/pass --\w+ or /, ''), 2);
  }
  fail(error instanceof Error ? error.message : String(error), 1);
}
