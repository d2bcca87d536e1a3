import type { BlackboardEvent, StreamEvent, WireQuery } from '@ctxbus/core/contract';
import {
  BLACKBOARD_EVENT,
  blackboardEventSchema,
  CtxbusError,
  createBackoff,
  isSequenceText,
  streamDisconnectSchema,
  streamEventNames,
  streamEventSchema,
} from '@ctxbus/core/contract';
import type { EventSourceMessage } from 'eventsource-parser';
import { createParser } from 'eventsource-parser';
import type { HubCall } from './hub-call.js';

// The one reader of `GET /api/stream` (the Node client's `stream()` and the browser's live
// stream): SSE over fetch (EventSource cannot send an Authorization header), resumed after a
// drop with Last-Event-ID, each sequence delivered once, reconnections spread by jitter.

/** Where a stream is: connecting, live (the hub said `ready`), waiting to reconnect, or ended. */
export type StreamState = 'connecting' | 'live' | 'reconnecting' | 'closed';

/** One SSE message of the stream. */
export interface StreamMessage {
  event?: string | undefined;
  data: string;
}

export interface HubStreamOptions<T extends { seq: number }> {
  hub: Pick<HubCall, 'open' | 'url'>;
  /** The stream's filters (`scope`, `type`, `tags`, ..., `blackboard`). */
  query?: WireQuery<'streamContext'>;
  /** A change's value, or null to skip a kind of event this reader does not know. */
  parse(message: StreamMessage): T | null;
  /** Deliver the changes after this sequence first. */
  since?: number;
  /** Where to start when `since` is not given (default: where the hub's `ready` says). */
  start?: () => Promise<number>;
  signal?: AbortSignal;
  /** Reconnect when the connection drops or the hub ends it (default true). */
  reconnect?: boolean;
  /** Waits between reconnections: from `initialMs` (250), doubling up to `maxMs` (5,000). */
  backoff?: { initialMs?: number; maxMs?: number };
  /** Each change of state, with the error that caused a reconnection. */
  onState?: (state: StreamState, cause?: unknown) => void;
}

/** A change event of a kind this reader knows, or null (skipped). */
export function parseStreamEvent(message: StreamMessage): StreamEvent | null {
  return (streamEventNames as readonly string[]).includes(message.event ?? '')
    ? streamEventSchema.parse(JSON.parse(message.data))
    : null;
}

/** As `parseStreamEvent`, and a blackboard entry's change (`blackboard=true` streams). */
export function parseBlackboardStreamEvent(
  message: StreamMessage,
): StreamEvent | BlackboardEvent | null {
  return message.event === BLACKBOARD_EVENT
    ? blackboardEventSchema.parse(JSON.parse(message.data))
    : parseStreamEvent(message);
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
 * The SSE messages of a response body, as they arrive; the body is released at the end. An
 * abort cancels the body at once: a fetch that does not tie the body to its signal (the hub's
 * own in-process client) would leave the read, and the hub's subscription, open until the next
 * change.
 */
async function* sseMessages(
  body: ReadableStream<Uint8Array>,
  signal?: AbortSignal,
): AsyncGenerator<EventSourceMessage> {
  const messages: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (message) => messages.push(message) });
  const decoder = new TextDecoder();
  const reader = body.getReader();
  const cancel = () => void reader.cancel().catch(() => {});
  if (signal?.aborted) cancel();
  signal?.addEventListener('abort', cancel, { once: true });
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      parser.feed(decoder.decode(value, { stream: true }));
      for (let message = messages.shift(); message; message = messages.shift()) yield message;
    }
  } finally {
    signal?.removeEventListener('abort', cancel);
    reader.releaseLock();
    await body.cancel().catch(() => {});
  }
}

/** The sequence a `ready` event says the stream starts after, if it says one. */
function readyAfter(data: string): number | undefined {
  try {
    const afterSeq = (JSON.parse(data) as { afterSeq?: unknown } | null)?.afterSeq;
    return Number.isSafeInteger(afterSeq) ? (afterSeq as number) : undefined;
  } catch {
    return undefined;
  }
}

/** The hub refused a resume point past its newest change (400, reason `beyond_newest`). */
const beyondNewest = (error: unknown): boolean =>
  CtxbusError.isInstance(error) &&
  (error.details as { details?: { reason?: unknown } } | undefined)?.details?.reason ===
    'beyond_newest';

/**
 * Reads the hub's live changes. When the connection drops or the hub ends it (`disconnect`: a
 * slow reader), it reconnects after a jittered, doubling wait with `Last-Event-ID` = the last
 * sequence it holds (from `since`, the hub's `ready`, or the last change), and skips any change
 * at or below it: nothing is missed or repeated. Errors that a retry cannot fix (a wrong or
 * revoked token, a bad filter) end it with a `CtxbusError`; so does any error without
 * `reconnect`. Ends when `signal` aborts.
 */
export async function* readHubStream<T extends { seq: number }>(
  options: HubStreamOptions<T>,
): AsyncGenerator<T> {
  const { hub, query = {}, parse, start, signal, reconnect = true, onState } = options;
  const backoff = createBackoff({
    initialMs: options.backoff?.initialMs ?? 250,
    maxMs: options.backoff?.maxMs ?? 5_000,
    jitter: 0.5,
  });
  let lastSeq = options.since;
  let wasLive = false;
  try {
    while (!signal?.aborted) {
      let cause: unknown;
      try {
        onState?.('connecting');
        if (lastSeq === undefined && start) lastSeq = await start();
        const response = await hub.open(
          'streamContext',
          { query },
          {
            headers: {
              accept: 'text/event-stream',
              ...(lastSeq !== undefined && { 'last-event-id': String(lastSeq) }),
            },
            ...(signal && { signal }),
          },
        );
        if (!response.body) throw new CtxbusError('unavailable', 'the hub sent no stream');
        for await (const message of sseMessages(response.body, signal)) {
          if (message.event === 'ready') {
            backoff.reset();
            lastSeq ??= readyAfter(message.data);
            wasLive = true;
            onState?.('live');
          } else if (message.event === 'disconnect') {
            const end = streamDisconnectSchema.parse(JSON.parse(message.data));
            // A revoked token cannot resume; a slow reader resumes from its last sequence.
            if (end.reason === 'token_revoked') {
              throw new CtxbusError('unauthorized', end.message, { retryable: false });
            }
            cause = new CtxbusError('unavailable', `the hub ended the stream: ${end.message}`);
          } else {
            const seq =
              message.id !== undefined && isSequenceText(message.id)
                ? Number(message.id)
                : undefined;
            if (seq !== undefined && lastSeq !== undefined && seq <= lastSeq) continue;
            if (seq !== undefined) lastSeq = seq;
            const value = parse(message);
            if (value === null) continue;
            yield value;
          }
        }
        cause ??= new CtxbusError('unavailable', 'the hub closed the stream');
      } catch (error) {
        if (signal?.aborted) return;
        if (wasLive && beyondNewest(error)) {
          // The hub's changes start over below where this reader was (its store was replaced):
          // nothing it holds is ahead, so it goes on from the hub's newest change.
          lastSeq = undefined;
          cause = error;
          onState?.('reconnecting', cause);
          continue;
        }
        const retryable = CtxbusError.isInstance(error) ? error.retryable : true;
        if (!reconnect || !retryable) {
          if (CtxbusError.isInstance(error)) throw error;
          throw new CtxbusError(
            'unavailable',
            `stream from ${hub.url} failed: ${(error as Error).message}`,
            { cause: error },
          );
        }
        cause = error;
      }
      if (!reconnect) return;
      onState?.('reconnecting', cause);
      await wait(backoff.next(), signal);
    }
  } finally {
    onState?.('closed');
  }
}
