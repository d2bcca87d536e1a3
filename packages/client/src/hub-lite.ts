import type { request as httpRequest } from 'node:http';
import type { ContextItemInput } from '@ctxbus/core/contract';
import type { ErrorCode } from '@ctxbus/core/light';
import { bearer, CtxbusError, ERROR_CODES, hubUnreachable } from '@ctxbus/core/light';
import { bundleCacheKey } from './bundle-cache.js';
import { MAX_ANSWER_BYTES, socketRequest } from './socket-request.js';

/** The event's JSON on stdin, for hooks (hook-stdin.ts). */
export { readHookStdin } from './hook-stdin.js';

// A minimal hub client, for hooks a runtime starts once per call (`@ctxbus/client/light`): plain
// HTTP on a bare socket (socket-request.ts), HTTPS on node:https. The full client (ky, fetch,
// zod) costs ~100 ms of startup per hook run (measured); this costs a few. Responses are checked
// structurally, not with zod.

// node:https (and node:http, under NODE_USE_ENV_PROXY) are loaded only when such a request is
// sent, and as plain builtins (`process.getBuiltinModule`), not ESM imports: an ESM import of
// node:http builds its module namespace, whose lazy WebSocket / MessageEvent getters load
// undici (~0.1 s of CPU and ~15 MB per hook run on Node 24, measured), and node:https loads
// TLS, which a hub on plain loopback HTTP never needs. (No createRequire(import.meta.url)
// either: the hooks' bundles are CommonJS.)
function requestFor(protocol: string): typeof httpRequest {
  const module =
    protocol === 'https:'
      ? process.getBuiltinModule('node:https')
      : process.getBuiltinModule('node:http');
  return module.request;
}

/** The item fields the hooks show. */
export interface HubItem {
  id: string;
  seq: number;
  type: string;
  title: string;
  summary: string;
  urgency: 'background' | 'attention' | 'blocking';
  source: { runtime: string; agentId?: string | null; threadId?: string | null };
}

/** What the hooks need from a hub. */
export interface HubApi {
  readonly url: string;
  /** The session kernel's bundle-cache key for this runtime and token (`bundleCacheKey`). */
  readonly cacheKey?: string;
  shared(tokenBudget: number): Promise<{ formatted: string }>;
  /** Items created after `since` (a sequence number), newest first. */
  list(since: number, limit: number): Promise<HubItem[]>;
  write(items: readonly ContextItemInput[]): Promise<void>;
  /** Reports items a turn's context took from `list` as injected (the analytics). */
  reportInjections(itemIds: readonly string[]): Promise<void>;
}

export class HubRequestError extends Error {
  constructor(
    message: string,
    readonly status: number | null,
  ) {
    super(message);
    this.name = 'HubRequestError';
  }
}

const URGENCIES = new Set(['background', 'attention', 'blocking']);

function isItem(value: unknown): value is HubItem {
  if (value === null || typeof value !== 'object') return false;
  const item = value as Record<string, unknown>;
  const source = item.source as Record<string, unknown> | null | undefined;
  return (
    typeof item.id === 'string' &&
    Number.isInteger(item.seq) &&
    typeof item.type === 'string' &&
    typeof item.title === 'string' &&
    typeof item.summary === 'string' &&
    URGENCIES.has(item.urgency as string) &&
    typeof source?.runtime === 'string'
  );
}

/**
 * The routes of core's wire table this client calls, written out here rather than imported:
 * the table is zod schemas, which a hook must not load (a test checks they match the table).
 */
export const LITE_ROUTES = {
  sharedContext: { method: 'GET', path: '/api/context/shared' },
  listContext: { method: 'GET', path: '/api/context' },
  writeContext: { method: 'POST', path: '/api/context' },
  reportInjections: { method: 'POST', path: '/api/analytics/injections' },
} as const;

export interface HubLiteSettings {
  url: string;
  token: string;
  timeoutMs: number;
  /** The runtime whose format the shared context comes in (claude-code, openclaw, ...). */
  runtime: string;
}

/** Where a light request goes, and how long it may take. */
export interface HubRequestTarget {
  url: string;
  token: string;
  timeoutMs: number;
}

/** The hub's refusal as the CtxbusError it names (its code), else one the status implies. */
function refusal(status: number, json: unknown): CtxbusError {
  const error = (json as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
  const code: ErrorCode =
    typeof error?.code === 'string' && Object.hasOwn(ERROR_CODES, error.code)
      ? (error.code as ErrorCode)
      : status >= 500
        ? 'unavailable'
        : 'internal';
  const message = typeof error?.message === 'string' ? error.message : `the hub answered ${status}`;
  return new CtxbusError(code, message, {
    details: { status },
    retryable: status >= 500 || status === 429,
  });
}

/**
 * One JSON request on a bare socket for http:, node:https for https: (no fetch, ky or zod: a
 * command or hook pays a few ms for it): the answer's JSON, or a CtxbusError with the hub's
 * code (`unavailable` when it cannot be reached or does not answer in time). The answer is the
 * hub's word, not checked here.
 */
export async function hubRequest(
  target: HubRequestTarget,
  method: 'GET' | 'POST' | 'DELETE',
  path: string,
  body?: unknown,
): Promise<unknown> {
  const base = target.url.replace(/\/+$/, '');
  const unreachable = (message: string, cause?: unknown) =>
    hubUnreachable(base, cause ?? new Error(message));
  const url = new URL(`${base}${path}`);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const headers: Record<string, string> = {
    authorization: bearer(target.token),
    accept: 'application/json',
    ...(payload !== undefined && { 'content-type': 'application/json' }),
  };
  /** The hub's answer: its JSON, or the refusal it names. */
  const answered = (status: number, text: string): unknown => {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    if (status >= 200 && status < 300 && json !== undefined) return json;
    if (status >= 200 && status < 300) {
      throw new CtxbusError('internal', `the hub answered ${status} with no JSON`);
    }
    throw refusal(status, json);
  };
  // Plain HTTP goes on a bare socket (socket-request.ts), unless Node is told to use the
  // environment's proxy, which only node:http knows.
  if (url.protocol === 'http:' && !process.env.NODE_USE_ENV_PROXY) {
    return socketRequest({ url, method, headers, payload, timeoutMs: target.timeoutMs }).then(
      (answer) => answered(answer.status, answer.body),
      (error: Error) => {
        throw unreachable(error.message, error);
      },
    );
  }
  return new Promise((resolve, reject) => {
    const send = requestFor(url.protocol);
    // As on a bare socket: one limit for the whole request, and for the answer's size.
    const deadline = setTimeout(
      () => req.destroy(unreachable(`no complete answer in ${target.timeoutMs} ms`)),
      target.timeoutMs,
    );
    const req = send(url, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_ANSWER_BYTES) {
          req.destroy(unreachable(`the answer is larger than ${MAX_ANSWER_BYTES} bytes`));
          return;
        }
        chunks.push(chunk);
      });
      res.on('error', (error) => reject(unreachable(error.message, error)));
      res.on('end', () => {
        clearTimeout(deadline);
        try {
          resolve(answered(res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8')));
        } catch (error) {
          reject(error);
        }
      });
    });
    req.on('close', () => clearTimeout(deadline));
    req.on('error', (error) =>
      reject(CtxbusError.isInstance(error) ? error : unreachable(error.message, error)),
    );
    req.end(payload);
  });
}

export function createHubLite(settings: HubLiteSettings): HubApi {
  const base = settings.url.replace(/\/+$/, '');
  const call = (method: 'GET' | 'POST', path: string, body?: unknown): Promise<unknown> =>
    hubRequest(settings, method, path, body).catch((error: unknown) => {
      const status = ((error as CtxbusError).details as { status?: unknown } | undefined)?.status;
      throw new HubRequestError(
        (error as Error).message,
        typeof status === 'number' ? status : null,
      );
    });

  return {
    url: base,
    cacheKey: bundleCacheKey(settings.runtime, settings.token),
    async shared(tokenBudget) {
      const { method, path } = LITE_ROUTES.sharedContext;
      const query = `runtime=${encodeURIComponent(settings.runtime)}&tokenBudget=${tokenBudget}`;
      const bundle = (await call(method, `${path}?${query}`)) as {
        formatted?: unknown;
      };
      if (typeof bundle?.formatted !== 'string')
        throw new HubRequestError('unexpected shared-context response', 200);
      return { formatted: bundle.formatted };
    },
    async list(since, limit) {
      const { method, path } = LITE_ROUTES.listContext;
      const response = (await call(method, `${path}?since=${since}&limit=${limit}`)) as {
        items?: unknown;
      };
      if (!Array.isArray(response?.items) || !response.items.every(isItem)) {
        throw new HubRequestError('unexpected list response', 200);
      }
      return response.items;
    },
    async write(items) {
      if (items.length === 0) return;
      await call(LITE_ROUTES.writeContext.method, LITE_ROUTES.writeContext.path, { items });
    },
    async reportInjections(itemIds) {
      if (itemIds.length === 0) return;
      const { method, path } = LITE_ROUTES.reportInjections;
      await call(method, path, { itemIds });
    },
  };
}
