import type {
  CapabilitiesResponse,
  ContextItem,
  ContextItemInput,
  CreateTaskRequest,
  DeadLetterInfo,
  ListParams,
  ListResponse,
  ResolveConflictResponse,
  RoutingDecision,
  SearchRequest,
  SearchResponse,
  SharedContextResponse,
  Subscription,
  Task,
  TaskEvent,
  TaskState,
  WriteResponse,
} from '@ctxbus/core/contract';
import {
  CtxbusError,
  capabilitiesResponseSchema,
  createTaskResponseSchema,
  deadLettersResponseSchema,
  healthResponseSchema,
  itemResponseSchema,
  listResponseSchema,
  listSubscriptionsResponseSchema,
  listTasksResponseSchema,
  resolveConflictResponseSchema,
  searchResponseSchema,
  sharedResponseSchema,
  taskResponseSchema,
  taskWithHistoryResponseSchema,
  writeResponseSchema,
} from '@ctxbus/core/contract';
import type { MarkdownBundle, SidebarBundle } from './bundles.js';
import { DEFAULT_MARKDOWN_BUDGET, toMarkdownBundle, toSidebarBundle } from './bundles.js';
import { errorFromResponse, toSearchParams } from './hub-errors.js';
import type { StreamOptions } from './live-stream.js';
import { openLiveStream } from './live-stream.js';

export interface WebClientSettings {
  /** The hub's URL (`https://ctxbus.example.com`, or `location.origin` when it serves the page). */
  url: string;
  /** A runtime token (Bearer); keep it out of URLs. */
  token: string;
  /** A `fetch` of your own (defaults to the page's). */
  fetch?: typeof fetch;
}

/** Filters of `GET /api/context` (arrays become comma lists): core's `ListParams`. */
export type WebListParams = ListParams;

export interface WebTaskListParams {
  state?: TaskState[];
  target?: string;
  origin?: string;
  limit?: number;
  order?: 'oldest' | 'newest';
  after?: string;
}

interface Schema<T> {
  safeParse(value: unknown): { success: true; data: T } | { success: false; error: Error };
}

/**
 * A typed client over `fetch` for what a web UI needs. Every answer is checked against the
 * contract's schemas; a hub error becomes a `CtxbusError` with the hub's code (`unauthorized`,
 * `not_found`, ...), an unreachable hub `unavailable`.
 */
export class WebClient {
  readonly url: string;
  readonly #token: string;
  readonly #fetch: typeof fetch;

  constructor(settings: WebClientSettings) {
    if (!settings.url) throw new CtxbusError('validation_failed', 'no hub URL given');
    if (!settings.token) throw new CtxbusError('validation_failed', 'no token given');
    this.url = settings.url.replace(/\/+$/, '');
    this.#token = settings.token;
    // Called unbound, a page's fetch throws "Illegal invocation": keep it on globalThis.
    this.#fetch = settings.fetch ?? ((input, init) => globalThis.fetch(input, init));
  }

  /** A raw authorized request (the stream uses it); `path` starts with `/`. */
  async send(path: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    headers.set('authorization', `Bearer ${this.#token}`);
    try {
      return await this.#fetch(`${this.url}${path}`, { ...init, headers });
    } catch (error) {
      if (init.signal?.aborted) throw error;
      throw new CtxbusError(
        'unavailable',
        `cannot reach the ctxbus hub at ${this.url}: ${(error as Error).message}`,
        { cause: error },
      );
    }
  }

  async #request<T>(
    schema: Schema<T>,
    method: 'GET' | 'POST',
    path: string,
    options: { json?: unknown; query?: object; signal?: AbortSignal } = {},
  ): Promise<T> {
    const query = options.query ? toSearchParams(options.query).toString() : '';
    const response = await this.send(query ? `${path}?${query}` : path, {
      method,
      ...(options.json !== undefined && {
        body: JSON.stringify(options.json),
        headers: { 'content-type': 'application/json' },
      }),
      ...(options.signal && { signal: options.signal }),
    });
    if (!response.ok) throw await errorFromResponse(response);
    const result = schema.safeParse(await response.json());
    if (!result.success) {
      throw new CtxbusError(
        'internal',
        `unexpected response from ${method} ${path}: ${result.error.message}`,
      );
    }
    return result.data;
  }

  health() {
    return this.#request(healthResponseSchema, 'GET', '/health');
  }

  /** Writes one item or a batch (atomic). An item with an `id` is idempotent. */
  write(items: ContextItemInput | ContextItemInput[]): Promise<WriteResponse> {
    return this.#request(writeResponseSchema, 'POST', '/api/context', {
      json: Array.isArray(items) ? { items } : items,
    });
  }

  list(params: WebListParams = {}): Promise<ListResponse> {
    return this.#request(listResponseSchema, 'GET', '/api/context', { query: params });
  }

  async get(id: string): Promise<ContextItem> {
    return (
      await this.#request(itemResponseSchema, 'GET', `/api/context/${encodeURIComponent(id)}`)
    ).item;
  }

  search(request: SearchRequest): Promise<SearchResponse> {
    return this.#request(searchResponseSchema, 'POST', '/api/context/search', { json: request });
  }

  /** The shared context bundle (`runtime` defaults to `web`: sections with items, and Markdown). */
  shared(params: { runtime?: string; tokenBudget?: number } = {}): Promise<SharedContextResponse> {
    return this.#request(sharedResponseSchema, 'GET', '/api/context/shared', {
      query: { runtime: params.runtime ?? 'web', tokenBudget: params.tokenBudget },
    });
  }

  /** The `web` resolver's sections with their items, for a sidebar. */
  async sidebarBundle(tokenBudget?: number): Promise<SidebarBundle> {
    return toSidebarBundle(await this.shared({ runtime: 'web', tokenBudget }));
  }

  /** The token-budgeted Markdown for in-page AI features (default 4,000 tokens). */
  async markdownBundle(tokenBudget = DEFAULT_MARKDOWN_BUDGET): Promise<MarkdownBundle> {
    return toMarkdownBundle(await this.shared({ runtime: 'web', tokenBudget }));
  }

  /** Hands work to the hub: it routes the task (`routing`) and stores it. */
  createTask(request: CreateTaskRequest): Promise<{ task: Task; routing: RoutingDecision }> {
    return this.#request(createTaskResponseSchema, 'POST', '/api/tasks', { json: request });
  }

  /** A task of this team with its history. */
  task(id: string): Promise<{ task: Task; history: TaskEvent[] }> {
    return this.#request(taskWithHistoryResponseSchema, 'GET', taskPath(id));
  }

  tasks(params: WebTaskListParams = {}) {
    return this.#request(listTasksResponseSchema, 'GET', '/api/tasks', { query: params });
  }

  /** A human's answer to a task waiting in AUTH_REQUIRED. */
  async decideTask(id: string, decision: 'approve' | 'deny', note?: string): Promise<Task> {
    return (
      await this.#request(taskResponseSchema, 'POST', `${taskPath(id)}/${decision}`, {
        json: note === undefined ? {} : { note },
      })
    ).task;
  }

  /**
   * A person keeps one value of a conflict (two runtimes wrote one key differently): the hub
   * restores it as the key's live value and closes the conflict. People's runtimes only.
   */
  resolveConflict(id: string, keep: string, note?: string): Promise<ResolveConflictResponse> {
    return this.#request(
      resolveConflictResponseSchema,
      'POST',
      `/api/conflicts/${encodeURIComponent(id)}/resolve`,
      { json: note === undefined ? { keep } : { keep, note } },
    );
  }

  /** The capability matrix with each runtime's live presence in this team. */
  capabilities(): Promise<CapabilitiesResponse> {
    return this.#request(capabilitiesResponseSchema, 'GET', '/api/capabilities');
  }

  /** This runtime's subscriptions (webhooks and pull), with their delivery health. */
  async subscriptions(): Promise<Subscription[]> {
    return (await this.#request(listSubscriptionsResponseSchema, 'GET', '/api/subscriptions'))
      .subscriptions;
  }

  /** Changes a push subscription gave up on after its retries. */
  async deadLetters(subscriptionId: string): Promise<DeadLetterInfo[]> {
    const path = `/api/subscriptions/${encodeURIComponent(subscriptionId)}/dead-letters`;
    return (await this.#request(deadLettersResponseSchema, 'GET', path)).deadLetters;
  }

  /**
   * Live changes (`context-added`, `-consumed`, `-superseded`), resumed after a dropped
   * connection with `Last-Event-ID` so none is missed or repeated. Ends when `signal` aborts.
   */
  stream(options: StreamOptions = {}) {
    return openLiveStream(this, options);
  }
}

const taskPath = (id: string) => `/api/tasks/${encodeURIComponent(id)}`;

export function createWebClient(settings: WebClientSettings): WebClient {
  return new WebClient(settings);
}
