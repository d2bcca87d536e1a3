import type { Logger } from '@ctxbus/core';
import type { Store } from '@ctxbus/store';
import type { Hono } from 'hono';
import type { CapabilitiesOptions } from './capabilities/capabilities-source.js';
import type { PresenceOptions } from './capabilities/presence-registry.js';
import type { EmbeddingsOptions } from './embeddings/hub-embeddings.js';
import type { HubServices } from './hub-services.js';
import type { RetentionOptions } from './lifecycle-sweeper.js';
import type { ApprovalKey } from './tasks/approval-key.js';
import type { TaskRelayOptions } from './tasks/task-relay.js';
import type { UsageRecorderOptions } from './usage/usage-recorder.js';
import type { WebhookOptions } from './webhooks/push-dispatcher.js';

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
