import type { Logger } from '@ctxbus/core/contract';
import { CtxbusError } from '@ctxbus/core/light';
import type { HubExtension, HubServices } from '@ctxbus/hub';
import type { McpHttpHandler } from '@ctxbus/mcp';

type HubApp = Parameters<HubExtension['mount']>[0];

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

/**
 * The endpoint loads the MCP SDK (and its JSON Schema validator) on its first request, not at
 * `ctxbus serve`: the hub answers /health without it, and a hub no MCP client uses never loads it.
 */
export function mcpExtension(options: {
  host: string;
  logger: Logger;
  limits: McpLimits;
}): HubExtension {
  let handler: Promise<McpHttpHandler> | null = null;
  let closed = false;
  const load = (app: HubApp, services: HubServices) => {
    handler ??= createHandler(app, services, options);
    return handler;
  };
  return {
    name: 'mcp',
    mount(app, services) {
      app.all(MCP_PATH, async (context) => {
        if (closed) throw new CtxbusError('unavailable', 'the hub is shutting down');
        return (await load(app, services)).handle(context.req.raw);
      });
    },
    async close() {
      closed = true;
      await (await handler)?.close();
    },
  };
}

async function createHandler(
  app: HubApp,
  services: HubServices,
  options: { host: string; logger: Logger; limits: McpLimits },
): Promise<McpHttpHandler> {
  const [{ createMcpHttpHandler, LOCALHOST_NAMES }, { createClient }] = await Promise.all([
    import('@ctxbus/mcp'),
    import('@ctxbus/client'),
  ]);
  const hosts =
    LOCALHOST_NAMES.includes(options.host) || options.host === '::1' ? [] : [options.host];
  return createMcpHttpHandler({
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
    // A revoked token's sessions end, streams and all, within a verdict interval.
    tokenStillValid: (digestHex) => services.verifier.stillValid(digestHex),
    tokenCheckMs: services.verifier.cacheMs,
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
}
