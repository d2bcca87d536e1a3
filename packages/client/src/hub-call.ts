import type {
  ErrorCode,
  HttpMethod,
  WireInput,
  WireOperationId,
  WireOutput,
  WireRoute,
} from '@ctxbus/core/contract';
import {
  bearer,
  CtxbusError,
  ERROR_CODES,
  errorResponseSchema,
  hubUnreachable,
  wireRoutes,
  wireTarget,
} from '@ctxbus/core/contract';

// One client for the hub's HTTP API, derived from core's wire table: `call(operationId, ...)`
// builds the path and query from the table, sends it over a transport (ky for the Node client,
// fetch for browsers and streams), turns a refusal into a CtxbusError and checks the answer
// against the table's schema. Browser-safe: no Node import.

/** One request as a transport sends it. */
export interface WireRequest {
  method: HttpMethod;
  /** Path and query string from the hub's root (`/api/context?limit=5`). */
  target: string;
  /** The JSON body, not yet serialized; undefined: none. */
  body?: unknown;
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** Time to allow beyond the transport's own timeout (a long poll's wait). */
  extraTimeoutMs?: number;
}

/** Sends an authorized request to the hub; throws only when no answer came. */
export type WireTransport = (request: WireRequest) => Promise<Response>;

export interface CallOptions {
  signal?: AbortSignal;
  headers?: Record<string, string>;
  extraTimeoutMs?: number;
}

/** The call's input, optional when the operation needs nothing. */
type CallArgs<Id extends WireOperationId> =
  Record<string, never> extends WireInput<Id>
    ? [input?: WireInput<Id>, options?: CallOptions]
    : [input: WireInput<Id>, options?: CallOptions];

export interface HubCall {
  /** The hub's URL, without a trailing slash. */
  readonly url: string;
  /** Calls an operation of the wire table and returns its answer, checked by its schema. */
  call<Id extends WireOperationId>(operationId: Id, ...args: CallArgs<Id>): Promise<WireOutput<Id>>;
  /** Sends an operation's request and returns the hub's successful response unread (streams). */
  open<Id extends WireOperationId>(operationId: Id, ...args: CallArgs<Id>): Promise<Response>;
}

/** The hub's `{error: {code, message, details}}` as a `CtxbusError` with the same code. */
export async function errorFromResponse(response: Response): Promise<CtxbusError> {
  const text = await response.text().catch(() => '');
  let parsed: ReturnType<typeof errorResponseSchema.parse> | undefined;
  try {
    parsed = errorResponseSchema.parse(JSON.parse(text));
  } catch {
    parsed = undefined;
  }
  const code: ErrorCode =
    parsed && parsed.error.code in ERROR_CODES
      ? (parsed.error.code as ErrorCode)
      : response.status >= 500
        ? 'unavailable'
        : 'internal';
  return new CtxbusError(
    code,
    parsed?.error.message ?? `the hub answered ${response.status} ${response.statusText}`,
    {
      details: {
        status: response.status,
        ...(parsed?.error.details !== undefined && { details: parsed.error.details }),
      },
      retryable: response.status >= 500 || response.status === 429,
    },
  );
}

/** A transport over `fetch` with the token as a Bearer header (no timeout, no retries). */
export function fetchTransport(settings: {
  url: string;
  token: string;
  fetch?: typeof fetch;
}): WireTransport {
  const base = settings.url.replace(/\/+$/, '');
  // Called unbound, a page's fetch throws "Illegal invocation": keep it on globalThis.
  const send = settings.fetch ?? ((input, init) => globalThis.fetch(input, init));
  return (request) =>
    send(`${base}${request.target}`, {
      method: request.method,
      headers: {
        authorization: bearer(settings.token),
        ...(request.body !== undefined && { 'content-type': 'application/json' }),
        ...request.headers,
      },
      ...(request.body !== undefined && { body: JSON.stringify(request.body) }),
      ...(request.signal && { signal: request.signal }),
    });
}

/** The hub's operations over `transport`, for the hub at `url` (named in errors). */
export function createHubCall(settings: { url: string; transport: WireTransport }): HubCall {
  const url = settings.url.replace(/\/+$/, '');
  const open = async (
    operationId: WireOperationId,
    input: { params?: Record<string, string>; query?: object; body?: unknown } = {},
    options: CallOptions = {},
  ): Promise<Response> => {
    const route = wireRoutes[operationId];
    let response: Response;
    try {
      response = await settings.transport({
        method: route.method,
        target: wireTarget(route.path, input.params, input.query),
        ...(input.body !== undefined && { body: input.body }),
        ...options,
      });
    } catch (error) {
      if (options.signal?.aborted || CtxbusError.isInstance(error)) throw error;
      throw hubUnreachable(url, error);
    }
    if (!response.ok) throw await errorFromResponse(response);
    return response;
  };
  const call = async (
    operationId: WireOperationId,
    input?: { params?: Record<string, string>; query?: object; body?: unknown },
    options?: CallOptions,
  ): Promise<unknown> => {
    const response = await open(operationId, input, options);
    const route: WireRoute = wireRoutes[operationId];
    const schema = route.responses[response.status];
    const unexpected = (why: string) =>
      new CtxbusError('internal', `unexpected response from ${route.method} ${route.path}: ${why}`);
    let body: unknown;
    try {
      body = await response.json();
    } catch (error) {
      throw unexpected((error as Error).message);
    }
    if (!schema) throw unexpected(`status ${response.status}`);
    const result = schema.safeParse(body);
    if (!result.success) throw unexpected(result.error.message);
    return result.data;
  };
  return { url, call, open } as HubCall;
}
