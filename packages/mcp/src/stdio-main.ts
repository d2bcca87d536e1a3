import { CtxbusError } from '@ctxbus/core/contract';
import { runStdioServer } from './stdio-server.js';

function fail(message: string, exitCode: number): never {
  process.stderr.write(`ctxbus-mcp: ${message}\n`);
  process.exit(exitCode);
}

/**
 * The ctxbus MCP server over stdio as a program: configured by CTXBUS_URL and CTXBUS_TOKEN,
 * everything but protocol on stderr, exit 0 when the client closes stdin, exit 2 with one line
 * when a setting is missing. Shared by the `ctxbus-mcp` bin and the Claude Code plugin.
 */
export async function runStdioMain(): Promise<void> {
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
}
