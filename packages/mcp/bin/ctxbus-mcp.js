#!/usr/bin/env node
// The `ctxbus-mcp` command: a file that exists before the build, so that installing the
// workspace links it without a warning; the server itself is in dist (see src/stdio-bin.ts).
await import('../dist/stdio-bin.js');
