import type { AuditRecord, Logger } from '@ctxbus/core';
import {
  CtxbusError,
  DEFAULT_CONFLICT_WINDOW_MS,
  DEFAULT_MAX_BODY_BYTES,
  parseOrThrow,
  silentLogger,
} from '@ctxbus/core';
import type { Store } from '@ctxbus/store';
import type { Context } from 'hono';
import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { cors } from 'hono/cors';
import { HTTPException } from 'hono/http-exception';
import type { z } from 'zod';
import { normalizePublicUrl } from './a2a/a2a-base-url.js';
import { a2aRoutes } from './a2a/a2a-routes.js';
import { TokenVerifier } from './auth.js';
import { adminCallerOf, runtimeCallerOf, viewerOf } from './caller.js';
import type { CapabilitiesOptions } from './capabilities/capabilities-source.js';
import { CapabilitiesSource } from './capabilities/capabilities-source.js';
import type { PresenceOptions } from './capabilities/presence-registry.js';
import { PresenceRegistry } from './capabilities/presence-registry.js';
import { ChangeFeed } from './change-feed.js';
import type { EmbeddingsOptions } from './embeddings/hub-embeddings.js';
import { HubEmbeddings } from './embeddings/hub-embeddings.js';
import type { HubServices } from './hub-services.js';
import type { RetentionOptions } from './lifecycle-sweeper.js';
import { LifecycleSweeper } from './lifecycle-sweeper.js';
import { buildOpenApiDocument } from './openapi-document.js';
import type {
  AnyRouteDefinition,
  RouteAuth,
  RouteDefinition,
  RouteIdentity,
} from './route-definition.js';
import { implement } from './route-definition.js';
import { adminRoutes } from './routes/admin-routes.js';
import { analyticsRoutes } from './routes/analytics-route.js';
import { approvalRoutes } from './routes/approval-routes.js';
import { archiveRoute } from './routes/archive-route.js';
import { auditRoutes } from './routes/audit-routes.js';
import { capabilitiesRoute } from './routes/capabilities-route.js';
import { conflictRoutes } from './routes/conflict-routes.js';
import { contextRoutes } from './routes/context-routes.js';
import { permissionRoutes } from './routes/permission-routes.js';
import { presenceRoutes } from './routes/presence-routes.js';
import { streamRoute } from './routes/stream-route.js';
import { streamWebSocketRoute } from './routes/stream-ws-route.js';
import { subscriptionRoutes } from './routes/subscription-routes.js';
import { taskRoutes } from './routes/task-routes.js';
import type { ApprovalKey } from './tasks/approval-key.js';
import { DEFAULT_APPROVAL_TTL_MS, ephemeralApprovalKey } from './tasks/approval-key.js';
import { AuditAnchor } from './tasks/audit-anchor.js';
import { ClaimWaiters } from './tasks/claim-waiters.js';
import { TaskLifecycle } from './tasks/task-lifecycle.js';
import type { TaskRelayOptions } from './tasks/task-relay.js';
import { TaskRelay } from './tasks/task-relay.js';
import { DEFAULT_TASK_SWEEP_MS, TaskSweeper } from './tasks/task-sweeper.js';
import type { UsageRecorderOptions } from './usage/usage-recorder.js';
import { UsageRecorder } from './usage/usage-recorder.js';
import type { WebhookOptions } from './webhooks/push-dispatcher.js';
import { DEFAULT_WEBHOOK_OPTIONS, PushDispatcher } from './webhooks/push-dispatcher.js';

/**
 * Routes mounted beside the API (the MCP endpoint, for one), without the hub depending on the
 * package that provides them. Mounted before the 404 handler; closed with the hub.
 */
export interface HubExtension {
  name: string;
  mount(app: Hono, services: HubServices): void;
  close?(): Promise<void>;
}

export interface HubOptions {
  store: Store;
  extensions?: readonly HubExtension[];
  logger?: Logger;
  clock?: () => Date;
  version?: string;
  /** Largest accepted request body, in bytes (default 1 MiB). */
  maxBodyBytes?: number;
  validateResponses?: boolean;
  keepAliveSeconds?: number;
  tokenCacheMs?: number;
  /**
   * Bytes of undelivered changes one live stream (SSE or WebSocket) may hold before the hub
   * ends it as a slow reader (default 1 MiB); it resumes by Last-Event-ID without loss.
   */
  maxStreamPendingBytes?: number;
  /** Live streams one token may hold open (default 100); one team's tokens together (1,000). */
  maxStreamsPerToken?: number;
  maxStreamsPerTeam?: number;
  /** Push subscriptions: endpoint policy, retries, timeouts. */
  webhooks?: WebhookOptions;
  /** Deliver push subscriptions from this hub (default true). */
  deliverWebhooks?: boolean;
  /** Item lifecycle: expiry sweeps, age limits, archive or delete. */
  retention?: RetentionOptions;
  /** Run the lifecycle sweeper in this hub (default true). */
  sweep?: boolean;
  /** An embedding provider: hybrid search, and vectors for stored items in the background. */
  embeddings?: EmbeddingsOptions;
  /**
   * The capabilities file (capabilities.yaml): loaded at start, reloaded when it changes.
   * Without it the matrix is empty (and /health says so).
   */
  capabilities?: CapabilitiesOptions;
  /** Presence: the instances a team may announce, the expiry sweep. */
  presence?: PresenceOptions;
  /** Between sweeps for lost leases and tasks past their wait (default 1 s). */
  taskSweepMs?: number;
  /** The task relay's batch and retry delays (task-relay.ts). */
  taskRelay?: TaskRelayOptions;
  /**
   * The hub's public base URL, for the URLs in its A2A Agent Cards. Without it a card names
   * the request's origin when that is a loopback name, and is refused (503) otherwise.
   */
  publicUrl?: string;
  /** The key approvals are signed with (default: one made for this process). */
  approvalKey?: ApprovalKey;
  /** How long an approval request waits for a human, and a signed approval lasts (default 30 min). */
  approvalTtlMs?: number;
  /**
   * A write that takes a key from another runtime's value written this recently, with a
   * different value, raises a conflict item for a person to resolve (default 10 min; 0: never).
   */
  conflictWindowMs?: number;
  /**
   * Where the hub keeps the signed checkpoints that anchor each team's audit chain outside the
   * database (tasks/audit-anchor.ts); beside the approval key. None: the chain alone.
   */
  auditAnchorDir?: string;
  /**
   * Browser origins (`https://app.example.com`) whose pages may call the API and read the
   * stream cross-origin. None by default: only the hub's own dashboard (same origin) can.
   */
  corsOrigins?: readonly string[];
  /** Context analytics: how often the usage recorder writes its counters, and its bound. */
  usage?: UsageRecorderOptions;
}

/** Headers a cross-origin page sends (the token, JSON bodies, the stream's resume point). */
const CORS_ALLOW_HEADERS = ['authorization', 'content-type', 'last-event-id'];

export interface Hub {
  app: Hono;
  services: HubServices;
  routes: readonly AnyRouteDefinition[];
  /** Ends every live stream. The store stays open: its owner closes it. */
  close(): Promise<void>;
}

function errorBody(code: CtxbusError['code'], message: string, details?: unknown) {
  return new CtxbusError(code, message, details === undefined ? {} : { details });
}

/** Query parameters as one string each (repeated ones joined with commas). */
function queryObject(context: Context): Record<string, string> {
  // fromEntries defines own properties: a parameter named __proto__ stays a parameter.
  return Object.fromEntries(
    Object.entries(context.req.queries()).map(([name, values]) => [name, values.join(',')]),
  );
}

async function readJsonBody(context: Context): Promise<unknown> {
  const type = context.req.header('content-type') ?? '';
  if (!/^application\/([\w.+-]*\+)?json\b/i.test(type.trim())) {
    throw errorBody(
      'unsupported_media_type',
      `send the body as application/json (got "${type || 'no content type'}")`,
    );
  }
  const text = await context.req.text();
  if (text.trim() === '') throw errorBody('bad_json', 'the request body is empty; send JSON');
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw errorBody('bad_json', `the request body is not valid JSON: ${(error as Error).message}`);
  }
}

/** Checks the bearer token for each kind of route and says who the handler serves. */
const identify: {
  [A in RouteAuth]: (services: HubServices, authorization?: string) => Promise<RouteIdentity[A]>;
} = {
  public: async () => ({}),
  'any-token': async (services, authorization) => ({
    caller: await services.verifier.verify(authorization),
  }),
  admin: async (services, authorization) => ({
    caller: adminCallerOf(await services.verifier.verify(authorization)),
  }),
  runtime: async (services, authorization) => {
    const caller = runtimeCallerOf(await services.verifier.verify(authorization));
    return { caller, viewer: viewerOf(caller) };
  },
};

function register(app: Hono, route: AnyRouteDefinition, services: HubServices): void {
  app.on(route.method, route.path, (context) => handleRoute(route, services, context));
}

/** Authenticates, parses and runs one request of a route, its handler typed by its auth. */
async function handleRoute<A extends RouteAuth>(
  route: RouteDefinition<z.ZodType, z.ZodType, z.ZodType, A>,
  services: HubServices,
  context: Context,
): Promise<Response> {
  const identity = await identify[route.auth](services, context.req.header('authorization'));
  const params = route.params
    ? parseOrThrow(route.params, context.req.param(), 'params')
    : undefined;
  const query = route.query ? parseOrThrow(route.query, queryObject(context), 'query') : undefined;
  let body: unknown;
  if (route.body) {
    const json = await readJsonBody(context);
    body = route.parseBody ? route.parseBody(json) : parseOrThrow(route.body, json, 'body');
  }
  const result = await route.handler({ params, query, body, services, context, ...identity });
  if (result instanceof Response) return result;
  if (services.validateResponses) {
    const schema = route.responses[result.status];
    const check = schema?.safeParse(result.body);
    if (!schema || !check?.success) {
      services.logger.error(
        { route: route.operationId, status: result.status, issues: check?.error?.issues },
        'response does not match its declared schema',
      );
      throw errorBody(
        'internal',
        `response of ${route.operationId} (${result.status}) does not match its schema`,
      );
    }
  }
  return context.json(result.body as object, result.status as 200);
}

function embeddingsHealth(embeddings: HubEmbeddings) {
  const status = embeddings.embedder?.status();
  return {
    model: embeddings.provider.label,
    embedded: status?.embedded ?? 0,
    refused: status?.refused ?? 0,
    failing: (status?.lastError ?? null) !== null,
  };
}

/**
 * Builds the hub: the route table registered on a Hono app over a store, with auth, the
 * change feed that drives live streams, and the OpenAPI document.
 */
export async function createHub(options: HubOptions): Promise<Hub> {
  const logger = options.logger ?? silentLogger;
  const clock = options.clock ?? (() => new Date());
  const feed = new ChangeFeed({
    store: options.store,
    clock,
    logger,
    ...(options.maxStreamPendingBytes !== undefined && {
      maxPendingBytes: options.maxStreamPendingBytes,
    }),
    ...(options.maxStreamsPerToken !== undefined && {
      maxStreamsPerToken: options.maxStreamsPerToken,
    }),
    ...(options.maxStreamsPerTeam !== undefined && {
      maxStreamsPerTeam: options.maxStreamsPerTeam,
    }),
  });
  const claimWaiters = new ClaimWaiters(feed);
  const capabilities = options.capabilities
    ? await CapabilitiesSource.open(options.capabilities, clock, logger)
    : CapabilitiesSource.none(clock, logger);
  try {
    await feed.start();
  } catch (error) {
    capabilities.close();
    throw error;
  }
  const approvalKey = options.approvalKey ?? ephemeralApprovalKey();
  const auditAnchor =
    options.auditAnchorDir === undefined
      ? null
      : new AuditAnchor({ dir: options.auditAnchorDir, key: approvalKey, clock, logger });
  const onAudit = (teamId: string, records: readonly AuditRecord[]) =>
    auditAnchor?.observe(teamId, records);
  const taskRelay = new TaskRelay(
    {
      store: options.store,
      clock,
      logger,
      committed: (outcomes) => feed.committed(outcomes),
      onAudit,
    },
    options.taskRelay,
  );
  const presence = new PresenceRegistry(options.store, clock, options.presence, logger);
  const services: HubServices = {
    store: options.store,
    feed,
    verifier: new TokenVerifier(options.store, options.tokenCacheMs),
    clock,
    logger,
    version: options.version ?? '0.0.0',
    maxBodyBytes: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
    validateResponses: options.validateResponses ?? false,
    keepAliveSeconds: options.keepAliveSeconds ?? 15,
    webhooks: { ...DEFAULT_WEBHOOK_OPTIONS, ...options.webhooks },
    dispatcher: null,
    embeddings: options.embeddings
      ? new HubEmbeddings(options.store, logger, options.embeddings)
      : null,
    capabilities,
    presence,
    approvalKey,
    auditAnchor,
    approvalTtlMs: options.approvalTtlMs ?? DEFAULT_APPROVAL_TTL_MS,
    conflictWindowMs: options.conflictWindowMs ?? DEFAULT_CONFLICT_WINDOW_MS,
    tasks: new TaskLifecycle({
      store: options.store,
      capabilities,
      presence,
      clock,
      committed: (outcomes) => feed.committed(outcomes),
      relay: taskRelay,
      onAudit,
      waiters: claimWaiters,
    }),
    taskRelay,
    usage: new UsageRecorder(options.store, clock, logger, options.usage),
  };
  if (options.deliverWebhooks ?? true) {
    services.dispatcher = new PushDispatcher(
      options.store,
      feed,
      clock,
      logger,
      `ctxbus/${services.version}`,
      services.webhooks,
    );
  }

  const routes: AnyRouteDefinition[] = [
    ...contextRoutes,
    ...analyticsRoutes,
    streamRoute,
    streamWebSocketRoute,
    archiveRoute,
    ...subscriptionRoutes,
    capabilitiesRoute,
    ...presenceRoutes,
    ...taskRoutes,
    ...a2aRoutes({
      publicUrl: options.publicUrl === undefined ? null : normalizePublicUrl(options.publicUrl),
    }),
    ...approvalRoutes,
    ...permissionRoutes,
    ...conflictRoutes,
    ...auditRoutes,
    ...adminRoutes,
  ];
  let openapi: ReturnType<typeof buildOpenApiDocument> | undefined;
  const systemRoutes = [
    implement('health', {
      summary:
        "Liveness, version, store, newest sequence and the capabilities file's state (no auth)",
      tags: ['system'],
      statuses: { 200: 'The hub is up.' },
      async handler() {
        return {
          status: 200,
          body: {
            status: 'ok',
            version: services.version,
            store: options.store.info.backend,
            seq: await options.store.latestSeq(),
            capabilities: services.capabilities.status(),
            ...(services.embeddings && { embeddings: embeddingsHealth(services.embeddings) }),
          },
        };
      },
    }),
    implement('openapi', {
      summary: 'This API as an OpenAPI 3.1 document',
      tags: ['system'],
      statuses: { 200: 'The document.' },
      handler() {
        // Built on the first request: converting every route's schemas costs ~0.1 s of CPU,
        // which a hub's start (and its first /health) should not wait for.
        openapi ??= buildOpenApiDocument(routes, {
          version: services.version,
          maxBodyBytes: services.maxBodyBytes,
        });
        return { status: 200, body: openapi };
      },
    }),
  ];
  routes.push(...systemRoutes);

  const app = new Hono();
  const tooLarge = (context: Context) =>
    context.json(
      errorBody(
        'payload_too_large',
        `the request body is larger than ${services.maxBodyBytes} bytes`,
        { limit: services.maxBodyBytes },
      ).toJSON(),
      413,
    );
  const limitStream = bodyLimit({ maxSize: services.maxBodyBytes, onError: tooLarge });
  // A declared length is checked from the header alone; only a body of unknown length is
  // counted as it streams (hono's bodyLimit). Checking the header first keeps the request
  // body from being turned into a web stream before the route reads it.
  const limitBody: Parameters<typeof app.use>[1] = async (context, next) => {
    const length = context.req.header('content-length');
    if (length === undefined || context.req.header('transfer-encoding') !== undefined) {
      return limitStream(context, next);
    }
    if (Number(length) > services.maxBodyBytes) return tooLarge(context);
    await next();
  };
  if (options.corsOrigins && options.corsOrigins.length > 0) {
    // Exact origins only, no cookies (the token travels in the Authorization header): an origin
    // not listed gets no CORS headers, so the browser keeps the answer from its page.
    const allowCors = cors({
      origin: [...options.corsOrigins],
      allowMethods: ['GET', 'POST', 'DELETE'],
      allowHeaders: CORS_ALLOW_HEADERS,
      exposeHeaders: ['retry-after', 'allow'],
      maxAge: 600,
    });
    app.use('/api/*', allowCors);
    app.use('/health', allowCors);
  }
  app.use('/api/*', limitBody);
  app.use('/a2a', limitBody);
  app.use('/a2a/*', limitBody);
  for (const route of routes) register(app, route, services);
  for (const extension of options.extensions ?? []) extension.mount(app, services);

  app.notFound((context) => {
    const path = context.req.path;
    const allowed = routes
      .filter((route) => new RegExp(`^${route.path.replace(/:[^/]+/g, '[^/]+')}$`).test(path))
      .map((route) => route.method);
    if (allowed.length > 0) {
      context.header('Allow', [...new Set(allowed)].join(', '));
      return context.json(
        errorBody(
          'method_not_allowed',
          `${context.req.method} is not allowed on ${path}; use ${allowed.join(' or ')}`,
        ).toJSON(),
        405,
      );
    }
    return context.json(
      errorBody('not_found', `no route ${context.req.method} ${path}`).toJSON(),
      404,
    );
  });

  app.onError((error, context) => {
    if (CtxbusError.isInstance(error)) {
      if (error.status >= 500) logger.error({ err: error }, error.message);
      return context.json(error.toJSON(), error.status as 400);
    }
    if (error instanceof HTTPException) {
      return context.json(errorBody('validation_failed', error.message).toJSON(), error.status);
    }
    logger.error({ err: error, path: context.req.path }, 'unhandled error');
    return context.json(errorBody('internal', 'internal error; see the hub log').toJSON(), 500);
  });

  services.dispatcher?.start();
  services.embeddings?.start(feed);
  const sweeper =
    (options.sweep ?? true)
      ? new LifecycleSweeper(options.store, clock, logger, options.retention)
      : null;
  sweeper?.start();
  taskRelay.start();
  const taskSweeper =
    (options.sweep ?? true)
      ? new TaskSweeper(
          { lifecycle: services.tasks, clock, logger },
          options.taskSweepMs ?? DEFAULT_TASK_SWEEP_MS,
        )
      : null;
  taskSweeper?.start();
  const streamGuard = guardStreamTokens(services);
  return {
    app,
    services,
    routes,
    async close() {
      clearInterval(streamGuard);
      await sweeper?.close();
      await taskSweeper?.close();
      claimWaiters.close();
      await taskRelay.close();
      await services.usage.close();
      auditAnchor?.close();
      await services.dispatcher?.close();
      await services.embeddings?.close();
      feed.close();
      services.capabilities.close();
      services.presence.close();
      for (const extension of options.extensions ?? []) await extension.close?.();
    },
  };
}

/**
 * Open streams outlive the request that checked their token: every token-verdict interval,
 * each token that has open streams is read from the store again, and the streams of a token
 * revoked on another hub end (a revocation through this hub ends them at once).
 */
function guardStreamTokens(services: HubServices): NodeJS.Timeout {
  let checking = false;
  const timer = setInterval(() => {
    if (checking) return;
    checking = true;
    void (async () => {
      for (const [hash, tokenId] of services.feed.owners()) {
        if (!(await services.verifier.stillValid(hash))) services.feed.endToken(tokenId);
      }
    })()
      .catch((error: unknown) => services.logger.warn({ err: error }, 'stream token check failed'))
      .finally(() => {
        checking = false;
      });
  }, services.verifier.cacheMs);
  timer.unref();
  return timer;
}
