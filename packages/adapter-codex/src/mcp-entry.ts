// The file Codex runs for the ctxbus MCP server (stdio). On a Node too old for the server it
// says so on stderr instead of crashing at import; the server loads only after the check.
const MIN_NODE_MAJOR = 22;

if (Number(process.versions.node.split('.')[0]) < MIN_NODE_MAJOR) {
  process.stderr.write(
    `ctxbus-codex-mcp: needs Node.js ${MIN_NODE_MAJOR} or later (this is ${process.version})\n`,
  );
  process.exitCode = 1;
} else {
  await import(new URL('./ctxbus-codex-mcp-main.js', import.meta.url).href);
}
