// The ctxbus MCP server over stdio for Codex, bundled whole. Codex's config names the hub
// (`--url`); the token is Codex's own, from ctxbus's saved credentials (or
// $CTXBUS_CODEX_TOKEN), never written into Codex's config.toml.
import { runStdioMain } from '@ctxbus/mcp';
import { findHubTarget, hubTargetProblem } from './hub-target.js';

const argv = process.argv.slice(2);
const target = findHubTarget(argv, process.env);
if (target) {
  process.env.CTXBUS_URL = target.url;
  process.env.CTXBUS_TOKEN = target.token;
  await runStdioMain();
} else {
  // Not the CLI's identity (never $CTXBUS_TOKEN): what is missing for Codex's own, said.
  process.stderr.write(`ctxbus-mcp: ${hubTargetProblem(argv, process.env)}\n`);
  process.exit(2);
}
