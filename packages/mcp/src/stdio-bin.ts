#!/usr/bin/env node
// `ctxbus-mcp`: the ctxbus MCP server over stdio (see runStdioMain).
import { runStdioMain } from './stdio-main.js';

await runStdioMain();
