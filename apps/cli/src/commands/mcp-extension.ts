import { createClient } from '@ctxbus/client';
import type { Logger } from '@ctxbus/core/contract';
import { CtxbusError } from '@ctxbus/core/light';
import type { HubExtension } from '@ctxbus/hub';
import type { McpHttpHandler } from '@ctxbus/mcp';
import { createMcpHttpHandler, LOCALHOST_NAMES } from '@ctxbus/mcp';

/** Where MCP clients connect (Streamable HTTP, session mode). */
export const MCP_PATH = '/mcp';

/**
 * The MCP endpoint of `ctxbus serve`. Each session works through an in-process client: the
 * typed client with `fetch` bound to the hub's own router, so MCP tools get exactly the REST
 * API's validation, auth and isolation, with no network hop.
 */
/** Sessions at `/mcp`: per token, and on the endpoint as a memory bound. */
export interface McpLimits {
  maxSessionsPerToken: number;
  maxSessionsPerTeam: number;
  maxSessions: number;
}

export function mcpExtension(options: {
  host: string;
  logger: Logger;
  limits: McpLimits;
}): HubExtension {
  let handler: McpHttpHandler | null = null;
  const hosts =
    LOCALHOST_NAMES.includes(options.host) || options.host === '::1' ? [] : [options.host];
  return {
    name: 'mcp',
    mount(app, services) {
      handler = createMcpHttpHandler({
        async verifyToken(token) {
          const caller = await services.verifier.verify(`Bearer ${token}`);
          if (caller.role !== 'runtime') {
            throw new CtxbusError(
              'forbidden',
              'MCP needs a runtime token; admin tokens manage tokens only',
            );
          }
          return caller;
        },
        createBackend: (token) =>
          createClient({
            url: 'http://ctxbus.internal',
            token,
            retries: 0,
            fetch: (input, init) =>
              Promise.resolve(app.request(input instanceof Request ? input : String(input), init)),
          }),
        allowedHosts: [...LOCALHOST_NAMES, ...hosts],
        logger: options.logger,
        maxRequestBodyBytes: services.maxBodyBytes,
        maxSessionsPerToken: options.limits.maxSessionsPerToken,
        maxSessionsPerTeam: options.limits.maxSessionsPerTeam,
        maxSessions: options.limits.maxSessions,
      });
      const mounted = handler;
      app.all(MCP_PATH, (context) => mounted.handle(context.req.raw));
    },
    async close() {
      await handler?.close();
    },
  };
}
