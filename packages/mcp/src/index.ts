export const MCP_PACKAGE = '@ctxbus/mcp';
