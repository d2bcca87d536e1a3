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

export interface McpEndpointOptions {
  host: string;
  /** The hub's public base URL: its host name is one clients use (`serve --public-url`). */
  publicUrl?: string | null;
  /** Browser origins allowed to call the hub (`serve --cors-origin`). */
  corsOrigins?: readonly string[];
  logger: Logger;
  limits: McpLimits;
}

/**
 * The names clients reach the endpoint by: loopback's, the address the hub listens on (unless
 * a wildcard), and the host of its public URL.
 */
export function mcpAllowedHosts(
  options: Pick<McpEndpointOptions, 'host' | 'publicUrl'>,
  loopback: readonly string[],
): string[] {
  const hosts = new Set(loopback);
  const listen = options.host.includes(':') ? `[${options.host}]` : options.host;
  if (listen !== '0.0.0.0' && listen !== '[::]') hosts.add(listen.toLowerCase());
  if (options.publicUrl) hosts.add(new URL(options.publicUrl).hostname.toLowerCase());
  return [...hosts];
}

/**
 * The endpoint loads the MCP SDK (and its JSON Schema validator) on its first request, not at
 * `ctxbus serve`: the hub answers /health without it, and a hub no MCP client uses never loads it.
 */
export function mcpExtension(options: McpEndpointOptions): HubExtension {
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
  options: McpEndpointOptions,
): Promise<McpHttpHandler> {
  const [{ createMcpHttpHandler, LOCALHOST_NAMES }, { createClient }] = await Promise.all([
    import('@ctxbus/mcp'),
    import('@ctxbus/client'),
  ]);
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
    allowedHosts: mcpAllowedHosts(options, LOCALHOST_NAMES),
    // A browser page may call the endpoint from the hub's own origin or a --cors-origin one;
    // any other Origin is refused (the MCP spec's DNS-rebinding and cross-site defence).
    allowedOrigins: [
      ...(options.corsOrigins ?? []),
      ...(options.publicUrl ? [new URL(options.publicUrl).origin] : []),
    ],
    logger: options.logger,
    maxRequestBodyBytes: services.maxBodyBytes,
    maxSessionsPerToken: options.limits.maxSessionsPerToken,
    maxSessionsPerTeam: options.limits.maxSessionsPerTeam,
    maxSessions: options.limits.maxSessions,
  });
}
