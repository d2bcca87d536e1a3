import { createParser } from 'eventsource-parser';
import { WebSocket } from 'ws';
import type { TestHub } from './hub-process.ts';
import { describeCheck, TEST_WAIT_MS } from './wait-until.ts';

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: any;
}

export interface RequestOptions {
  token?: string | null;
  body?: unknown;
  /** Sent as is (for malformed-body tests). */
  rawBody?: string;
  contentType?: string;
  headers?: Record<string, string>;
  /** Ends the call (the hub sees the client go away). */
  signal?: AbortSignal;
}

/**
 * One HTTP call to the hub; the JSON body is parsed when there is one. Each call has its own
 * connection (`connection: close`): a kept-alive socket the hub's server closes as idle while
 * the client picks it for the next call fails that call with ECONNRESET (nodejs/undici#3492),
 * and on a loaded machine, where the event loop stalls for seconds, the margin between the two
 * timeouts (~2 s) is lost. It failed a 16-worker race in CI at load 14. A test that needs a
 * kept-alive socket says so in `headers`.
 */
export async function call(
  url: string,
  method: string,
  path: string,
  options: RequestOptions = {},
): Promise<ApiResponse> {
  const headers: Record<string, string> = { connection: 'close', ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  let body: string | undefined;
  if (options.rawBody !== undefined) body = options.rawBody;
  else if (options.body !== undefined) body = JSON.stringify(options.body);
  if (body !== undefined) headers['content-type'] = options.contentType ?? 'application/json';
  const response = await fetch(`${url}${path}`, {
    method,
    headers,
    ...(body !== undefined && { body }),
    ...(options.signal && { signal: options.signal }),
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {}
  return { status: response.status, headers: response.headers, body: parsed };
}

/** Mints a runtime token through the admin API. */
export async function runtimeToken(
  hub: Pick<TestHub, 'url' | 'adminToken'>,
  teamId: string,
  runtime: string,
): Promise<string> {
  const response = await call(hub.url, 'POST', '/api/admin/tokens', {
    token: hub.adminToken,
    body: { teamId, runtime },
  });
  if (response.status !== 201)
    throw new Error(`token create failed: ${JSON.stringify(response.body)}`);
  return response.body.token as string;
}

export interface SseEvent {
  id?: string;
  event?: string;
  data: string;
}

export interface SseConnection {
  events: SseEvent[];
  /** Data events only (no `ready` or `disconnect`), parsed. */
  items(): { seq: number; event: string; item: any }[];
  waitFor(predicate: (events: SseEvent[]) => boolean, timeoutMs?: number): Promise<void>;
  ready: Promise<void>;
  status: Promise<number>;
  /** Resolves when the stream has ended (either side). */
  ended: Promise<void>;
  /** Stops reading the connection (the hub sees TCP backpressure), until `resume`. */
  pause(): void;
  resume(): void;
  close(): void;
}

/** Events as they arrive, with the waiting and parsing both stream clients offer. */
function eventLog(kind: string) {
  const events: SseEvent[] = [];
  const listeners = new Set<() => void>();
  const parsed: { seq: number; event: string; item: any }[] = [];
  let seen = 0;
  return {
    events,
    /** Records an event and wakes whoever waits. */
    push(event: SseEvent) {
      events.push(event);
      for (const listener of listeners) listener();
    },
    /**
     * Each data event is parsed once and kept: a `waitFor` over `items()` runs at every event,
     * and parsing all of them each time made a 2,000-event replay cost 10 s of CPU.
     */
    items: () => {
      for (; seen < events.length; seen++) {
        const event = events[seen] as SseEvent;
        if (event.event !== 'ready' && event.event !== 'disconnect') {
          parsed.push(JSON.parse(event.data));
        }
      }
      return [...parsed];
    },
    waitFor(predicate: (events: SseEvent[]) => boolean, timeoutMs = TEST_WAIT_MS): Promise<void> {
      if (predicate(events)) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(
            new Error(
              `timed out after ${timeoutMs} ms waiting for ${kind} events to satisfy ${describeCheck(predicate)}; got ${JSON.stringify(events.map((e) => e.event))}`,
            ),
          );
        }, timeoutMs);
        const check = () => {
          if (!predicate(events)) return;
          clearTimeout(timer);
          listeners.delete(check);
          resolve();
        };
        listeners.add(check);
      });
    },
  };
}

/** A gate the reading loop waits at while paused. */
function pauseGate() {
  let open: Promise<void> = Promise.resolve();
  let release: () => void = () => {};
  return {
    wait: () => open,
    pause() {
      open = new Promise((resolve) => {
        release = resolve;
      });
    },
    resume: () => release(),
  };
}

/** Opens /api/stream with fetch and collects its events. */
export function openStream(
  url: string,
  token: string,
  options: { query?: string; lastEventId?: string; onEvent?: (event: SseEvent) => void } = {},
): SseConnection {
  const controller = new AbortController();
  const log = eventLog('SSE');
  let resolveStatus: (status: number) => void = () => {};
  const status = new Promise<number>((resolve) => {
    resolveStatus = resolve;
  });
  let resolveReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => {
    resolveReady = resolve;
  });
  const parser = createParser({
    onEvent(event) {
      options.onEvent?.(event);
      if (event.event === 'ready') resolveReady();
      log.push(event);
    },
  });
  const gate = pauseGate();
  const ended = (async () => {
    try {
      const response = await fetch(`${url}/api/stream${options.query ? `?${options.query}` : ''}`, {
        headers: {
          authorization: `Bearer ${token}`,
          ...(options.lastEventId !== undefined && { 'last-event-id': options.lastEventId }),
        },
        signal: controller.signal,
      });
      resolveStatus(response.status);
      if (!response.body) return;
      const decoder = new TextDecoder();
      for await (const chunk of response.body) {
        parser.feed(decoder.decode(chunk, { stream: true }));
        await gate.wait();
      }
    } catch {
      // aborted
    }
  })();
  return {
    events: log.events,
    items: log.items,
    ready,
    status,
    ended,
    waitFor: log.waitFor,
    pause: gate.pause,
    resume: gate.resume,
    close: () => controller.abort(),
  };
}

/** Opens /api/stream/ws with the `ws` client (Authorization on the upgrade request). */
export function openWebSocketStream(
  url: string,
  token: string | null,
  options: { query?: string; lastEventId?: string } = {},
): SseConnection & { closed: Promise<number> } {
  const log = eventLog('websocket');
  const target = `${url.replace(/^http/, 'ws')}/api/stream/ws${options.query ? `?${options.query}` : ''}`;
  const socket = new WebSocket(target, {
    headers: {
      ...(token && { authorization: `Bearer ${token}` }),
      ...(options.lastEventId !== undefined && { 'last-event-id': options.lastEventId }),
    },
  });
  let resolveReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => {
    resolveReady = resolve;
  });
  const status = new Promise<number>((resolve) => {
    socket.once('upgrade', (response) => resolve(response.statusCode ?? 101));
    socket.once('unexpected-response', (_request, response) => resolve(response.statusCode ?? 0));
  });
  const closed = new Promise<number>((resolve) => {
    socket.once('close', (code) => resolve(code));
    socket.once('error', () => resolve(-1));
  });
  socket.on('message', (data) => {
    const message = JSON.parse(String(data)) as { type: string; seq?: number; event?: string };
    if (message.type === 'ready') {
      resolveReady();
      log.push({ event: 'ready', data: String(data) });
    } else if (message.type === 'disconnect') {
      log.push({ event: 'disconnect', data: String(data) });
    } else {
      log.push({ id: String(message.seq), event: message.event ?? 'message', data: String(data) });
    }
  });
  return {
    events: log.events,
    items: log.items,
    ready,
    status,
    closed,
    ended: closed.then(() => {}),
    waitFor: log.waitFor,
    pause: () => socket.pause(),
    resume: () => socket.resume(),
    close: () => socket.close(),
  };
}
