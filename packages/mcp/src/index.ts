export type { ContextBackend } from './context-backend.js';
export type { CtxbusMcpServerOptions } from './create-ctxbus-mcp-server.js';
export {
  createCtxbusMcpServer,
  MCP_SERVER_NAME,
  MCP_SERVER_VERSION,
} from './create-ctxbus-mcp-server.js';
export { LOCALHOST_NAMES } from './http-guards.js';
export type { LogLevel } from './logger.js';
export { stderrLogger } from './logger.js';
export type { McpHttpHandler, McpHttpHandlerOptions } from './mcp-http-handler.js';
export { createMcpHttpHandler } from './mcp-http-handler.js';
export { RESUME_WORK_PROMPT } from './prompts/resume-work-prompt.js';
export {
  ACTIVE_TASKS_URI,
  ITEM_URI_TEMPLATE,
  itemUri,
  RECENT_DECISIONS_URI,
  TEAM_CONTEXT_URI,
} from './resources/resource-uris.js';
export { runStdioMain } from './stdio-main.js';
export type { RunningStdioServer, StdioServerOptions } from './stdio-server.js';
export { runStdioServer } from './stdio-server.js';
export { CONTEXT_READ_TOOL } from './tools/context-read-tool.js';
export { CONTEXT_SEARCH_TOOL } from './tools/context-search-tool.js';
export { CONTEXT_SHARED_TOOL } from './tools/context-shared-tool.js';
export { CONTEXT_WRITE_TOOL } from './tools/context-write-tool.js';
export { MEMORY_QUERY_TOOL } from './tools/memory-query-tool.js';
export { MEMORY_WRITE_TOOL } from './tools/memory-write-tool.js';
export { TASK_CREATE_TOOL, TASK_STATUS_TOOL, TASK_UPDATE_TOOL } from './tools/task-tools.js';
