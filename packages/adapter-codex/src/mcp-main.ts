// The ctxbus MCP server over stdio for Codex, bundled whole. Codex's config names the hub
// (`--url`); the token is Codex's own, from ctxbus's saved credentials (or
// $CTXBUS_CODEX_TOKEN), never written into Codex's config.toml.
import { runStdioMain } from '@ctxbus/mcp';
import { findHubTarget } from './hub-target.js';

const target = findHubTarget(process.argv.slice(2), process.env);
if (target) {
  process.env.CTXBUS_URL = target.url;
  process.env.CTXBUS_TOKEN = target.token;
} else {
  // Not the CLI's identity: without Codex's own token the server says what is missing.
  delete process.env.CTXBUS_TOKEN;
}
await runStdioMain();
