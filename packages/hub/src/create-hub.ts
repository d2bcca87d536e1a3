import type { Hono } from 'hono';
import { createHubApp } from './create-hub-app.js';
import type { HubExtension, HubOptions } from './hub-options.js';
import { hubRoutes } from './hub-routes.js';
import type { HubServices } from './hub-services.js';
import { LifecycleSweeper } from './lifecycle-sweeper.js';
import type { AnyRouteDefinition } from './route-definition.js';
import { DEFAULT_TASK_SWEEP_MS, TaskSweeper } from './tasks/task-sweeper.js';
import type { HubWiring } from './wire-hub-services.js';
import { wireHubServices } from './wire-hub-services.js';

export type { HubExtension, HubOptions };

export interface Hub {
  app: Hono;
  services: HubServices;
  routes: readonly AnyRouteDefinition[];
  /** Ends every live stream. The store stays open: its owner closes it. */
  close(): Promise<void>;
}

/**
 * Builds the hub: the route table registered on a Hono app over a store, with auth, the
 * change feed that drives live streams, and the OpenAPI document.
 */
export async function createHub(options: HubOptions): Promise<Hub> {
  const wiring = await wireHubServices(options);
  const routes = hubRoutes(wiring.services, options);
  const app = createHubApp(wiring.services, routes, options);
  const running = startHub(wiring, options);
  return {
    app,
    services: wiring.services,
    routes,
    close: () => stopHub(wiring, running, options.extensions ?? []),
  };
}

/** What runs in the background once the hub is built, beside its services. */
interface RunningHub {
  sweeper: LifecycleSweeper | null;
  taskSweeper: TaskSweeper | null;
  streamGuard: NodeJS.Timeout;
}

/** Starts the background work: deliveries, embedding, sweeps, the task relay, token checks. */
function startHub({ services }: HubWiring, options: HubOptions): RunningHub {
  const sweep = options.sweep ?? true;
  services.dispatcher?.start();
  services.embeddings?.start(services.feed);
  const sweeper = sweep
    ? new LifecycleSweeper(services.store, services.clock, services.logger, options.retention)
    : null;
  sweeper?.start();
  services.taskRelay.start();
  const taskSweeper = sweep
    ? new TaskSweeper(
        { lifecycle: services.tasks, clock: services.clock, logger: services.logger },
        options.taskSweepMs ?? DEFAULT_TASK_SWEEP_MS,
      )
    : null;
  taskSweeper?.start();
  return { sweeper, taskSweeper, streamGuard: guardStreamTokens(services) };
}

/** Stops what `startHub` started and closes the services, then the extensions. */
async function stopHub(
  { services, claimWaiters }: HubWiring,
  running: RunningHub,
  extensions: readonly HubExtension[],
): Promise<void> {
  clearInterval(running.streamGuard);
  await running.sweeper?.close();
  await running.taskSweeper?.close();
  claimWaiters.close();
  await services.taskRelay.close();
  await services.usage.close();
  services.auditAnchor?.close();
  await services.dispatcher?.close();
  await services.embeddings?.close();
  services.feed.close();
  services.capabilities.close();
  services.presence.close();
  for (const extension of extensions) await extension.close?.();
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
