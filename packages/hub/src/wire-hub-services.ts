import type { AuditRecord, Logger } from '@ctxbus/core';
import { DEFAULT_CONFLICT_WINDOW_MS, DEFAULT_MAX_BODY_BYTES, silentLogger } from '@ctxbus/core';
import { TokenVerifier } from './auth.js';
import { CapabilitiesSource } from './capabilities/capabilities-source.js';
import { PresenceRegistry } from './capabilities/presence-registry.js';
import { ChangeFeed } from './change-feed.js';
import { HubEmbeddings } from './embeddings/hub-embeddings.js';
import type { HubOptions } from './hub-options.js';
import type { HubServices } from './hub-services.js';
import type { ApprovalKey } from './tasks/approval-key.js';
import { DEFAULT_APPROVAL_TTL_MS, ephemeralApprovalKey } from './tasks/approval-key.js';
import { AuditAnchor } from './tasks/audit-anchor.js';
import { ClaimWaiters } from './tasks/claim-waiters.js';
import { derivedIds } from './tasks/derived-ids.js';
import { TaskLifecycle } from './tasks/task-lifecycle.js';
import { TaskRelay } from './tasks/task-relay.js';
import { UsageRecorder } from './usage/usage-recorder.js';
import { DEFAULT_WEBHOOK_OPTIONS, PushDispatcher } from './webhooks/push-dispatcher.js';

/** The hub's services, and what the hub alone holds beside them (closed with it). */
export interface HubWiring {
  services: HubServices;
  /** Claims parked until a task for them arrives. */
  claimWaiters: ClaimWaiters;
}

/**
 * Wires the hub's services over its store: the change feed (started), the capabilities file,
 * the token verifier, the task relay and lifecycle, presence, embeddings and the push
 * dispatcher. Nothing in the background runs yet but the feed (`startHub` starts the rest).
 */
export async function wireHubServices(options: HubOptions): Promise<HubWiring> {
  const logger = options.logger ?? silentLogger;
  // The store's time (on PostgreSQL, the database's: one time for every hub sharing it).
  const clock = options.clock ?? options.store.clock;
  const feed = changeFeedOf(options, clock, logger);
  const claimWaiters = new ClaimWaiters(feed);
  const capabilities = await openCapabilitiesAndFeed(options, feed, clock, logger);
  const approvalKey = options.approvalKey ?? ephemeralApprovalKey();
  const auditAnchor = auditAnchorOf(options, approvalKey, clock, logger);
  const onAudit = (teamId: string, records: readonly AuditRecord[]) =>
    auditAnchor?.observe(teamId, records);
  const committed: ChangeFeed['committed'] = (outcomes) => feed.committed(outcomes);
  const ids = derivedIds(await options.store.derivedIdSecret());
  const taskRelay = new TaskRelay(
    { store: options.store, clock, logger, ids, committed, onAudit },
    options.taskRelay,
  );
  const presence = new PresenceRegistry(options.store, clock, options.presence, logger);
  const services: HubServices = {
    ...settingsOf(options),
    store: options.store,
    derivedIds: ids,
    feed,
    verifier: new TokenVerifier(options.store, options.tokenCacheMs),
    clock,
    logger,
    dispatcher: null,
    embeddings: options.embeddings
      ? new HubEmbeddings(options.store, logger, options.embeddings)
      : null,
    capabilities,
    presence,
    approvalKey,
    auditAnchor,
    tasks: new TaskLifecycle({
      store: options.store,
      capabilities,
      presence,
      clock,
      committed,
      relay: taskRelay,
      onAudit,
      waiters: claimWaiters,
    }),
    taskRelay,
    usage: new UsageRecorder(options.store, clock, logger, options.usage),
  };
  if (options.deliverWebhooks ?? true) services.dispatcher = pushDispatcherOf(services);
  return { services, claimWaiters };
}

/** The services' plain settings, each option or its default. */
function settingsOf(options: HubOptions) {
  return {
    version: options.version ?? '0.0.0',
    maxBodyBytes: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
    validateResponses: options.validateResponses ?? false,
    keepAliveSeconds: options.keepAliveSeconds ?? 15,
    webhooks: { ...DEFAULT_WEBHOOK_OPTIONS, ...options.webhooks },
    approvalTtlMs: options.approvalTtlMs ?? DEFAULT_APPROVAL_TTL_MS,
    conflictWindowMs: options.conflictWindowMs ?? DEFAULT_CONFLICT_WINDOW_MS,
  } satisfies Partial<HubServices>;
}

function changeFeedOf(options: HubOptions, clock: () => Date, logger: Logger): ChangeFeed {
  return new ChangeFeed({
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
}

/** Loads the capabilities file, then starts the feed (closing the file's watch if it fails). */
async function openCapabilitiesAndFeed(
  options: HubOptions,
  feed: ChangeFeed,
  clock: () => Date,
  logger: Logger,
): Promise<CapabilitiesSource> {
  const capabilities = options.capabilities
    ? await CapabilitiesSource.open(options.capabilities, clock, logger)
    : CapabilitiesSource.none(clock, logger);
  try {
    await feed.start();
  } catch (error) {
    capabilities.close();
    throw error;
  }
  return capabilities;
}

function auditAnchorOf(
  options: HubOptions,
  key: ApprovalKey,
  clock: () => Date,
  logger: Logger,
): AuditAnchor | null {
  return options.auditAnchorDir === undefined
    ? null
    : new AuditAnchor({ dir: options.auditAnchorDir, key, clock, logger });
}

function pushDispatcherOf(services: HubServices): PushDispatcher {
  return new PushDispatcher(
    services.store,
    services.feed,
    services.clock,
    services.logger,
    `ctxbus/${services.version}`,
    services.webhooks,
  );
}
