import type {
  AuditEvent,
  AuditRecord,
  AuditVerification,
  ChangeKind,
  ContextItem,
  ContextType,
  DeliveryMode,
  ItemFilter,
  ListOptions,
  NewContextItem,
  NewTask,
  PresenceInstance,
  PresenceKind,
  SubscriptionEvent,
  SubscriptionFilter,
  Task,
  TaskApproval,
  TaskError,
  TaskEvent,
  TaskState,
  Viewer,
} from '@ctxbus/core';
import { CtxbusError } from '@ctxbus/core';
import type { ItemUsageStore } from './item-usage.js';

export type WriteStatus = 'created' | 'existing';

export interface WriteOutcome {
  item: ContextItem;
  status: WriteStatus;
  /**
   * A created item that replaced another: the replaced item as the write left it, the
   * sequence of its `superseded` change (the change feed hands both on without reading them
   * back), and whether the write named it (`supersedes`) or took over its key (`key`): what
   * the hub's conflict detection reads (last-write-wins, made visible).
   */
  superseded?: { seq: number; item: ContextItem; via: 'supersedes' | 'key' };
}

/** What a change did (core's contract names them). Every change has its own sequence number. */
export type { ChangeKind };

/** One entry of the change feed, with the item as it is now. */
export interface Change {
  seq: number;
  kind: ChangeKind;
  teamId: string;
  item: ContextItem;
}

export interface ReadChangesOptions {
  /** Only changes with a sequence above this. */
  afterSeq: number;
  limit: number;
  /** Only this team's changes (a resuming subscriber); all teams when absent (the fan-out). */
  teamId?: string;
}

export interface SearchOptions extends ItemFilter {
  query: string;
  limit: number;
}

export interface SearchHit {
  item: ContextItem;
  /** Higher is more relevant. */
  score: number;
  /** Best passage, matched terms wrapped in `**`. */
  highlight: string;
}

/** An item waiting for a vector: team-visible, unexpired, with no vector for the model yet. */
export interface EmbeddingSource {
  seq: number;
  id: string;
  title: string;
  summary: string;
  content: string;
  tags: string[];
}

/**
 * A vector to store for an item. Vectors are stored at unit length, so a dot product is the
 * cosine. An empty vector marks an item the provider refused, so it is not offered again.
 */
export interface ItemVector {
  seq: number;
  vector: Float32Array;
}

export interface VectorSearchOptions extends ItemFilter {
  /** Which model's vectors to compare with (an opaque label, e.g. `text-embedding-3-small`). */
  model: string;
  /** The query's vector, any length: it is normalised before comparing. */
  vector: Float32Array;
  limit: number;
}

export interface VectorHit {
  item: ContextItem;
  /** Cosine similarity, -1..1. */
  score: number;
}

/** How a store compares vectors: pgvector's operator, or an exact scan in the store itself. */
export type VectorIndex = 'pgvector' | 'exact';

export type TokenRole = 'admin' | 'runtime';

export interface TokenRecord {
  id: string;
  /** SHA-256 (hex) of the secret; the secret itself is never stored. */
  hash: string;
  role: TokenRole;
  teamId: string | null;
  runtime: string | null;
  label: string | null;
  createdAt: string;
  revokedAt: string | null;
}

export interface ListTokensOptions {
  teamId?: string;
  includeRevoked?: boolean;
}

/** A subscription as stored, with its delivery state. */
export interface SubscriptionRecord {
  /** `sub_` + UUIDv7. */
  id: string;
  teamId: string;
  runtime: string;
  delivery: DeliveryMode;
  endpoint: string | null;
  /** Push: the signing secret (the hub must sign with it, so it is stored as is). */
  secret: string | null;
  label: string | null;
  filter: SubscriptionFilter;
  createdAt: string;
  /**
   * The token that created it (null: created before it was recorded): revoking that token
   * ends it, as it ends the token's live streams.
   */
  tokenId: string | null;
  /** Every change up to this sequence was delivered, acknowledged or dead-lettered. */
  cursor: number;
  /** Push: failed attempts at the change after the cursor (0 when none is failing). */
  attempts: number;
  nextAttemptAt: string | null;
  lastError: string | null;
  delivered: number;
  deadLettered: number;
}

/** A push delivery given up on after its last retry. */
export interface DeadLetter {
  subscriptionId: string;
  seq: number;
  event: SubscriptionEvent;
  itemId: string;
  attempts: number;
  lastError: string;
  failedAt: string;
}

/** What one round of delivery did; see `SubscriptionStore.saveSubscriptionProgress`. */
export interface SubscriptionProgress {
  /** The new cursor; a smaller one than stored is ignored (cursors never move back). */
  cursor: number;
  attempts?: number;
  nextAttemptAt?: string | null;
  lastError?: string | null;
  /** Added to the delivered count. */
  delivered?: number;
  /** Recorded (and counted) in the same transaction. */
  deadLetters?: readonly DeadLetter[];
}

export interface ListSubscriptionsOptions {
  teamId?: string;
  delivery?: DeliveryMode;
}

/** One sweep of the item lifecycle; see `ItemLifecycle.sweepItems`. */
export interface SweepOptions {
  /** Items whose `expiresAt` is at or before this are swept (every type). */
  expiredBefore: string;
  /**
   * Age retention, per type: items created before the cutoff are swept, except the ones that
   * are current knowledge, kept until superseded: decisions, and items holding a key.
   */
  createdBefore?: Partial<Record<ContextType, string>>;
  /** `archive` keeps a copy (see `listArchivedItems`); `delete` removes the item for good. */
  mode: 'archive' | 'delete';
  /** Most items swept in this call. */
  limit: number;
  /** When the sweep happens (archive time). */
  now: string;
}

export interface ExpireKeyOptions {
  /** Items written after this sequence keep their expiry (a value written since). */
  throughSeq: number;
  /** The expiry they get (ISO date-time). */
  at: string;
}

export interface SweepResult {
  expired: number;
  aged: number;
  archived: number;
  /** The limit was reached: more items may be due. */
  more: boolean;
}

/** An item moved out of the live store by a sweep. */
export interface ArchivedItem {
  /** Archive order (increasing). */
  archiveId: number;
  item: ContextItem;
  reason: 'expired' | 'retention';
  archivedAt: string;
}

export interface StoreInfo {
  backend: string;
  schemaVersion: number;
  location: string;
  /** How vector search compares vectors. */
  vectorIndex: VectorIndex;
}

/**
 * Items: writes, reads, search and consumption.
 *
 * - Every change (an item added, consumed, or superseded) gets the next sequence number:
 *   gapless and monotonic, so a reader that has seen N has seen everything up to N.
 * - Reads take a `Viewer`: a team sees only its own items, and private items only when the
 *   viewer is their source runtime. Expired items are never returned.
 * - Writes are atomic per call: a batch is stored whole or not at all.
 */
export interface ItemStore {
  /**
   * Stores items. An id already stored with the same input is returned with status
   * `existing` (idempotent retry); with different input it is a `conflict`. `supersedes` must
   * name a visible item of the same team that nothing else has superseded; writing a `key`
   * held by a live item supersedes that item.
   */
  writeItems(items: readonly NewContextItem[]): Promise<WriteOutcome[]>;

  getItem(viewer: Viewer, id: string): Promise<ContextItem | null>;

  /** Newest first (by sequence). */
  listItems(viewer: Viewer, options: ListOptions): Promise<ContextItem[]>;

  /** Ranked full-text search over title, content, summary and tags. */
  searchItems(viewer: Viewer, options: SearchOptions): Promise<SearchHit[]>;

  /** Records that the viewer's runtime consumed the item; repeating it changes nothing. */
  consumeItem(viewer: Viewer, id: string): Promise<ContextItem | null>;
}

/** The change feed: every change to items, by sequence. */
export interface ChangeLog {
  /** The change feed in sequence order. */
  readChanges(options: ReadChangesOptions): Promise<Change[]>;

  /** The sequence of the newest change (0 when empty). */
  latestSeq(): Promise<number>;

  /**
   * Optional: calls `listener` with the newest committed sequence when changes are committed by
   * any process (for backends several processes write to). A hint only: it may be coalesced,
   * late or lost, so readers catch up by sequence from their own cursor.
   */
  watchChanges?(listener: (seq: number) => void): { close(): void };
}

/** Embedding vectors of items, per model, and search by them. */
export interface VectorStore {
  /**
   * Items with no vector for `model`, in sequence order after `afterSeq`: team-visible and
   * unexpired only (private items never leave their runtime, so they are never embedded).
   */
  itemsToEmbed(
    model: string,
    options: { afterSeq: number; limit: number },
  ): Promise<EmbeddingSource[]>;

  /**
   * Stores vectors for `model` (normalised here). An item's first vector for a model stays:
   * saving another is ignored, as are items gone meanwhile.
   */
  saveVectors(model: string, vectors: readonly ItemVector[]): Promise<void>;

  /**
   * The items nearest to `options.vector` by cosine among those with a vector for the model
   * of the same length, with the same filters and visibility rules as `listItems`.
   */
  vectorSearch(viewer: Viewer, options: VectorSearchOptions): Promise<VectorHit[]>;
}

/** The item lifecycle: sweeping expired and aged items, and the archive they go to. */
export interface ItemLifecycle {
  /**
   * Removes expired items and, with `createdBefore`, items past their type's retention
   * (never a current decision or key holder). Their changes leave the feed; the sequence
   * stays monotonic. With `archive`, each swept item is kept in the archive first.
   */
  sweepItems(options: SweepOptions): Promise<SweepResult>;
  /**
   * Expires at `at` every item holding `key` that the viewer sees (its team's; private ones
   * only of its runtime) up to sequence `throughSeq`, superseded ones included: reads hide them
   * at once and the sweep takes them out like any expired item. An item already expired by
   * `at` is left as it is. Returns how many items it expired.
   */
  expireKey(viewer: Viewer, key: string, options: ExpireKeyOptions): Promise<number>;
  /** Archived items the viewer may see (team, and private ones of its runtime), newest first. */
  listArchivedItems(
    viewer: Viewer,
    options: { limit: number; beforeArchiveId?: number },
  ): Promise<ArchivedItem[]>;
}

/** Subscriptions with their delivery state, and the dead letters of push deliveries. */
export interface SubscriptionStore {
  /**
   * Stores a subscription unless its runtime already holds `maxPerRuntime` of them in its team
   * (then a `validation_failed` error): counted and inserted atomically, so concurrent
   * creates, on any number of hubs, never pass the limit.
   */
  createSubscription(record: SubscriptionRecord, maxPerRuntime?: number): Promise<void>;
  getSubscription(id: string): Promise<SubscriptionRecord | null>;
  /** Oldest first. */
  listSubscriptions(options?: ListSubscriptionsOptions): Promise<SubscriptionRecord[]>;
  /** Removes a subscription with its dead letters; false when there was none. */
  deleteSubscription(id: string): Promise<boolean>;
  /**
   * Takes or renews the right to deliver a subscription until `until`, for `holder` (one hub
   * process): the subscription as stored, its saved progress included, which no other holder
   * moves while the lease runs. Null while another holder's lease runs, or when it is gone.
   */
  leaseSubscription(
    id: string,
    holder: string,
    now: string,
    until: string,
  ): Promise<SubscriptionRecord | null>;
  /**
   * Saves delivery progress atomically: cursor (never moving back), retry state, counters and
   * dead letters. With a `holder`, only while that holder's lease runs (false otherwise);
   * null (pull acknowledgements) skips the lease check. False when the subscription is gone.
   */
  saveSubscriptionProgress(
    id: string,
    holder: string | null,
    progress: SubscriptionProgress,
    now: string,
  ): Promise<boolean>;
  /** Dead letters in sequence order, after `afterSeq`. */
  listDeadLetters(
    subscriptionId: string,
    options: { afterSeq?: number; limit: number },
  ): Promise<DeadLetter[]>;
}

/** API tokens, stored as hashes. */
export interface TokenStore {
  createToken(record: TokenRecord): Promise<void>;
  findTokenByHash(hash: string): Promise<TokenRecord | null>;
  listTokens(options?: ListTokensOptions): Promise<TokenRecord[]>;
  /** Marks a token revoked; returns it, or null when there is no such token. */
  revokeToken(id: string): Promise<TokenRecord | null>;
}

/** A task with its history (oldest event first). */
export interface TaskWithHistory {
  task: Task;
  history: TaskEvent[];
}

export interface CreateTaskOutcome {
  task: Task;
  /** `existing`: a task with the same idempotency key was already stored (and is returned). */
  status: WriteStatus;
}

/** Which of a team's tasks a listing or a count takes. */
export interface TaskFilter {
  states?: readonly TaskState[];
  targetRuntime?: string;
  origin?: string;
}

export interface ListTasksOptions extends TaskFilter {
  limit: number;
  /** `oldest` (default): oldest created first; `newest`: newest created first. */
  order?: 'oldest' | 'newest';
  /** The id of the last task of the previous page: the page continues after it in `order`. */
  after?: string;
}

export interface ClaimTaskOptions {
  /** Only this team's tasks; every team's when absent (a hub-wide worker). */
  teamId?: string;
  /** The worker's runtime: tasks routed to it are claimable. */
  runtime: string;
  /**
   * What the worker can do: tasks routed to no runtime (`targetRuntime` null) are claimable
   * when every required capability is in this list. Absent: only tasks routed to `runtime`.
   */
  capabilities?: readonly string[];
  workerId: string;
  leaseMs: number;
}

/** Who reports on a claimed task: checked against the lease in the same transaction. */
export interface LeaseHolderOptions {
  /**
   * The caller's runtime: refused (forbidden, reason not_lease_holder) unless it is the runtime
   * that claimed the task. Absent: the fencing token alone is checked (the hub always gives it).
   */
  holder?: string;
}

export interface FailTaskOptions extends LeaseHolderOptions {
  /** Put it back in the queue while attempts remain (else, or without it, FAILED). */
  retry?: boolean;
  /** Who reports it (the worker's runtime), kept on the event for the relay (default: `by`). */
  actor?: string;
}

export interface CompleteTaskOptions extends LeaseHolderOptions {
  /** Who reports it (the worker's runtime), kept on the event for the relay (default: `by`). */
  actor?: string;
}

/** What made a task event: the store operation that recorded it. */
export type TaskEventKind =
  | 'created'
  | 'claimed'
  | 'completed'
  | 'failed'
  | 'updated'
  | 'canceled'
  | 'lease-expired'
  | 'wait-expired'
  | 'approval-expired';

/**
 * A task event as the outbox holds it: the event, what made it, who (a runtime, an admin, or
 * the hub for sweeps) and the task as the change left it. The hub's relay derives the task's
 * status item and audit records from this alone.
 */
export interface TaskOutboxEvent {
  event: TaskEvent;
  /** The sequence of the task's event before this one (null: this is its first). */
  previousSeq: number | null;
  teamId: string;
  kind: TaskEventKind;
  actor: string;
  task: Task;
}

/** Where the task relay stands: every event up to `seq` is relayed; `since`: the outbox's start. */
export interface TaskRelayCursor {
  seq: number;
  /** The last event recorded before the outbox existed (those are never relayed). */
  since: number;
}

export interface UpdateTaskPatch {
  /** Any legal move except into WORKING (a claim) or COMPLETED (completeTask, with a result). */
  state: TaskState;
  note?: string;
  by: string;
  /** Required while the task is WORKING: the holder's fencing token. */
  token?: number;
  /** While the task is WORKING: the caller's runtime, which must hold the lease. */
  holder?: string;
  /** Kept on the task when moving to FAILED (default: code `failed`, the note as message). */
  error?: TaskError;
  /**
   * The approval to keep on the task (a request when moving to AUTH_REQUIRED, its answer when
   * leaving it). Entering AUTH_REQUIRED with one: the task waits until its `expiresAt`.
   */
  approval?: TaskApproval;
}

/** A state change a sweep made: the task as it is now, and the event that recorded it. */
export interface TaskTransition {
  task: Task;
  event: TaskEvent;
}

export interface ExpireTasksOptions {
  /** Most tasks changed in this call (default 1,000); call again while it returns that many. */
  limit?: number;
}

/**
 * Tasks: work handed between runtimes, claimed by workers under leases with fencing tokens.
 *
 * - Every read and write is bounded by team (a claim by the team given, when given).
 * - Times come from the store's clock (the `clock` option), except the sweeps, which take
 *   `now` as the item lifecycle's sweep does.
 * - Every state change appends a TaskEvent in the same transaction; states move only as
 *   core's `TASK_TRANSITIONS` allow (`conflict` otherwise), terminal states never change.
 * - A claim moves the oldest claimable task to WORKING with a lease and a fencing token
 *   (random, never the previous one: only the claimer knows it); renew, start, complete and
 *   fail must carry the current token while the lease runs, else `conflict` (reason
 *   `stale_lease`): a worker that lost its lease never overwrites a newer result.
 */
export interface TaskStore {
  /**
   * Stores a task (`task_` + UUIDv7). With an idempotency key already used in the team by the
   * same origin runtime (keys are scoped to the origin: another runtime's key is another task), the
   * stored task is returned with status `existing` (nothing else is compared). Refused with
   * `limit_reached` (429) when its target runtime (per team; no target counts as one) already
   * has the store's cap of waiting tasks (SUBMITTED or AUTH_REQUIRED).
   */
  createTask(teamId: string, task: NewTask): Promise<CreateTaskOutcome>;
  getTask(teamId: string, id: string): Promise<TaskWithHistory | null>;
  /** Oldest first. */
  listTasks(teamId: string, options: ListTasksOptions): Promise<Task[]>;
  /** How many of the team's tasks `filter` takes (a listing's total, before its pages). */
  countTasks(teamId: string, filter: TaskFilter): Promise<number>;
  /**
   * Atomically takes a claimable task: SUBMITTED, not past its wait, and routed to `runtime`
   * (the oldest of those first), else routed to no runtime with every required capability in
   * `capabilities` (the oldest of those): work the router sent here goes before work anyone
   * capable may take. It becomes WORKING with a
   * lease of `leaseMs`, the next fencing token and one more attempt. Null when none is free.
   * Concurrent claimers, on any number of stores over the same database, never get the same
   * task.
   */
  claimTask(options: ClaimTaskOptions): Promise<Task | null>;
  /** Extends the lease to now + `leaseMs`. */
  renewLease(
    teamId: string,
    id: string,
    token: number,
    leaseMs: number,
    options?: LeaseHolderOptions,
  ): Promise<Task>;
  /**
   * The holder is about to start the task's command: its lease records when (`startedAt`; no
   * event, and a repeat keeps the first time). Needs the current token while the lease runs,
   * as renew does. From then on a lease that runs out fails the task (see expireLeases).
   */
  startTask(teamId: string, id: string, token: number, options?: LeaseHolderOptions): Promise<Task>;
  /** WORKING -> COMPLETED with the result; the lease ends. */
  completeTask(
    teamId: string,
    id: string,
    token: number,
    result: unknown,
    options?: CompleteTaskOptions,
  ): Promise<Task>;
  /**
   * WORKING -> FAILED with the error; with `retry` while attempts remain, back to SUBMITTED
   * (a new wait) instead. Retries exhausted: FAILED with code `dead_letter`.
   */
  failTask(
    teamId: string,
    id: string,
    token: number,
    error: TaskError,
    options?: FailTaskOptions,
  ): Promise<Task>;
  /** Any other legal move (INPUT_REQUIRED, AUTH_REQUIRED -> SUBMITTED after approval, ...). */
  updateTask(teamId: string, id: string, patch: UpdateTaskPatch): Promise<Task>;
  /** Any non-terminal state -> CANCELED (the lease ends); a canceled task is returned as is. */
  cancelTask(teamId: string, id: string, by: string, note?: string): Promise<Task>;
  /**
   * WORKING tasks whose lease ran out at `now`. Started ones (startTask) end FAILED with code
   * `worker_lost`: their command may have run, so it never runs twice. The others go back to
   * SUBMITTED (the attempt stays counted), or FAILED with code `dead_letter` once attempts
   * reached maxAttempts.
   */
  expireLeases(now: string, options?: ExpireTasksOptions): Promise<TaskTransition[]>;
  /** SUBMITTED tasks past their wait at `now`: FAILED with code `expired`. */
  expireWaiting(now: string, options?: ExpireTasksOptions): Promise<TaskTransition[]>;
  /**
   * AUTH_REQUIRED tasks whose approval request lapsed at `now` (an unanswered approval is a
   * deny): REJECTED with code `approval_expired`, the approval marked `expired`.
   */
  expireApprovals(now: string, options?: ExpireTasksOptions): Promise<TaskTransition[]>;
  /**
   * The outbox: events after `afterSeq` (every team's, oldest first, at most `limit`), each
   * with what the relay needs. Events recorded before the outbox existed are left out.
   */
  listTaskOutbox(afterSeq: number, limit: number): Promise<TaskOutboxEvent[]>;
  /** The relay's durable cursor. */
  taskRelayCursor(): Promise<TaskRelayCursor>;
  /**
   * A random secret of this database, made with its schema and never shown by a route: the
   * same for every hub on it. The hub keys the ids of the items it writes itself (a task
   * event's status item, a conflict) with it, so that the same write after a crash has the same
   * id while no runtime can compute one first and take it.
   */
  derivedIdSecret(): Promise<string>;
  /**
   * One relay batch, as the only relay of this database while it runs (on PostgreSQL a lock
   * every hub tries; on SQLite one per store): null when another relay holds it. Reads the
   * events past the cursor (at most `limit`); `work` announces them and returns their audit
   * entries; then the records are appended (each event once, as `appendTaskEventAudits`) and
   * the cursor moved past the batch, in one transaction.
   */
  relayTaskBatch(
    limit: number,
    work: (events: readonly TaskOutboxEvent[]) => Promise<readonly TaskEventAudit[]>,
  ): Promise<RelayedTaskBatch | null>;
}

export interface ListAuditOptions {
  /** Only records with a sequence above this (default 0: from the first). */
  afterSeq?: number;
  limit: number;
}

export interface VerifyAuditOptions {
  /** Records read per page (default 1,000): memory stays bounded however long the chain. */
  pageSize?: number;
}

/**
 * The audit log: routing decisions, approvals and executions, per team, append-only and
 * hash-chained (core's `audit-chain.ts`).
 *
 * - Each team's chain is numbered from 1 without gaps; each record's `prevHash` is the hash of
 *   the record before it. An append reads the team's head and writes the next record in one
 *   transaction that excludes every other append of the team, on any number of stores over the
 *   same database: the chain never forks and no sequence is used twice.
 * - Nothing updates or deletes records; a change made to the database by other means is what
 *   `verifyAudit` finds.
 */
/** The audit records one task event becomes (the relay's batch holds several). */
/** What one relay batch did: its events, and the audit records appended per entry. */
export interface RelayedTaskBatch {
  events: number;
  audited: { teamId: string; records: AuditRecord[] }[];
}

export interface TaskEventAudit {
  teamId: string;
  eventSeq: number;
  events: readonly AuditEvent[];
  /** When they are recorded (ISO). */
  now: string;
}

export interface AuditLog {
  /** Validates the event, links it to the team's head and stores it at `now` (ISO). */
  appendAudit(teamId: string, event: AuditEvent, now: string): Promise<AuditRecord>;
  /**
   * Appends the records derived from each task event, all in one transaction (the relay's
   * batch), each event once: its mark (audit_task_events) refuses a second append, which
   * yields [] for that event and writes nothing. The result is per entry, in order.
   */
  appendTaskEventAudits(entries: readonly TaskEventAudit[]): Promise<AuditRecord[][]>;
  /** In sequence order (oldest first). */
  listAudit(teamId: string, options: ListAuditOptions): Promise<AuditRecord[]>;
  /**
   * Reads the team's whole chain in pages and checks it; also that it reaches the head the
   * store keeps (records removed from the end are found too), and that every task event of
   * the team the relay has passed has its records (a hole is `ok: false`).
   */
  verifyAudit(teamId: string, options?: VerifyAuditOptions): Promise<AuditVerification>;
}

/** An instance announcing itself (or renewing), as the store keeps it. */
export interface PresenceAnnouncement {
  teamId: string;
  runtime: string;
  instanceId: string;
  kind: PresenceKind;
  /** Distinct names. */
  capabilities: readonly string[];
  capacity: number;
  /** The announcing hub's clock: the instance's `lastSeen`. */
  now: string;
  /** When it lapses unless announced again. */
  expiresAt: string;
}

/**
 * Who is connected, per team, shared by every hub (and process) on the database: workers and
 * adapters announce themselves with an expiry and announce again to stay. Every call takes
 * the caller's `now`: an instance whose `expiresAt` is at or before it is gone (never listed,
 * never renewed, not counted), and expired rows are deleted as announces pass by.
 */
export interface PresenceStore {
  /**
   * Inserts or renews an instance (by team and instance id). An instance id live under
   * another runtime of the team is a `conflict`; a new instance when the team already has
   * `maxPerTeam` live ones is `limit_reached`: counted and inserted atomically, so concurrent
   * announces on any number of hubs never pass the cap.
   */
  announcePresence(announcement: PresenceAnnouncement, maxPerTeam: number): Promise<void>;
  /** Removes a live instance of `runtime`; false when it has none by that id. */
  leavePresence(teamId: string, runtime: string, instanceId: string, now: string): Promise<boolean>;
  /** A team's live instances, by runtime then instance id. */
  listPresence(teamId: string, now: string): Promise<PresenceInstance[]>;
  /** Deletes every expired instance of every team; how many. */
  sweepPresence(now: string): Promise<number>;
}

/** The error of an announce whose instance id another runtime of the team holds. */
export function presenceConflictError(instanceId: string, holder: string): CtxbusError {
  return new CtxbusError(
    'conflict',
    `instance ${instanceId} is announced by runtime ${holder}; pick another instance id`,
  );
}

/** The error of a new instance past the team's cap (the same on every store). */
export function presenceLimitError(teamId: string, limit: number): CtxbusError {
  return new CtxbusError(
    'limit_reached',
    `team ${teamId} has ${limit} live instances, the most a hub keeps; let some expire or leave (DELETE /api/presence/:instanceId)`,
    { details: { limit } },
  );
}

/**
 * The storage contract every backend implements and the conformance suite checks: one
 * interface per domain (each with its own conformance cases in `src/testing/`), composed.
 */
export interface Store
  extends ItemStore,
    ChangeLog,
    VectorStore,
    ItemLifecycle,
    SubscriptionStore,
    TokenStore,
    TaskStore,
    AuditLog,
    PresenceStore,
    ItemUsageStore {
  readonly info: StoreInfo;
  /**
   * The store's time, which its leases, expiries and sweeps go by (a hub takes it as its own):
   * the `clock` option when given; else on SQLite this machine's clock, and on PostgreSQL the
   * database server's (this machine's clock corrected by its measured offset), so hubs sharing
   * a database agree on time whatever their machines' clocks say.
   */
  readonly clock: () => Date;
  /**
   * An error one of the store's calls threw, as the store can say it: a damaged database file
   * as 503 `unavailable` naming the file and what to do (remembered: `damage`); anything else
   * as it was. Stores with nothing to say leave it out.
   */
  explainError?(error: unknown): unknown;
  /** The damage found in the store's database, or null: then /health answers 503 with it. */
  damage?(): CtxbusError | null;
  /** Checks the database's integrity off the event loop: the damage found (remembered), or null. */
  checkIntegrity?(): Promise<CtxbusError | null>;
  close(): Promise<void>;
}

/** The error of a create past the per-runtime limit (the same on every store). */
export function subscriptionLimitError(limit: number): CtxbusError {
  return new CtxbusError(
    'validation_failed',
    `a runtime may hold at most ${limit} subscriptions; delete some first`,
    { details: { limit } },
  );
}

/** Waiting tasks one runtime may have per team, unless the store is given another cap. */
export const DEFAULT_MAX_WAITING_TASKS = 10_000;

/** The error of a task create past the per-runtime cap (the same on every store). */
export function taskLimitError(limit: number, targetRuntime: string | null): CtxbusError {
  const who = targetRuntime === null ? 'unrouted tasks' : `runtime ${targetRuntime}`;
  return new CtxbusError(
    'limit_reached',
    `${who} already has ${limit} tasks waiting; try again once some are claimed`,
    { details: { limit, targetRuntime }, retryable: true },
  );
}
