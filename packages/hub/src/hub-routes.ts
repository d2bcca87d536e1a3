import { normalizePublicUrl } from './a2a/a2a-base-url.js';
import { a2aRoutes } from './a2a/a2a-routes.js';
import type { HubEmbeddings } from './embeddings/hub-embeddings.js';
import type { HubOptions } from './hub-options.js';
import type { HubServices } from './hub-services.js';
import { buildOpenApiDocument } from './openapi-document.js';
import type { AnyRouteDefinition } from './route-definition.js';
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

/** Every route the hub serves: the API, then /health and the OpenAPI document that lists them. */
export function hubRoutes(
  services: HubServices,
  options: Pick<HubOptions, 'publicUrl'>,
): AnyRouteDefinition[] {
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
  routes.push(...systemRoutes(services, routes));
  return routes;
}

/** /health and /openapi.json; the document describes `routes` as they are at its first request. */
function systemRoutes(
  services: HubServices,
  routes: readonly AnyRouteDefinition[],
): AnyRouteDefinition[] {
  let openapi: ReturnType<typeof buildOpenApiDocument> | undefined;
  return [
    implement('health', {
      summary:
        "Liveness, version, store and the capabilities file's state (no auth); the newest sequence with a valid token",
      tags: ['system'],
      statuses: {
        200: 'The hub is up.',
        503: "The store's database file is damaged (the message names it and what to do).",
      },
      async handler({ context }) {
        // A damaged database file (found by a call or the integrity check): 503, named.
        const damage = services.store.damage?.();
        if (damage) throw damage;
        // The sequence counts every team's writes: shown to anyone, it let anyone watch when
        // and how much the hub's teams write. A token of the hub's (its holder can read the
        // sequence from its own writes and streams anyway) is shown it.
        const authorization = context.req.header('authorization');
        const known =
          authorization !== undefined &&
          (await services.verifier.verify(authorization).then(
            () => true,
            () => false,
          ));
        return {
          status: 200,
          body: {
            status: 'ok',
            version: services.version,
            store: services.store.info.backend,
            ...(known && { seq: await services.store.latestSeq() }),
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
