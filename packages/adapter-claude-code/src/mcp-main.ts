// The plugin's MCP server: ctxbus over stdio, bundled whole so it runs from a plugin cache.
import { runStdioMain } from '@ctxbus/mcp';

await runStdioMain();
