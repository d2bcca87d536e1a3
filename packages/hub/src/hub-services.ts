import type { Logger } from '@ctxbus/core';
import type { Store } from '@ctxbus/store';
import type { TokenVerifier } from './auth.js';
import type { CapabilitiesSource } from './capabilities/capabilities-source.js';
import type { PresenceRegistry } from './capabilities/presence-registry.js';
import type { ChangeFeed } from './change-feed.js';
import type { HubEmbeddings } from './embeddings/hub-embeddings.js';
import type { ApprovalKey } from './tasks/approval-key.js';
import type { AuditAnchor } from './tasks/audit-anchor.js';
import type { DerivedIds } from './tasks/derived-ids.js';
import type { TaskLifecycle } from './tasks/task-lifecycle.js';
import type { TaskRelay } from './tasks/task-relay.js';
import type { UsageRecorder } from './usage/usage-recorder.js';
import type { PushDispatcher, WebhookOptions } from './webhooks/push-dispatcher.js';

/** What route handlers work with. */
export interface HubServices {
  store: Store;
  /** The ids of the items the hub writes itself (task status items, conflicts). */
  derivedIds: DerivedIds;
  feed: ChangeFeed;
  verifier: TokenVerifier;
  clock: () => Date;
  logger: Logger;
  version: string;
  maxBodyBytes: number;
  /** Check every JSON response against its declared schema (tests turn this on). */
  validateResponses: boolean;
  /** Seconds between SSE keep-alive comments. */
  keepAliveSeconds: number;
  webhooks: Required<Omit<WebhookOptions, 'leaseHolder'>> & WebhookOptions;
  /** Delivers push subscriptions (null when this hub does not deliver webhooks). */
  dispatcher: PushDispatcher | null;
  /** The embedding provider and background embedder (null: search is full text only). */
  embeddings: HubEmbeddings | null;
  /** The capability matrix, reloaded when its file changes. */
  capabilities: CapabilitiesSource;
  /** Workers and adapters announced to this hub, per team. */
  presence: PresenceRegistry;
  /** Signs humans' approvals of exact commands. */
  approvalKey: ApprovalKey;
  /** Signs checkpoints of each team's audit chain, outside the database (null: none). */
  auditAnchor: AuditAnchor | null;
  /** How long an approval request waits for an answer, and how long a signed approval lasts. */
  approvalTtlMs: number;
  /** Two runtimes writing one key this close together raise a conflict (0: never). */
  conflictWindowMs: number;
  /** The only way tasks change (each change is one event: announced and audited once). */
  tasks: TaskLifecycle;
  /** Turns task events into status items and audit records (see task-relay.ts). */
  taskRelay: TaskRelay;
  /** Counts what each runtime was injected, consumed and found (context analytics). */
  usage: UsageRecorder;
}
