import type { StreamEvent } from '@ctxbus/core/contract';
import { CtxbusError, streamDisconnectSchema, streamEventSchema } from '@ctxbus/core/contract';
import type { EventSourceMessage } from 'eventsource-parser';
import { createParser } from 'eventsource-parser';
import { errorFromResponse, toSearchParams } from './hub-errors.js';

/** What the stream needs of a client: authorized requests and the hub's newest sequence. */
export interface StreamConnection {
  readonly url: string;
  send(path: string, init?: RequestInit): Promise<Response>;
  health(): Promise<{ seq: number }>;
}

/** The filters `GET /api/stream` understands (arrays become comma lists). */
export interface StreamFilter {
  scope?: string | string[];
  scopeKey?: string;
  type?: string | string[];
  tags?: string | string[];
  minUrgency?: string;
}

/** Where a stream is: connecting, live (the hub said `ready`), waiting to reconnect, or ended. */
export type StreamState = 'connecting' | 'live' | 'reconnecting' | 'closed';

export interface StreamOptions extends StreamFilter {
  /**
   * Deliver the changes after this sequence first. Default: the hub's newest sequence when
   * the stream starts (read from `/health`), so that even a connection lost before its first
   * event resumes without a gap.
   */
  since?: number;
  /** Ends the stream (the generator returns). */
  signal?: AbortSignal;
  /** Waits between reconnections: from `initialMs` (250), doubling up to `maxMs` (5,000). */
  backoff?: { initialMs?: number; maxMs?: number };
  /** Each change of state, with the error that caused a reconnection. */
  onState?: (state: StreamState, cause?: unknown) => void;
}

const wait = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });

/**
 * Reads `GET /api/stream` with `fetch` (EventSource cannot send an Authorization header).
 * When the connection drops or the hub ends it (`disconnect`: a slow reader), it reconnects
 * after a backoff with `Last-Event-ID` = the last sequence delivered, so no change is missed
 * or repeated (a change at or below that sequence is never yielded twice). Errors that a retry
 * cannot fix (a wrong or revoked token, a bad filter) end it with a `CtxbusError`.
 */
export async function* openLiveStream(
  connection: StreamConnection,
  options: StreamOptions = {},
): AsyncGenerator<StreamEvent> {
  const { since, signal, backoff = {}, onState, ...filter } = options;
  const initialMs = backoff.initialMs ?? 250;
  const maxMs = backoff.maxMs ?? 5_000;
  const query = toSearchParams(filter).toString();
  const path = `/api/stream${query ? `?${query}` : ''}`;
  let lastSeq: number | undefined = since;
  let delay = initialMs;
  try {
    while (!signal?.aborted) {
      let cause: unknown;
      try {
        onState?.('connecting');
        if (lastSeq === undefined) lastSeq = (await connection.health()).seq;
        const response = await connection.send(path, {
          headers: { accept: 'text/event-stream', 'last-event-id': String(lastSeq) },
          ...(signal && { signal }),
        });
        if (!response.ok || !response.body) throw await errorFromResponse(response);
        const messages: EventSourceMessage[] = [];
        const parser = createParser({ onEvent: (message) => messages.push(message) });
        const decoder = new TextDecoder();
        const reader = response.body.getReader();
        try {
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            parser.feed(decoder.decode(value, { stream: true }));
            for (let message = messages.shift(); message; message = messages.shift()) {
              if (message.event === 'ready') {
                delay = initialMs;
                onState?.('live');
              } else if (message.event === 'disconnect') {
                const end = streamDisconnectSchema.parse(JSON.parse(message.data));
                if (end.reason === 'token_revoked') {
                  throw new CtxbusError('unauthorized', end.message, { retryable: false });
                }
                cause = new CtxbusError('unavailable', `the hub ended the stream: ${end.message}`);
              } else {
                const event = streamEventSchema.parse(JSON.parse(message.data));
                if (event.seq <= lastSeq) continue;
                lastSeq = event.seq;
                yield event;
              }
            }
          }
        } finally {
          reader.releaseLock();
          await response.body.cancel().catch(() => {});
        }
        cause ??= new CtxbusError('unavailable', 'the hub closed the stream');
      } catch (error) {
        if (signal?.aborted) return;
        if (CtxbusError.isInstance(error) && !error.retryable) throw error;
        cause = error;
      }
      onState?.('reconnecting', cause);
      // Up to half of the wait is random, so that many pages do not come back at once.
      await wait(delay / 2 + Math.random() * (delay / 2), signal);
      delay = Math.min(delay * 2, maxMs);
    }
  } finally {
    onState?.('closed');
  }
}
