import type { ListParams, StreamOptions } from '@ctxbus/client';
import type {
  ContextItem,
  ContextItemInput,
  CreateTaskRequest,
  ForgetKeyResponse,
  ListResponse,
  RoutingDecision,
  SearchRequest,
  SearchResponse,
  SharedContextResponse,
  StreamEvent,
  Task,
  TaskEvent,
  TaskState,
  UpdateTaskRequest,
  WriteResponse,
} from '@ctxbus/core/contract';

/**
 * What the MCP server needs from ctxbus: the subset of `CtxbusClient` it calls. A client
 * satisfies it as is (stdio mode, or any process talking to a remote hub); the hub can pass an
 * in-process implementation over its store so its `/mcp` route skips the HTTP round trip.
 *
 * Every call acts as one token's team and runtime. Failures are `CtxbusError`s with the hub's
 * codes (`unavailable` when the hub cannot be reached); the server turns them into MCP errors.
 */
export interface ContextBackend {
  /** Writes one item (or an atomic batch); an existing `key` supersedes the item holding it. */
  write(items: ContextItemInput | ContextItemInput[]): Promise<WriteResponse>;
  /** Live items, newest first, filtered as `GET /api/context` filters them. */
  list(params?: ListParams): Promise<ListResponse>;
  /**
   * Removes a key's value and its history (a resource, a blackboard entry); `not_found` when
   * the caller sees no value of it.
   */
  forget(key: string): Promise<ForgetKeyResponse>;
  /** One item; `not_found` when it does not exist or is not visible to the caller. */
  get(id: string): Promise<ContextItem>;
  search(request: SearchRequest): Promise<SearchResponse>;
  /** The shared bundle; `runtime` picks the format (default: the caller's runtime). */
  shared(params?: { runtime?: string; tokenBudget?: number }): Promise<SharedContextResponse>;
  /**
   * Live changes from now on. Must call `onReady` once the subscription is live (so a change
   * made after that is never missed), resume by itself after a dropped connection, end when
   * `signal` aborts, and throw only on errors retrying cannot fix (a revoked token).
   */
  stream(options?: StreamOptions): AsyncIterable<StreamEvent>;
  /** Hands work to the hub, which routes it; `existing` for a reused idempotency key. */
  createTask(request: CreateTaskRequest): Promise<{
    task: Task;
    status: 'created' | 'existing';
    routing: RoutingDecision;
  }>;
  /** A task of the caller's team with its history; `not_found` otherwise. */
  task(id: string): Promise<{ task: Task; history: TaskEvent[] }>;
  /** The team's tasks, filtered as `GET /api/tasks` filters them. */
  tasks(params?: {
    state?: TaskState[];
    order?: 'oldest' | 'newest';
    limit?: number;
  }): Promise<{ tasks: Task[]; nextAfter: string | null }>;
  /** Any state that is not terminal -> CANCELED. */
  cancelTask(id: string, note?: string): Promise<Task>;
  /** A progress note, or a move to SUBMITTED, INPUT_REQUIRED, FAILED or CANCELED. */
  updateTask(id: string, body: UpdateTaskRequest): Promise<Task>;
  /** The holder of a WORKING task finishes it with its result and fencing token. */
  completeTask(id: string, body: { token: number; result: unknown }): Promise<Task>;
}
