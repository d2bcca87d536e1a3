import type { HubCall } from '@ctxbus/client/wire';
import { createHubCall, fetchTransport } from '@ctxbus/client/wire';
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
import { CtxbusError } from '@ctxbus/core/contract';
import type { MarkdownBundle, SidebarBundle } from './bundles.js';
import { DEFAULT_MARKDOWN_BUDGET, toMarkdownBundle, toSidebarBundle } from './bundles.js';
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

/**
 * A typed client over `fetch` for what a web UI needs: calls of core's wire table
 * (`call(operationId, ...)`, also public), every answer checked against the table's schema; a
 * hub error becomes a `CtxbusError` with the hub's code (`unauthorized`, `not_found`, ...), an
 * unreachable hub `unavailable`.
 */
export class WebClient {
  readonly url: string;
  /** Calls any operation of the wire table by its id; the answer is checked by its schema. */
  readonly call: HubCall['call'];
  /** Sends an operation's request and returns the successful response unread (the stream). */
  readonly open: HubCall['open'];

  constructor(settings: WebClientSettings) {
    if (!settings.url) throw new CtxbusError('validation_failed', 'no hub URL given');
    if (!settings.token) throw new CtxbusError('validation_failed', 'no token given');
    this.url = settings.url.replace(/\/+$/, '');
    const hub = createHubCall({
      url: this.url,
      transport: fetchTransport({
        url: this.url,
        token: settings.token,
        ...(settings.fetch && { fetch: settings.fetch }),
      }),
    });
    this.call = hub.call;
    this.open = hub.open;
  }

  health() {
    return this.call('health');
  }

  /** Writes one item or a batch (atomic). An item with an `id` is idempotent. */
  write(items: ContextItemInput | ContextItemInput[]): Promise<WriteResponse> {
    return this.call('writeContext', { body: Array.isArray(items) ? { items } : items });
  }

  list(params: WebListParams = {}): Promise<ListResponse> {
    return this.call('listContext', { query: params });
  }

  async get(id: string): Promise<ContextItem> {
    return (await this.call('getContextItem', { params: { id } })).item;
  }

  search(request: SearchRequest): Promise<SearchResponse> {
    return this.call('searchContext', { body: request });
  }

  /** The shared context bundle (`runtime` defaults to `web`: sections with items, and Markdown); `preview: true` for a look that is not an injection (not in the analytics). */
  shared(
    params: { runtime?: string; tokenBudget?: number; preview?: boolean } = {},
  ): Promise<SharedContextResponse> {
    return this.call('sharedContext', {
      query: {
        runtime: params.runtime ?? 'web',
        tokenBudget: params.tokenBudget,
        ...(params.preview && { preview: true }),
      },
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
    return this.call('createTask', { body: request });
  }

  /** A task of this team with its history. */
  task(id: string): Promise<{ task: Task; history: TaskEvent[] }> {
    return this.call('getTask', { params: { id } });
  }

  tasks(params: WebTaskListParams = {}) {
    return this.call('listTasks', { query: params });
  }

  /**
   * A human's answer to a task waiting in AUTH_REQUIRED. `digest`: the request's digest as the
   * person was shown it (`task.approval.request.digest`): the hub refuses the answer
   * (409 digest_mismatch) when the task now waits on another command.
   */
  async decideTask(
    id: string,
    decision: 'approve' | 'deny',
    note?: string,
    digest?: string,
  ): Promise<Task> {
    const operation = decision === 'approve' ? 'approveTask' : 'denyTask';
    const body = {
      ...(note !== undefined && { note }),
      ...(digest !== undefined && { digest }),
    };
    return (await this.call(operation, { params: { id }, body })).task;
  }

  /**
   * A person keeps one value of a conflict (two runtimes wrote one key differently): the hub
   * restores it as the key's live value and closes the conflict. People's runtimes only.
   */
  resolveConflict(id: string, keep: string, note?: string): Promise<ResolveConflictResponse> {
    const body = note === undefined ? { keep } : { keep, note };
    return this.call('resolveConflict', { params: { id }, body });
  }

  /** The capability matrix with each runtime's live presence in this team. */
  capabilities(): Promise<CapabilitiesResponse> {
    return this.call('getCapabilities');
  }

  /** This runtime's subscriptions (webhooks and pull), with their delivery health. */
  async subscriptions(): Promise<Subscription[]> {
    return (await this.call('listSubscriptions')).subscriptions;
  }

  /** Changes a push subscription gave up on after its retries. */
  async deadLetters(subscriptionId: string): Promise<DeadLetterInfo[]> {
    return (await this.call('listDeadLetters', { params: { id: subscriptionId } })).deadLetters;
  }

  /**
   * Live changes (`context-added`, `-consumed`, `-superseded`), resumed after a dropped
   * connection with `Last-Event-ID` after a jittered backoff, so none is missed or repeated.
   * Ends when `signal` aborts.
   */
  stream(options: StreamOptions = {}) {
    return openLiveStream(this, options);
  }
}

export function createWebClient(settings: WebClientSettings): WebClient {
  return new WebClient(settings);
}
