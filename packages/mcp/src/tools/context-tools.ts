import { contextReadTool } from './context-read-tool.js';
import { contextSearchTool } from './context-search-tool.js';
import { contextSharedTool } from './context-shared-tool.js';
import { contextWriteTool } from './context-write-tool.js';
import { memoryQueryTool } from './memory-query-tool.js';
import { memoryWriteTool } from './memory-write-tool.js';
import { resourceManageTool } from './resource-manage-tool.js';
import { swarmStateTool } from './swarm-state-tool.js';
import { taskCreateTool, taskStatusTool, taskUpdateTool } from './task-tools.js';
import type { ToolContext } from './tool-context.js';
import type { AnyToolDefinition } from './tool-definition.js';

/** Every tool of the ctxbus MCP server, in the order tools/list gives them. */
export function contextTools(context: ToolContext): AnyToolDefinition[] {
  return [
    contextSharedTool(context),
    contextReadTool(context),
    contextSearchTool(context),
    contextWriteTool(context),
    memoryQueryTool(context),
    memoryWriteTool(context),
    taskCreateTool(context),
    taskStatusTool(context),
    taskUpdateTool(context),
    swarmStateTool(context),
    resourceManageTool(context),
  ];
}
