import type {
  BlackboardEvent,
  ChannelRefusal,
  ContextItemInput,
  CreateSubscriptionRequest,
  CreateTaskRequest,
  DeadLetterInfo,
  ForgetKeyResponse,
  ListParams,
  ListResponse,
  PendingResponse,
  SearchRequest,
  SearchResponse,
  SharedContextResponse,
  StreamEvent,
  Subscription,
  Task,
  TaskError,
  TaskEvent,
  TaskState,
  TokenInfo,
  UpdateTaskRequest,
  WriteResponse,
} from '@ctxbus/core/contract';
import { bearer, CtxbusError } from '@ctxbus/core/contract';
import type { KyInstance } from 'ky';
import ky from 'ky';
import type { HubCall, WireTransport } from './hub-call.js';
import { createHubCall, fetchTransport } from './hub-call.js';
import type { StreamMessage } from './hub-stream.js';
import { parseBlackboardStreamEvent, parseStreamEvent, readHubStream } from './hub-stream.js';

export interface CtxbusClientSettings {
  /** Hub URL; falls back to the CTXBUS_URL environment variable. */
  url?: string;
  /** Bearer token; falls back to CTXBUS_TOKEN. */
  token?: string;
  /** Per-request timeout in ms (default 10 000). Streams have none. */
  timeoutMs?: number;
  /** Retries of idempotent requests on network errors and 5xx (default 1). */
  retries?: number;
  fetch?: typeof fetch;
}

export type { ListParams };

export type StreamParams = Partial<{
  scope: string | string[];
  scopeKey: string;
  type: string | string[];
  tags: string | string[];
  minUrgency: string;
}>;

export interface StreamOptions extends StreamParams {
  /** Resume after this sequence (events after it are replayed first). */
  since?: number;
  signal?: AbortSignal;
  /** Reconnect (resuming by the last event id) when the connection drops; default true. */
  reconnect?: boolean;
  /** Called each time the hub confirms the subscription is live. */
  onReady?: () => void;
  /** Called when the connection drops and the client will reconnect. */
  onReconnect?: (error: unknown) => void;
}

type Env = Record<string, string | undefined>;

function environment(): Env {
  const process = (globalThis as { process?: { env?: Env } }).process;
  return process?.env ?? {};
}

function setting(value: string | undefined, variable: string, what: string, flag: string): string {
  const resolved = value ?? environment()[variable];
  if (!resolved) {
    throw new CtxbusError('validation_failed', `no ${what}: pass ${flag} or set ${variable}`, {
      details: { setting: flag, environmentVariable: variable },
    });
  }
  return resolved;
}

/** The ky instance as a transport: its timeout and retries of idempotent requests apply. */
function kyTransport(http: KyInstance, timeoutMs: number): WireTransport {
  return (request) =>
    http(request.target.slice(1), {
      method: request.method.toLowerCase(),
      ...(request.body !== undefined && { json: request.body }),
      ...(request.headers && { headers: request.headers }),
      ...(request.signal && { signal: request.signal }),
      ...(request.extraTimeoutMs && { timeout: timeoutMs + request.extraTimeoutMs }),
    });
}

const id = (value: string) => ({ id: value });

/**
 * A typed client for one hub and one token. Every method is a call of the wire table
 * (`call(operationId, {params, query, body})`, also public), over ky with a timeout and
 * retries; streams go over plain fetch, with no timeout.
 */
export class CtxbusClient {
  readonly url: string;
  /** Calls any operation of the wire table by its id; the answer is checked by its schema. */
  readonly call: HubCall['call'];
  private readonly streams: HubCall;

  constructor(settings: CtxbusClientSettings = {}) {
    this.url = setting(settings.url, 'CTXBUS_URL', 'hub URL', '--url').replace(/\/+$/, '');
    const token = setting(settings.token, 'CTXBUS_TOKEN', 'token', '--token');
    const fetchImpl = settings.fetch ?? fetch;
    const timeoutMs = settings.timeoutMs ?? 10_000;
    const http = ky.create({
      baseUrl: `${this.url}/`,
      headers: { authorization: bearer(token) },
      timeout: timeoutMs,
      retry: { limit: settings.retries ?? 1 },
      throwHttpErrors: false,
      fetch: fetchImpl,
    });
    this.call = createHubCall({ url: this.url, transport: kyTransport(http, timeoutMs) }).call;
    this.streams = createHubCall({
      url: this.url,
      transport: fetchTransport({ url: this.url, token, fetch: fetchImpl }),
    });
  }

  health() {
    return this.call('health');
  }

  /** Writes one item or a batch (atomic). Items with an id are idempotent. */
  write(items: ContextItemInput | ContextItemInput[]): Promise<WriteResponse> {
    return this.call('writeContext', { body: Array.isArray(items) ? { items } : items });
  }

  list(params: ListParams = {}): Promise<ListResponse> {
    return this.call('listContext', { query: params });
  }

  async get(itemId: string) {
    return (await this.call('getContextItem', { params: id(itemId) })).item;
  }

  /** One item as `runtime` (default: this token's) should inject it: `{format, content, injection}`. */
  async resolve(itemId: string, runtime?: string) {
    return (await this.call('resolveContextItem', { params: id(itemId), query: { runtime } }))
      .resolved;
  }

  /**
   * Removes a key's value and its history (`DELETE /api/context?key=`): what deletes a
   * persistent resource or a blackboard entry. `not_found` when the caller sees no value of it.
   */
  forget(key: string): Promise<ForgetKeyResponse> {
    return this.call('forgetKey', { query: { key } });
  }

  search(request: SearchRequest): Promise<SearchResponse> {
    return this.call('searchContext', { body: request });
  }

  /** The shared bundle; `preview: true` for a look that is not an injection (not in the analytics). */
  shared(
    params: { runtime?: string; tokenBudget?: number; preview?: boolean } = {},
  ): Promise<SharedContextResponse> {
    return this.call('sharedContext', { query: params });
  }

  async consume(itemId: string) {
    return (await this.call('consumeContextItem', { params: id(itemId) })).item;
  }

  /** Reports items put into a turn's context as injected (`POST /api/analytics/injections`). */
  async reportInjections(itemIds: readonly string[]): Promise<number> {
    return (await this.call('reportInjections', { body: { itemIds: [...itemIds] } })).recorded;
  }

  createToken(request: { teamId: string; runtime: string; label?: string }) {
    return this.call('createToken', { body: request });
  }

  async listTokens(params: { team?: string; includeRevoked?: boolean } = {}): Promise<TokenInfo[]> {
    return (await this.call('listTokens', { query: params })).tokens;
  }

  async revokeToken(tokenId: string): Promise<TokenInfo> {
    return (await this.call('revokeToken', { params: id(tokenId) })).token;
  }

  /**
   * Subscribes this runtime: `push` (the hub POSTs signed webhooks to `endpoint`; keep the
   * returned secret to verify them with `verifyWebhook`) or `pull` (read `pending`, `ack`).
   */
  subscribe(
    request: CreateSubscriptionRequest,
  ): Promise<{ subscription: Subscription; secret: string | null }> {
    return this.call('createSubscription', { body: request });
  }

  async subscriptions(): Promise<Subscription[]> {
    return (await this.call('listSubscriptions')).subscriptions;
  }

  async subscription(subscriptionId: string): Promise<Subscription> {
    return (await this.call('getSubscription', { params: id(subscriptionId) })).subscription;
  }

  async unsubscribe(subscriptionId: string): Promise<void> {
    await this.call('deleteSubscription', { params: id(subscriptionId) });
  }

  /** Pull: the matching changes after the cursor; `ack(id, result.next)` once handled. */
  pending(subscriptionId: string, params: { limit?: number } = {}): Promise<PendingResponse> {
    return this.call('pendingChanges', { params: id(subscriptionId), query: params });
  }

  async ack(subscriptionId: string, seq: number): Promise<Subscription> {
    return (await this.call('acknowledgeChanges', { params: id(subscriptionId), body: { seq } }))
      .subscription;
  }

  async deadLetters(
    subscriptionId: string,
    params: { after?: number; limit?: number } = {},
  ): Promise<DeadLetterInfo[]> {
    return (await this.call('listDeadLetters', { params: id(subscriptionId), query: params }))
      .deadLetters;
  }

  /** Hands work to the hub: it routes the task (see `routing`) and stores it. */
  createTask(request: CreateTaskRequest) {
    return this.call('createTask', { body: request });
  }

  /** A task of this team with its history. */
  task(taskId: string): Promise<{ task: Task; history: TaskEvent[] }> {
    return this.call('getTask', { params: id(taskId) });
  }

  tasks(
    params: {
      state?: TaskState[];
      target?: string;
      origin?: string;
      limit?: number;
      /** `newest`: newest created first (default: oldest first). */
      order?: 'oldest' | 'newest';
      after?: string;
    } = {},
  ) {
    return this.call('listTasks', { query: params });
  }

  async cancelTask(taskId: string, note?: string): Promise<Task> {
    const body = note === undefined ? {} : { note };
    return (await this.call('cancelTask', { params: id(taskId), body })).task;
  }

  /**
   * Records progress (the task's current state: the note only; on a WORKING task with the
   * claim's token) or moves the task to SUBMITTED, INPUT_REQUIRED, FAILED or CANCELED. A
   * WORKING task moves only with its fencing token.
   */
  async updateTask(taskId: string, body: UpdateTaskRequest): Promise<Task> {
    return (await this.call('updateTask', { params: id(taskId), body })).task;
  }

  /** Worker: the oldest task routed to this runtime, now WORKING under a lease; null if none. */
  /** Takes a task, or null; with `waitMs`, the hub holds the call until one comes in. */
  async claimTask(body: {
    workerId: string;
    capabilities?: string[];
    leaseMs?: number;
    waitMs?: number;
  }) {
    return (await this.call('claimTask', { body }, { extraTimeoutMs: body.waitMs ?? 0 })).task;
  }

  /** Worker: extends the lease; a `conflict` means the task is someone else's now. */
  async renewTask(taskId: string, body: { token: number; leaseMs?: number }): Promise<Task> {
    return (await this.call('renewTask', { params: id(taskId), body })).task;
  }

  /**
   * Worker: the command is about to start. From then on a lost lease fails the task
   * (`worker_lost`) instead of requeueing it: the command never runs twice.
   */
  async startTask(taskId: string, body: { token: number }): Promise<Task> {
    return (await this.call('startTask', { params: id(taskId), body })).task;
  }

  /** Worker: the latest output of a running command (the origin watches it on its stream). */
  async taskProgress(
    taskId: string,
    body: { token: number; output: string; outputEnd?: number },
  ): Promise<Task> {
    return (await this.call('taskProgress', { params: id(taskId), body })).task;
  }

  async completeTask(taskId: string, body: { token: number; result: unknown }): Promise<Task> {
    return (await this.call('completeTask', { params: id(taskId), body })).task;
  }

  /** Worker: completes the task and claims its next one in the same call (`next`: or null). */
  async completeAndClaim(
    taskId: string,
    body: {
      token: number;
      result: unknown;
      next: { workerId: string; capabilities?: string[]; leaseMs?: number };
    },
  ): Promise<{ task: Task; next: Task | null }> {
    const answer = await this.call('completeTask', { params: id(taskId), body });
    return { task: answer.task, next: answer.next ?? null };
  }

  async failTask(
    taskId: string,
    body: { token: number; error: TaskError; retry?: boolean },
  ): Promise<Task> {
    return (await this.call('failTask', { params: id(taskId), body })).task;
  }

  /** Worker: asks a human to approve the exact command it was refused (the task waits). */
  async requestApproval(
    taskId: string,
    body: {
      token: number;
      request: {
        argv: string[];
        cwd: string;
        scriptHash: string | null;
        because: 'not_allowed' | 'untrusted_origin' | 'runs_code';
      };
      note?: string;
    },
  ): Promise<Task> {
    return (await this.call('requestApproval', { params: id(taskId), body })).task;
  }

  /** A human's answer to a task waiting for approval (admin tokens name the team). */
  async decideTask(
    taskId: string,
    decision: 'approve' | 'deny',
    body: { note?: string; team?: string; digest?: string } = {},
  ) {
    const operation = decision === 'approve' ? 'approveTask' : 'denyTask';
    return (await this.call(operation, { params: id(taskId), body })).task;
  }

  /**
   * A people's channel (an approver runtime) records a decision it refused before asking the
   * hub: the audit log keeps it (approval.refused) beside the hub's own refusals.
   */
  async recordRefusedDecision(
    taskId: string,
    body: {
      decision: 'approve' | 'deny';
      by: string;
      reason: ChannelRefusal;
      message?: string;
    },
  ): Promise<void> {
    await this.call('recordRefusedDecision', { params: id(taskId), body });
  }

  /**
   * Conflicts: keys two runtimes wrote with different values within the hub's window
   * (`status: 'all'` adds the resolved ones).
   */
  async conflicts(params: { status?: 'open' | 'all'; limit?: number } = {}) {
    return (await this.call('listConflicts', { query: params })).conflicts;
  }

  /** A person keeps one value of conflict `id` (only people's runtimes or an admin token). */
  resolveConflict(conflictId: string, body: { keep: string; note?: string; team?: string }) {
    return this.call('resolveConflict', { params: id(conflictId), body });
  }

  /** The hub's public key for verifying approvals. */
  approvalKey() {
    return this.call('approvalKey');
  }

  /**
   * One page of a team's audit log, oldest first (`team`: admin tokens name it; a runtime token
   * reads its own). Next page: `after` = the answer's `nextAfter`.
   */
  listAudit(params: { team?: string; after?: number; limit?: number } = {}) {
    return this.call('listAudit', { query: params });
  }

  /** Checks a team's audit chain end to end: `{ok, records, head}` or `{ok: false, seq, reason}`. */
  verifyAudit(params: { team?: string } = {}) {
    return this.call('verifyAudit', { query: params });
  }

  /** Presence: announces this instance (again, as a heartbeat) so the router counts it. */
  announce(body: {
    instanceId: string;
    kind: 'worker' | 'adapter';
    capabilities?: string[];
    capacity?: number;
    ttlSeconds?: number;
  }) {
    return this.call('announcePresence', { body });
  }

  async leave(instanceId: string): Promise<void> {
    await this.call('leavePresence', { params: { instanceId } });
  }

  /**
   * Live changes as an async iterable. When the connection drops it reconnects with
   * `Last-Event-ID` after a jittered backoff, so no event is missed or repeated. Ends when
   * `signal` aborts; throws on errors that retrying cannot fix (bad token, bad filter). Events
   * of kinds this client does not know are skipped.
   */
  stream(options: StreamOptions = {}): AsyncGenerator<StreamEvent> {
    return this.events(options, {}, parseStreamEvent);
  }

  /**
   * The stream with `blackboard=true`: a blackboard entry's change comes as a
   * `blackboard-updated` event (board, entry, item), every other change as before.
   */
  streamWithBlackboard(options: StreamOptions = {}): AsyncGenerator<StreamEvent | BlackboardEvent> {
    return this.events(options, { blackboard: true }, parseBlackboardStreamEvent);
  }

  private events<T extends { seq: number }>(
    options: StreamOptions,
    extra: { blackboard?: boolean },
    parse: (message: StreamMessage) => T | null,
  ): AsyncGenerator<T> {
    const { since, signal, reconnect, onReady, onReconnect, ...filter } = options;
    return readHubStream({
      hub: this.streams,
      query: { ...filter, ...extra },
      parse,
      ...(since !== undefined && { since }),
      ...(signal && { signal }),
      ...(reconnect !== undefined && { reconnect }),
      onState: (state, cause) => {
        if (state === 'live') onReady?.();
        else if (state === 'reconnecting') onReconnect?.(cause);
      },
    });
  }
}

/** Creates a client; settings fall back to CTXBUS_URL and CTXBUS_TOKEN. */
export function createClient(settings: CtxbusClientSettings = {}): CtxbusClient {
  return new CtxbusClient(settings);
}
