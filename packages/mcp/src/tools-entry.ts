// `@ctxbus/mcp/tools`: the ctxbus tools without the MCP SDK, for runtimes that register tools
// natively (the OpenClaw plugin). Same names, descriptions, input rules and results as the MCP
// server's, because they are the same definitions.
export type { ContextBackend } from './context-backend.js';
export { errorMessage } from './error-message.js';
export type { TaskView } from './task-view.js';
export { routingSentence, taskText, toTaskView } from './task-view.js';
export { contextTools } from './tools/context-tools.js';
export type { ToolContext } from './tools/tool-context.js';
export type {
  AnyToolDefinition,
  ToolAnnotations,
  ToolDefinition,
  ToolOutcome,
} from './tools/tool-definition.js';
export { callTool, defineTool, toolInputSchema } from './tools/tool-definition.js';
