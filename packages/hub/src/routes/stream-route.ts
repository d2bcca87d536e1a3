import type { ItemFilter } from '@ctxbus/core';
import {
  blackboardEventOf,
  CHANGE_EVENT_NAMES,
  CtxbusError,
  isSequenceText,
  type streamQuerySchema,
} from '@ctxbus/core';
import type { Change } from '@ctxbus/store';
import type { Context } from 'hono';
import type { z } from 'zod';
import { bearerHash } from '../auth.js';
import type { Caller } from '../caller.js';
import type { FeedSubscriber, StreamEnd, StreamOwner } from '../change-feed.js';
import type { HubServices } from '../hub-services.js';
import { implement } from '../route-definition.js';
import type { EventSink } from './event-sink.js';
import { openEventSink } from './event-sink.js';

const sseFrames = new WeakMap<Change, Buffer>();
const webSocketMessages = new WeakMap<Change, string>();
const blackboardSseFrames = new WeakMap<Change, Buffer>();
const blackboardWebSocketMessages = new WeakMap<Change, string>();

/**
 * What a change goes out as: `{seq, event, item}` under its context-* name; for a stream
 * opened with `blackboard=true`, a blackboard entry's change instead goes out as
 * `blackboard-updated` with `{seq, event, change, board, entry, item}` (one event per change
 * either way, so `id`/Last-Event-ID resumption is unchanged).
 */
function eventOf(change: Change, blackboard: boolean): { event: string; data: object } {
  const board = blackboard ? blackboardEventOf(change) : null;
  if (board) return { event: board.event, data: board };
  const event = CHANGE_EVENT_NAMES[change.kind];
  return { event, data: { seq: change.seq, event, item: change.item } };
}

/**
 * A change's whole SSE event (`id`, `event`, `data`), encoded once per change and shared: the
 * feed hands the same Change objects to every subscriber, so 100 subscribers cost one
 * JSON.stringify and one UTF-8 encoding.
 */
export function sseFrame(change: Change, blackboard = false): Buffer {
  const cache = blackboard ? blackboardSseFrames : sseFrames;
  let frame = cache.get(change);
  if (frame === undefined) {
    const { event, data } = eventOf(change, blackboard);
    frame = Buffer.from(`event: ${event}\ndata: ${JSON.stringify(data)}\nid: ${change.seq}\n\n`);
    cache.set(change, frame);
  }
  return frame;
}

/** A change's WebSocket message, serialized once per change like `sseFrame`. */
export function webSocketMessage(change: Change, blackboard = false): string {
  const cache = blackboard ? blackboardWebSocketMessages : webSocketMessages;
  let message = cache.get(change);
  if (message === undefined) {
    message = JSON.stringify({ type: 'event', ...eventOf(change, blackboard).data });
    cache.set(change, message);
  }
  return message;
}

/**
 * Where a stream starts: Last-Event-ID, else `since`, else the newest change. A point past the
 * newest change is refused (400, reason `beyond_newest`): no sequence this hub gave is there,
 * and a stream started there would skip every change up to it without a word.
 */
export function resumeSeq(
  header: string | undefined,
  since: number | undefined,
  latest: number,
): number {
  let from = since;
  let name = 'since';
  if (header !== undefined && header.trim() !== '') {
    // The same rule as `since`: digits, at most 2^53 - 1, refused alike on every store.
    if (!isSequenceText(header.trim())) {
      throw new CtxbusError(
        'validation_failed',
        `Last-Event-ID must be a sequence number from 0 to ${Number.MAX_SAFE_INTEGER}`,
      );
    }
    from = Number(header.trim());
    name = 'Last-Event-ID';
  }
  if (from === undefined) return latest;
  if (from > latest) {
    throw new CtxbusError(
      'validation_failed',
      `${name} ${from} is beyond the newest change (${latest}): resume from a sequence this hub gave, or leave it out to start at the newest`,
      { details: { reason: 'beyond_newest', newest: latest } },
    );
  }
  return from;
}

/** The token a stream is opened with (so that its revocation ends the stream). */
export function streamOwner(caller: Caller, context: Context): StreamOwner | undefined {
  const tokenHash = bearerHash(context.req.header('authorization') ?? '');
  return tokenHash === null ? undefined : { tokenId: caller.tokenId, tokenHash };
}

/**
 * When the hub ends a stream, its reader is told why: an SSE `disconnect` event or a
 * WebSocket `{"type":"disconnect"}` message (then the close code below), with the reason
 * (`slow_reader`, `token_revoked`), a message and the sequence to resume after.
 */
export const WEBSOCKET_CLOSE_CODES: Record<StreamEnd['reason'], number> = {
  slow_reader: 4008,
  token_revoked: 4001,
};

/** The store filter a stream query asks for. */
export function streamFilter(query: StreamQuery): ItemFilter {
  return {
    ...(query.scope && { scopes: query.scope }),
    ...(query.scopeKey !== undefined && { scopeKey: query.scopeKey }),
    ...(query.type && { types: query.type }),
    ...(query.tags && { tags: query.tags }),
    ...(query.minUrgency !== undefined && { minUrgency: query.minUrgency }),
  };
}

type StreamQuery = z.output<typeof streamQuerySchema>;

export const streamRoute = implement('streamContext', {
  summary: 'Live changes as Server-Sent Events',
  description:
    "Events `context-added`, `context-consumed` and `context-superseded`, each with `id` = the change's sequence and `data` = `{seq, event, item}` (with `blackboard=true`, a blackboard entry's change is a `blackboard-updated` event instead, `data` = `{seq, event, change, board, entry, item}`), for the caller's team (private items only to their runtime), filtered by scope, scopeKey, type, tags (any) and minUrgency. Without `since` or `Last-Event-ID` the stream starts at the newest change; with either it first replays every later change, with no gap. A `ready` event (no id) says the subscription is live; `: keep-alive` comments keep proxies from closing an idle stream. When the hub ends the stream it says why first, in a `disconnect` event (no id) with `{reason, message, resumeAfter}`: `slow_reader` (the reader held more than the per-stream byte bound of undelivered changes; reconnect with Last-Event-ID, as EventSource does) or `token_revoked`.",
  tags: ['stream'],
  headers: [
    {
      name: 'Last-Event-ID',
      description: 'Resume after this sequence (set by EventSource on reconnect).',
    },
  ],
  statuses: {
    200: "An event stream; each event's data matches this schema (a `blackboard-updated` event's, with `blackboard=true`, matches blackboardEventSchema).",
  },
  async handler({ query, caller, viewer, services, context }) {
    const afterSeq = resumeSeq(
      context.req.header('last-event-id'),
      query.since,
      await services.store.latestSeq(),
    );
    const filter = streamFilter(query);
    const owner = streamOwner(caller, context);
    services.feed.admit(viewer, owner);
    const subscriber = services.feed.subscribe(viewer, filter, afterSeq, owner);
    const sink = openEventSink(context, () => subscriber.close());
    void pipeEvents(subscriber, sink, afterSeq, services, query.blackboard ?? false).catch(
      (error: unknown) => {
        services.logger.warn({ err: error }, 'event stream ended with an error');
        subscriber.close();
        sink.end();
      },
    );
    return sink.response;
  },
});

const KEEP_ALIVE = Buffer.from(': keep-alive\n\n');

/**
 * Writes `ready`, then each batch of the subscriber's changes as one write, until either side
 * closes. A slow reader holds the loop while the feed buffers, up to its byte bound; past it
 * the hub ends the stream with a `disconnect` event (the reader resumes by Last-Event-ID).
 */
async function pipeEvents(
  subscriber: FeedSubscriber,
  sink: EventSink,
  afterSeq: number,
  services: HubServices,
  blackboard: boolean,
): Promise<void> {
  const keepAlive = setInterval(() => sink.write(KEEP_ALIVE), services.keepAliveSeconds * 1000);
  try {
    sink.write(
      Buffer.from(
        `event: ready\nid: ${afterSeq}\ndata: ${JSON.stringify({ afterSeq })}\nretry: 1000\n\n`,
      ),
    );
    for (;;) {
      const changes = await subscriber.next();
      if (changes === null || sink.closed) break;
      const frames = changes.map((change) => sseFrame(change, blackboard));
      const ready = sink.write(frames.length === 1 ? (frames[0] as Buffer) : Buffer.concat(frames));
      // A reader that stopped reading never drains: the hub ending its subscription (past the
      // byte bound, a revoked token) must still end the stream.
      if (!ready) await Promise.race([sink.drained(), subscriber.done]);
    }
    if (subscriber.endedBy) {
      sink.write(Buffer.from(`event: disconnect\ndata: ${JSON.stringify(subscriber.endedBy)}\n\n`));
    }
  } finally {
    clearInterval(keepAlive);
    subscriber.close();
    sink.end();
    services.feed.linger(subscriber, sink.gone);
  }
}
