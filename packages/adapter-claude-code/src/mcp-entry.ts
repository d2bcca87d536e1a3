// The file Claude Code runs for the ctxbus MCP server, on whatever `node` it was given. On a
// Node too old for the server it says so on stderr (Claude Code shows it) instead of crashing
// at import; the server is a separate file, loaded only after the check.
const MIN_NODE_MAJOR = 22;

if (Number(process.versions.node.split('.')[0]) < MIN_NODE_MAJOR) {
  process.stderr.write(
    `ctxbus-mcp: needs Node.js ${MIN_NODE_MAJOR} or later (this is ${process.version})\n`,
  );
  process.exitCode = 1;
} else {
  await import(new URL('./ctxbus-mcp-main.js', import.meta.url).href);
}
