import type { Logger } from '@ctxbus/core/contract';
import { silentLogger } from '@ctxbus/core/contract';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import packageJson from '../package.json' with { type: 'json' };
import type { ContextBackend } from './context-backend.js';
import { registerResumeWorkPrompt } from './prompts/resume-work-prompt.js';
import { registerResources } from './resources/register-resources.js';
import type { UpdateOptions } from './resources/register-subscriptions.js';
import { registerSubscriptions } from './resources/register-subscriptions.js';
import { contextTools } from './tools/context-tools.js';
import { registerTools } from './tools/tool-registry.js';

export const MCP_SERVER_NAME = 'ctxbus';
export const MCP_SERVER_VERSION: string = packageJson.version;

export interface CtxbusMcpServerOptions {
  /** Where context lives: a `CtxbusClient`, or the hub's in-process backend. */
  backend: ContextBackend;
  /** Runtime the shared bundle is formatted for (default: the runtime of the backend's token). */
  runtime?: string;
  logger?: Logger;
  /** Tuning of resource-update notifications (interval, stream readiness wait). */
  updates?: UpdateOptions;
}

/** Sent at initialization; clients such as Claude Code put server instructions before the model. */
const INSTRUCTIONS = `ctxbus is the shared context of a team of agents (Claude Code, OpenClaw, web UI and others): decisions, discoveries, task status, requests and alerts that every agent reads and writes.
- At the start of a session call context_shared (or read team-context://current) to get oriented.
- Before deciding something, context_search whether it was already decided.
- Write what others need with context_write: decisions, discoveries, status of your task (scopeKey "task:<id>"), requests, alerts. Specific titles, 1-5 topic tags.
- Long-lived knowledge lives under path-like keys: memory_query to recall, memory_write to store or update.
- Work you cannot do yourself (run code elsewhere, another runtime's channel): task_create routes it to a runtime that can; follow it with task_status or task://active, record progress or cancel with task_update.`;

/**
 * An MCP server over one backend (one token: one team and runtime): tools to read, write and
 * search shared context and team memory, resources that notify subscribers when the context
 * changes, and the `resume-work` prompt. Connect it to any transport; closing it stops its
 * live stream (to watch for the close, chain `server.server.onclose`, do not replace it).
 */
export function createCtxbusMcpServer(options: CtxbusMcpServerOptions): McpServer {
  const logger = options.logger ?? silentLogger;
  const server = new McpServer(
    { name: MCP_SERVER_NAME, title: 'ctxbus shared context', version: MCP_SERVER_VERSION },
    {
      // Tools are served by registerTools (which declares them); subscribe is ours to declare;
      // logging lets clients set a level (the SDK keeps it per session).
      capabilities: { resources: { subscribe: true }, prompts: {}, logging: {} },
      instructions: INSTRUCTIONS,
    },
  );
  const shared = { backend: options.backend, logger, runtime: options.runtime };

  registerTools(server, contextTools(shared), logger);
  registerResources(server, shared);
  registerResumeWorkPrompt(server, shared);
  registerSubscriptions(server, { ...shared, updates: options.updates });
  return server;
}
