// The plugin's MCP server: ctxbus over stdio, bundled whole so it runs from a plugin cache. The
// hub and token come from Claude Code's environment (`ctxbus install claude-code`) or, for the
// plugin installed from the marketplace, from ctxbus's saved credentials (see hub-target.ts).
import { runStdioMain } from '@ctxbus/mcp';
import { findHubTarget } from './hub-target.js';

const target = findHubTarget(process.env);
if (target) {
  process.env.CTXBUS_URL = target.url;
  process.env.CTXBUS_TOKEN = target.token;
} else {
  // Not the CLI's identity: without Claude Code's own token the server says what is missing.
  delete process.env.CTXBUS_TOKEN;
}
await runStdioMain();
