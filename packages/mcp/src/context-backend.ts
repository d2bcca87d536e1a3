import type { ListParams, StreamOptions } from '@ctxbus/client';
import type {
  ContextItem,
  ContextItemInput,
  ListResponse,
  SearchRequest,
  SearchResponse,
  SharedContextResponse,
  StreamEvent,
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
}
