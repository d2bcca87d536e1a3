import type {
  BlackboardEvent,
  ContextItemInput,
  CreateSubscriptionRequest,
  CreateTaskRequest,
  DeadLetterInfo,
  ErrorCode,
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
import {
  approvalKeyResponseSchema,
  BLACKBOARD_EVENT,
  blackboardEventSchema,
  CtxbusError,
  claimTaskResponseSchema,
  createSubscriptionResponseSchema,
  createTaskResponseSchema,
  createTokenResponseSchema,
  deadLettersResponseSchema,
  ERROR_CODES,
  errorResponseSchema,
  forgetKeyResponseSchema,
  healthResponseSchema,
  isSequenceText,
  itemResponseSchema,
  listAuditResponseSchema,
  listConflictsResponseSchema,
  listResponseSchema,
  listSubscriptionsResponseSchema,
  listTasksResponseSchema,
  pendingResponseSchema,
  presenceAnnounceResponseSchema,
  resolveConflictResponseSchema,
  resolveItemResponseSchema,
  searchResponseSchema,
  sharedResponseSchema,
  streamDisconnectSchema,
  streamEventNames,
  streamEventSchema,
  subscriptionResponseSchema,
  taskResponseSchema,
  taskWithHistoryResponseSchema,
  tokenInfoSchema,
  verifyAuditResponseSchema,
  writeResponseSchema,
} from '@ctxbus/core/contract';
import { createParser } from 'eventsource-parser';
import type { KyInstance } from 'ky';
import ky, { isNetworkError, isTimeoutError } from 'ky';
import { z } from 'zod';

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

function toSearchParams(params: Record<string, unknown>): URLSearchParams {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value === undefined || value === null) continue;
    search.set(name, Array.isArray(value) ? value.join(',') : String(value));
  }
  return search;
}

async function errorFromResponse(response: Response): Promise<CtxbusError> {
  const text = await response.text().catch(() => '');
  let parsed: z.infer<typeof errorResponseSchema> | undefined;
  try {
    parsed = errorResponseSchema.parse(JSON.parse(text));
  } catch {
    parsed = undefined;
  }
  const known = parsed && parsed.error.code in ERROR_CODES;
  const code = (
    known ? parsed?.error.code : response.status >= 500 ? 'unavailable' : 'internal'
  ) as ErrorCode;
  const message =
    parsed?.error.message ?? `the hub answered ${response.status} ${response.statusText}`;
  return new CtxbusError(code, message, {
    details: {
      status: response.status,
      ...(parsed?.error.details !== undefined && { details: parsed.error.details }),
    },
    retryable: response.status >= 500 || response.status === 429,
  });
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });

/** A typed client for one hub and one token. */
export class CtxbusClient {
  readonly url: string;
  private readonly token: string;
  private readonly http: KyInstance;
  private readonly fetchImpl: typeof fetch;
  private readonly timeoutMs: number;

  constructor(settings: CtxbusClientSettings = {}) {
    this.url = setting(settings.url, 'CTXBUS_URL', 'hub URL', '--url').replace(/\/+$/, '');
    this.token = setting(settings.token, 'CTXBUS_TOKEN', 'token', '--token');
    this.fetchImpl = settings.fetch ?? fetch;
    this.timeoutMs = settings.timeoutMs ?? 10_000;
    this.http = ky.create({
      baseUrl: `${this.url}/`,
      headers: { authorization: `Bearer ${this.token}` },
      timeout: this.timeoutMs,
      retry: { limit: settings.retries ?? 1 },
      throwHttpErrors: false,
      fetch: this.fetchImpl,
    });
  }

  private async request<T extends z.ZodType>(
    schema: T,
    method: 'get' | 'post' | 'delete',
    path: string,
    options: { json?: unknown; searchParams?: URLSearchParams; extraTimeoutMs?: number } = {},
  ): Promise<z.output<T>> {
    let response: Response;
    try {
      response = await this.http(path, {
        method,
        ...(options.json !== undefined && { json: options.json }),
        ...(options.searchParams && { searchParams: options.searchParams }),
        ...(options.extraTimeoutMs && { timeout: this.timeoutMs + options.extraTimeoutMs }),
      });
    } catch (error) {
      if (isNetworkError(error) || isTimeoutError(error) || error instanceof TypeError) {
        throw new CtxbusError(
          'unavailable',
          `cannot reach the ctxbus hub at ${this.url}: ${(error as Error).message}`,
          {
            cause: error,
          },
        );
      }
      throw error;
    }
    if (!response.ok) throw await errorFromResponse(response);
    const body: unknown = await response.json();
    const result = schema.safeParse(body);
    if (!result.success) {
      throw new CtxbusError(
        'internal',
        `unexpected response from ${method.toUpperCase()} /${path}: ${result.error.message}`,
      );
    }
    return result.data;
  }

  health() {
    return this.request(healthResponseSchema, 'get', 'health');
  }

  /** Writes one item or a batch (atomic). Items with an id are idempotent. */
  write(items: ContextItemInput | ContextItemInput[]): Promise<WriteResponse> {
    return this.request(writeResponseSchema, 'post', 'api/context', {
      json: Array.isArray(items) ? { items } : items,
    });
  }

  list(params: ListParams = {}): Promise<ListResponse> {
    return this.request(listResponseSchema, 'get', 'api/context', {
      searchParams: toSearchParams(params),
    });
  }

  async get(id: string) {
    return (await this.request(itemResponseSchema, 'get', `api/context/${encodeURIComponent(id)}`))
      .item;
  }

  /** One item as `runtime` (default: this token's) should inject it: `{format, content, injection}`. */
  async resolve(id: string, runtime?: string) {
    const path = `api/context/${encodeURIComponent(id)}/resolved`;
    const searchParams = toSearchParams(runtime === undefined ? {} : { runtime });
    return (await this.request(resolveItemResponseSchema, 'get', path, { searchParams })).resolved;
  }

  /**
   * Removes a key's value and its history (`DELETE /api/context?key=`): what deletes a
   * persistent resource or a blackboard entry. `not_found` when the caller sees no value of it.
   */
  forget(key: string): Promise<ForgetKeyResponse> {
    return this.request(forgetKeyResponseSchema, 'delete', 'api/context', {
      searchParams: toSearchParams({ key }),
    });
  }

  search(request: SearchRequest): Promise<SearchResponse> {
    return this.request(searchResponseSchema, 'post', 'api/context/search', { json: request });
  }

  shared(params: { runtime?: string; tokenBudget?: number } = {}): Promise<SharedContextResponse> {
    return this.request(sharedResponseSchema, 'get', 'api/context/shared', {
      searchParams: toSearchParams(params),
    });
  }

  async consume(id: string) {
    return (
      await this.request(
        itemResponseSchema,
        'post',
        `api/context/${encodeURIComponent(id)}/consume`,
      )
    ).item;
  }

  createToken(request: { teamId: string; runtime: string; label?: string }) {
    return this.request(createTokenResponseSchema, 'post', 'api/admin/tokens', { json: request });
  }

  async listTokens(params: { team?: string; includeRevoked?: boolean } = {}): Promise<TokenInfo[]> {
    const schema = z.object({ tokens: z.array(tokenInfoSchema) });
    return (
      await this.request(schema, 'get', 'api/admin/tokens', {
        searchParams: toSearchParams(params),
      })
    ).tokens;
  }

  async revokeToken(id: string): Promise<TokenInfo> {
    const schema = z.object({ token: tokenInfoSchema });
    return (await this.request(schema, 'delete', `api/admin/tokens/${encodeURIComponent(id)}`))
      .token;
  }

  /**
   * Subscribes this runtime: `push` (the hub POSTs signed webhooks to `endpoint`; keep the
   * returned secret to verify them with `verifyWebhook`) or `pull` (read `pending`, `ack`).
   */
  subscribe(
    request: CreateSubscriptionRequest,
  ): Promise<{ subscription: Subscription; secret: string | null }> {
    return this.request(createSubscriptionResponseSchema, 'post', 'api/subscriptions', {
      json: request,
    });
  }

  async subscriptions(): Promise<Subscription[]> {
    return (await this.request(listSubscriptionsResponseSchema, 'get', 'api/subscriptions'))
      .subscriptions;
  }

  async subscription(id: string): Promise<Subscription> {
    return (await this.request(subscriptionResponseSchema, 'get', subscriptionPath(id)))
      .subscription;
  }

  async unsubscribe(id: string): Promise<void> {
    await this.request(z.object({ deleted: z.literal(true) }), 'delete', subscriptionPath(id));
  }

  /** Pull: the matching changes after the cursor; `ack(id, result.next)` once handled. */
  pending(id: string, params: { limit?: number } = {}): Promise<PendingResponse> {
    return this.request(pendingResponseSchema, 'get', `${subscriptionPath(id)}/pending`, {
      searchParams: toSearchParams(params),
    });
  }

  async ack(id: string, seq: number): Promise<Subscription> {
    return (
      await this.request(subscriptionResponseSchema, 'post', `${subscriptionPath(id)}/ack`, {
        json: { seq },
      })
    ).subscription;
  }

  async deadLetters(
    id: string,
    params: { after?: number; limit?: number } = {},
  ): Promise<DeadLetterInfo[]> {
    return (
      await this.request(deadLettersResponseSchema, 'get', `${subscriptionPath(id)}/dead-letters`, {
        searchParams: toSearchParams(params),
      })
    ).deadLetters;
  }

  /** Hands work to the hub: it routes the task (see `routing`) and stores it. */
  createTask(request: CreateTaskRequest) {
    return this.request(createTaskResponseSchema, 'post', 'api/tasks', { json: request });
  }

  /** A task of this team with its history. */
  task(id: string): Promise<{ task: Task; history: TaskEvent[] }> {
    return this.request(taskWithHistoryResponseSchema, 'get', taskPath(id));
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
    return this.request(listTasksResponseSchema, 'get', 'api/tasks', {
      searchParams: toSearchParams(params),
    });
  }

  async cancelTask(id: string, note?: string): Promise<Task> {
    return (
      await this.request(taskResponseSchema, 'post', `${taskPath(id)}/cancel`, {
        json: note === undefined ? {} : { note },
      })
    ).task;
  }

  /**
   * Records progress (the task's current state: the note only) or moves the task to SUBMITTED,
   * INPUT_REQUIRED, FAILED or CANCELED. A WORKING task moves only with its fencing token.
   */
  async updateTask(id: string, body: UpdateTaskRequest): Promise<Task> {
    return (
      await this.request(taskResponseSchema, 'post', `${taskPath(id)}/update`, { json: body })
    ).task;
  }

  /** Worker: the oldest task routed to this runtime, now WORKING under a lease; null if none. */
  /** Takes a task, or null; with `waitMs`, the hub holds the call until one comes in. */
  async claimTask(body: {
    workerId: string;
    capabilities?: string[];
    leaseMs?: number;
    waitMs?: number;
  }) {
    const options = { json: body, extraTimeoutMs: body.waitMs ?? 0 };
    return (await this.request(claimTaskResponseSchema, 'post', 'api/tasks/claim', options)).task;
  }

  /** Worker: extends the lease; a `conflict` means the task is someone else's now. */
  async renewTask(id: string, body: { token: number; leaseMs?: number }): Promise<Task> {
    return (await this.request(taskResponseSchema, 'post', `${taskPath(id)}/renew`, { json: body }))
      .task;
  }

  /**
   * Worker: the command is about to start. From then on a lost lease fails the task
   * (`worker_lost`) instead of requeueing it: the command never runs twice.
   */
  async startTask(id: string, body: { token: number }): Promise<Task> {
    return (await this.request(taskResponseSchema, 'post', `${taskPath(id)}/start`, { json: body }))
      .task;
  }

  /** Worker: the latest output of a running command (the origin watches it on its stream). */
  async taskProgress(id: string, body: { token: number; output: string }): Promise<Task> {
    return (
      await this.request(taskResponseSchema, 'post', `${taskPath(id)}/progress`, { json: body })
    ).task;
  }

  async completeTask(id: string, body: { token: number; result: unknown }): Promise<Task> {
    return (
      await this.request(taskResponseSchema, 'post', `${taskPath(id)}/complete`, { json: body })
    ).task;
  }

  async failTask(
    id: string,
    body: { token: number; error: TaskError; retry?: boolean },
  ): Promise<Task> {
    return (await this.request(taskResponseSchema, 'post', `${taskPath(id)}/fail`, { json: body }))
      .task;
  }

  /** Worker: asks a human to approve the exact command it was refused (the task waits). */
  async requestApproval(
    id: string,
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
    return (
      await this.request(taskResponseSchema, 'post', `${taskPath(id)}/approval-request`, {
        json: body,
      })
    ).task;
  }

  /** A human's answer to a task waiting for approval (admin tokens name the team). */
  async decideTask(
    id: string,
    decision: 'approve' | 'deny',
    body: { note?: string; team?: string; digest?: string } = {},
  ) {
    return (
      await this.request(taskResponseSchema, 'post', `${taskPath(id)}/${decision}`, { json: body })
    ).task;
  }

  /**
   * Conflicts: keys two runtimes wrote with different values within the hub's window
   * (`status: 'all'` adds the resolved ones).
   */
  async conflicts(params: { status?: 'open' | 'all'; limit?: number } = {}) {
    return (
      await this.request(listConflictsResponseSchema, 'get', 'api/conflicts', {
        searchParams: toSearchParams(params),
      })
    ).conflicts;
  }

  /** A person keeps one value of conflict `id` (only people's runtimes or an admin token). */
  resolveConflict(id: string, body: { keep: string; note?: string; team?: string }) {
    return this.request(
      resolveConflictResponseSchema,
      'post',
      `api/conflicts/${encodeURIComponent(id)}/resolve`,
      { json: body },
    );
  }

  /** The hub's public key for verifying approvals. */
  approvalKey() {
    return this.request(approvalKeyResponseSchema, 'get', 'api/approvals/key');
  }

  /**
   * One page of a team's audit log, oldest first (`team`: admin tokens name it; a runtime token
   * reads its own). Next page: `after` = the answer's `nextAfter`.
   */
  listAudit(params: { team?: string; after?: number; limit?: number } = {}) {
    return this.request(listAuditResponseSchema, 'get', 'api/audit', {
      searchParams: toSearchParams(params),
    });
  }

  /** Checks a team's audit chain end to end: `{ok, records, head}` or `{ok: false, seq, reason}`. */
  verifyAudit(params: { team?: string } = {}) {
    return this.request(verifyAuditResponseSchema, 'get', 'api/audit/verify', {
      searchParams: toSearchParams(params),
    });
  }

  /** Presence: announces this instance (again, as a heartbeat) so the router counts it. */
  announce(body: {
    instanceId: string;
    kind: 'worker' | 'adapter';
    capabilities?: string[];
    capacity?: number;
    ttlSeconds?: number;
  }) {
    return this.request(presenceAnnounceResponseSchema, 'post', 'api/presence', { json: body });
  }

  async leave(instanceId: string): Promise<void> {
    await this.request(z.unknown(), 'delete', `api/presence/${encodeURIComponent(instanceId)}`);
  }

  /**
   * Live changes as an async iterable. When the connection drops it reconnects with
   * `Last-Event-ID`, so no event is missed or repeated. Ends when `signal` aborts; throws on
   * errors that retrying cannot fix (bad token, bad filter). Events of kinds this client does
   * not know are skipped.
   */
  stream(options: StreamOptions = {}): AsyncGenerator<StreamEvent> {
    return this.events(options, {}, (event) =>
      (streamEventNames as readonly string[]).includes(event.event ?? '')
        ? streamEventSchema.parse(JSON.parse(event.data))
        : null,
    );
  }

  /**
   * The stream with `blackboard=true`: a blackboard entry's change comes as a
   * `blackboard-updated` event (board, entry, item), every other change as before.
   */
  streamWithBlackboard(options: StreamOptions = {}): AsyncGenerator<StreamEvent | BlackboardEvent> {
    return this.events(options, { blackboard: true }, (event) => {
      if (event.event === BLACKBOARD_EVENT)
        return blackboardEventSchema.parse(JSON.parse(event.data));
      return (streamEventNames as readonly string[]).includes(event.event ?? '')
        ? streamEventSchema.parse(JSON.parse(event.data))
        : null;
    });
  }

  private async *events<T extends { seq: number }>(
    options: StreamOptions,
    extra: Record<string, unknown>,
    parse: (event: { event?: string | undefined; data: string }) => T | null,
  ): AsyncGenerator<T> {
    const { since, signal, reconnect = true, onReady, onReconnect, ...filter } = options;
    let lastId = since;
    let delay = 250;
    while (!signal?.aborted) {
      try {
        const response = await this.fetchImpl(
          `${this.url}/api/stream?${toSearchParams({ ...filter, ...extra })}`,
          {
            headers: {
              authorization: `Bearer ${this.token}`,
              accept: 'text/event-stream',
              ...(lastId !== undefined && { 'last-event-id': String(lastId) }),
            },
            ...(signal && { signal }),
          },
        );
        if (!response.ok || !response.body) throw await errorFromResponse(response);
        const events: { id?: string; event?: string; data: string }[] = [];
        let ended: CtxbusError | null = null;
        const parser = createParser({ onEvent: (event) => events.push(event) });
        const decoder = new TextDecoder();
        const reader = response.body.getReader();
        try {
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            parser.feed(decoder.decode(value, { stream: true }));
            while (events.length > 0) {
              const event = events.shift();
              if (!event) break;
              if (event.event === 'ready') {
                delay = 250;
                onReady?.();
                continue;
              }
              if (event.event === 'disconnect') {
                const end = streamDisconnectSchema.parse(JSON.parse(event.data));
                // A revoked token cannot resume; a slow reader resumes from its last id.
                if (end.reason === 'token_revoked')
                  throw new CtxbusError('unauthorized', end.message);
                ended = new CtxbusError('unavailable', `the hub ended the stream: ${end.message}`);
                continue;
              }
              if (event.id !== undefined && isSequenceText(event.id)) lastId = Number(event.id);
              const parsed = parse(event);
              if (parsed === null) continue;
              lastId = parsed.seq;
              yield parsed;
            }
          }
        } finally {
          reader.releaseLock();
          await response.body.cancel().catch(() => {});
        }
        if (!reconnect) return;
        onReconnect?.(ended ?? new CtxbusError('unavailable', 'the hub closed the stream'));
      } catch (error) {
        if (signal?.aborted) return;
        const retryable = CtxbusError.isInstance(error) ? error.retryable : true;
        if (!reconnect || !retryable) {
          if (CtxbusError.isInstance(error)) throw error;
          throw new CtxbusError(
            'unavailable',
            `stream from ${this.url} failed: ${(error as Error).message}`,
            {
              cause: error,
            },
          );
        }
        onReconnect?.(error);
      }
      await sleep(delay, signal);
      delay = Math.min(delay * 2, 5_000);
    }
  }
}

/** Creates a client; settings fall back to CTXBUS_URL and CTXBUS_TOKEN. */
const subscriptionPath = (id: string) => `api/subscriptions/${encodeURIComponent(id)}`;
const taskPath = (id: string) => `api/tasks/${encodeURIComponent(id)}`;

export function createClient(settings: CtxbusClientSettings = {}): CtxbusClient {
  return new CtxbusClient(settings);
}
