import type {
  AuditEvent,
  AuditRecord,
  AuditVerification,
  ContextItem,
  ListOptions,
  NewContextItem,
  NewTask,
  PresenceInstance,
  Task,
  TaskError,
  Viewer,
} from '@ctxbus/core';
import type {
  DailyUsageRow,
  ItemUsageDelta,
  ItemUsageRow,
  ItemUsageStore,
  MostUsedOptions,
  RuntimeUsageRow,
  UnusedItemRow,
  UnusedItemsOptions,
  UsageWindow,
  UsedItemRow,
} from './item-usage.js';
import type {
  ArchivedItem,
  AuditLog,
  Change,
  ChangeLog,
  ClaimTaskOptions,
  CompleteTaskOptions,
  CreateTaskOutcome,
  DeadLetter,
  EmbeddingSource,
  ExpireKeyOptions,
  ExpireTasksOptions,
  FailTaskOptions,
  ItemLifecycle,
  ItemStore,
  ItemVector,
  LeaseHolderOptions,
  ListAuditOptions,
  ListSubscriptionsOptions,
  ListTasksOptions,
  ListTokensOptions,
  PresenceAnnouncement,
  PresenceStore,
  ReadChangesOptions,
  RelayedTaskBatch,
  SearchHit,
  SearchOptions,
  Store,
  StoreInfo,
  SubscriptionProgress,
  SubscriptionRecord,
  SubscriptionStore,
  SweepOptions,
  SweepResult,
  TaskEventAudit,
  TaskFilter,
  TaskOutboxEvent,
  TaskRelayCursor,
  TaskStore,
  TaskTransition,
  TaskWithHistory,
  TokenRecord,
  TokenStore,
  UpdateTaskPatch,
  VectorHit,
  VectorSearchOptions,
  VectorStore,
  VerifyAuditOptions,
  WriteOutcome,
} from './store.js';
import { assertSameCreate } from './write/task-rules.js';

/** The objects a backend is made of: one per domain of the contract. */
export interface StoreDomains {
  items: ItemStore;
  changes: ChangeLog;
  vectors: VectorStore;
  lifecycle: ItemLifecycle;
  subscriptions: SubscriptionStore;
  tokens: TokenStore;
  tasks: TaskStore;
  audit: AuditLog;
  presence: PresenceStore;
  usage: ItemUsageStore;
}

/**
 * A Store as a composition: each method goes to its domain's object, so a backend writes
 * only its domains, `info` and `close` (and `watchChanges` when it has one).
 */
export abstract class ComposedStore implements Store {
  abstract readonly info: StoreInfo;
  abstract readonly clock: () => Date;
  protected abstract readonly domains: StoreDomains;

  abstract close(): Promise<void>;

  writeItems(items: readonly NewContextItem[]): Promise<WriteOutcome[]> {
    return this.domains.items.writeItems(items);
  }

  getItem(viewer: Viewer, id: string): Promise<ContextItem | null> {
    return this.domains.items.getItem(viewer, id);
  }

  listItems(viewer: Viewer, options: ListOptions): Promise<ContextItem[]> {
    return this.domains.items.listItems(viewer, options);
  }

  searchItems(viewer: Viewer, options: SearchOptions): Promise<SearchHit[]> {
    return this.domains.items.searchItems(viewer, options);
  }

  consumeItem(viewer: Viewer, id: string): Promise<ContextItem | null> {
    return this.domains.items.consumeItem(viewer, id);
  }

  readChanges(options: ReadChangesOptions): Promise<Change[]> {
    return this.domains.changes.readChanges(options);
  }

  latestSeq(): Promise<number> {
    return this.domains.changes.latestSeq();
  }

  itemsToEmbed(
    model: string,
    options: { afterSeq: number; limit: number },
  ): Promise<EmbeddingSource[]> {
    return this.domains.vectors.itemsToEmbed(model, options);
  }

  saveVectors(model: string, vectors: readonly ItemVector[]): Promise<void> {
    return this.domains.vectors.saveVectors(model, vectors);
  }

  vectorSearch(viewer: Viewer, options: VectorSearchOptions): Promise<VectorHit[]> {
    return this.domains.vectors.vectorSearch(viewer, options);
  }

  sweepItems(options: SweepOptions): Promise<SweepResult> {
    return this.domains.lifecycle.sweepItems(options);
  }

  expireKey(viewer: Viewer, key: string, options: ExpireKeyOptions): Promise<number> {
    return this.domains.lifecycle.expireKey(viewer, key, options);
  }

  listArchivedItems(
    viewer: Viewer,
    options: { limit: number; beforeArchiveId?: number },
  ): Promise<ArchivedItem[]> {
    return this.domains.lifecycle.listArchivedItems(viewer, options);
  }

  createSubscription(record: SubscriptionRecord, maxPerRuntime?: number): Promise<void> {
    return this.domains.subscriptions.createSubscription(record, maxPerRuntime);
  }

  getSubscription(id: string): Promise<SubscriptionRecord | null> {
    return this.domains.subscriptions.getSubscription(id);
  }

  listSubscriptions(options?: ListSubscriptionsOptions): Promise<SubscriptionRecord[]> {
    return this.domains.subscriptions.listSubscriptions(options);
  }

  deleteSubscription(id: string): Promise<boolean> {
    return this.domains.subscriptions.deleteSubscription(id);
  }

  leaseSubscription(
    id: string,
    holder: string,
    now: string,
    until: string,
  ): Promise<SubscriptionRecord | null> {
    return this.domains.subscriptions.leaseSubscription(id, holder, now, until);
  }

  saveSubscriptionProgress(
    id: string,
    holder: string | null,
    progress: SubscriptionProgress,
    now: string,
  ): Promise<boolean> {
    return this.domains.subscriptions.saveSubscriptionProgress(id, holder, progress, now);
  }

  listDeadLetters(
    subscriptionId: string,
    options: { afterSeq?: number; limit: number },
  ): Promise<DeadLetter[]> {
    return this.domains.subscriptions.listDeadLetters(subscriptionId, options);
  }

  createToken(record: TokenRecord): Promise<void> {
    return this.domains.tokens.createToken(record);
  }

  findTokenByHash(hash: string): Promise<TokenRecord | null> {
    return this.domains.tokens.findTokenByHash(hash);
  }

  listTokens(options?: ListTokensOptions): Promise<TokenRecord[]> {
    return this.domains.tokens.listTokens(options);
  }

  revokeToken(id: string): Promise<TokenRecord | null> {
    return this.domains.tokens.revokeToken(id);
  }

  async createTask(teamId: string, task: NewTask): Promise<CreateTaskOutcome> {
    const outcome = await this.domains.tasks.createTask(teamId, task);
    if (outcome.status === 'existing') assertSameCreate(outcome.task, task);
    return outcome;
  }

  getTask(teamId: string, id: string): Promise<TaskWithHistory | null> {
    return this.domains.tasks.getTask(teamId, id);
  }

  listTasks(teamId: string, options: ListTasksOptions): Promise<Task[]> {
    return this.domains.tasks.listTasks(teamId, options);
  }

  countTasks(teamId: string, filter: TaskFilter): Promise<number> {
    return this.domains.tasks.countTasks(teamId, filter);
  }

  claimTask(options: ClaimTaskOptions): Promise<Task | null> {
    return this.domains.tasks.claimTask(options);
  }

  renewLease(
    teamId: string,
    id: string,
    token: number,
    leaseMs: number,
    options?: LeaseHolderOptions,
  ): Promise<Task> {
    return this.domains.tasks.renewLease(teamId, id, token, leaseMs, options);
  }

  startTask(
    teamId: string,
    id: string,
    token: number,
    options?: LeaseHolderOptions,
  ): Promise<Task> {
    return this.domains.tasks.startTask(teamId, id, token, options);
  }

  completeTask(
    teamId: string,
    id: string,
    token: number,
    result: unknown,
    options?: CompleteTaskOptions,
  ): Promise<Task> {
    return this.domains.tasks.completeTask(teamId, id, token, result, options);
  }

  failTask(
    teamId: string,
    id: string,
    token: number,
    error: TaskError,
    options?: FailTaskOptions,
  ): Promise<Task> {
    return this.domains.tasks.failTask(teamId, id, token, error, options);
  }

  updateTask(teamId: string, id: string, patch: UpdateTaskPatch): Promise<Task> {
    return this.domains.tasks.updateTask(teamId, id, patch);
  }

  cancelTask(teamId: string, id: string, by: string, note?: string): Promise<Task> {
    return this.domains.tasks.cancelTask(teamId, id, by, note);
  }

  expireLeases(now: string, options?: ExpireTasksOptions): Promise<TaskTransition[]> {
    return this.domains.tasks.expireLeases(now, options);
  }

  expireWaiting(now: string, options?: ExpireTasksOptions): Promise<TaskTransition[]> {
    return this.domains.tasks.expireWaiting(now, options);
  }

  expireApprovals(now: string, options?: ExpireTasksOptions): Promise<TaskTransition[]> {
    return this.domains.tasks.expireApprovals(now, options);
  }

  listTaskOutbox(afterSeq: number, limit: number): Promise<TaskOutboxEvent[]> {
    return this.domains.tasks.listTaskOutbox(afterSeq, limit);
  }

  taskRelayCursor(): Promise<TaskRelayCursor> {
    return this.domains.tasks.taskRelayCursor();
  }

  derivedIdSecret(): Promise<string> {
    return this.domains.tasks.derivedIdSecret();
  }

  relayTaskBatch(
    limit: number,
    work: (events: readonly TaskOutboxEvent[]) => Promise<readonly TaskEventAudit[]>,
  ): Promise<RelayedTaskBatch | null> {
    return this.domains.tasks.relayTaskBatch(limit, work);
  }

  appendAudit(teamId: string, event: AuditEvent, now: string): Promise<AuditRecord> {
    return this.domains.audit.appendAudit(teamId, event, now);
  }

  appendTaskEventAudits(entries: readonly TaskEventAudit[]): Promise<AuditRecord[][]> {
    return this.domains.audit.appendTaskEventAudits(entries);
  }

  listAudit(teamId: string, options: ListAuditOptions): Promise<AuditRecord[]> {
    return this.domains.audit.listAudit(teamId, options);
  }

  verifyAudit(teamId: string, options?: VerifyAuditOptions): Promise<AuditVerification> {
    return this.domains.audit.verifyAudit(teamId, options);
  }

  announcePresence(announcement: PresenceAnnouncement, maxPerTeam: number): Promise<void> {
    return this.domains.presence.announcePresence(announcement, maxPerTeam);
  }

  leavePresence(
    teamId: string,
    runtime: string,
    instanceId: string,
    now: string,
  ): Promise<boolean> {
    return this.domains.presence.leavePresence(teamId, runtime, instanceId, now);
  }

  listPresence(teamId: string, now: string): Promise<PresenceInstance[]> {
    return this.domains.presence.listPresence(teamId, now);
  }

  sweepPresence(now: string): Promise<number> {
    return this.domains.presence.sweepPresence(now);
  }

  recordItemUsage(deltas: readonly ItemUsageDelta[]): Promise<void> {
    return this.domains.usage.recordItemUsage(deltas);
  }

  dailyUsage(viewer: Viewer, window: UsageWindow): Promise<DailyUsageRow[]> {
    return this.domains.usage.dailyUsage(viewer, window);
  }

  runtimeUsage(viewer: Viewer, window: UsageWindow): Promise<RuntimeUsageRow[]> {
    return this.domains.usage.runtimeUsage(viewer, window);
  }

  topUsedItems(viewer: Viewer, window: UsageWindow & { limit: number }): Promise<ItemUsageRow[]> {
    return this.domains.usage.topUsedItems(viewer, window);
  }

  mostUsedItems(viewer: Viewer, options: MostUsedOptions): Promise<UsedItemRow[]> {
    return this.domains.usage.mostUsedItems(viewer, options);
  }

  unusedItems(
    viewer: Viewer,
    options: UnusedItemsOptions,
  ): Promise<{ total: number; items: UnusedItemRow[] }> {
    return this.domains.usage.unusedItems(viewer, options);
  }

  pruneItemUsage(beforeDay: string): Promise<number> {
    return this.domains.usage.pruneItemUsage(beforeDay);
  }
}
