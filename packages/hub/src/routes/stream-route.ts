import type { ItemFilter } from '@ctxbus/core';
import { CtxbusError, streamEventSchema, streamQuerySchema } from '@ctxbus/core';
import type { Change, ChangeKind } from '@ctxbus/store';
import { streamSSE } from 'hono/streaming';
import type { z } from 'zod';
import { viewerOf } from '../caller.js';
import { defineRoute } from '../route-definition.js';

export const EVENT_NAMES: Record<ChangeKind, string> = {
  added: 'context-added',
  consumed: 'context-consumed',
  superseded: 'context-superseded',
};

const sseData = new WeakMap<Change, string>();
const webSocketMessages = new WeakMap<Change, string>();

/**
 * The `data` of a change's SSE event. Serialized once per change and shared: the feed hands
 * the same Change objects to every subscriber, so 100 subscribers cost one JSON.stringify.
 */
export function sseEventData(change: Change): string {
  let data = sseData.get(change);
  if (data === undefined) {
    data = JSON.stringify({ seq: change.seq, event: EVENT_NAMES[change.kind], item: change.item });
    sseData.set(change, data);
  }
  return data;
}

/** A change's WebSocket message, serialized once per change like `sseEventData`. */
export function webSocketMessage(change: Change): string {
  let message = webSocketMessages.get(change);
  if (message === undefined) {
    message = JSON.stringify({
      type: 'event',
      seq: change.seq,
      event: EVENT_NAMES[change.kind],
      item: change.item,
    });
    webSocketMessages.set(change, message);
  }
  return message;
}

/** Where a stream starts: Last-Event-ID, else `since`, else the newest change. */
export function resumeSeq(
  header: string | undefined,
  since: number | undefined,
  latest: number,
): number {
  if (header !== undefined && header.trim() !== '') {
    if (!/^\d+$/.test(header.trim())) {
      throw new CtxbusError('validation_failed', 'Last-Event-ID must be a sequence number');
    }
    return Number(header.trim());
  }
  return since ?? latest;
}

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

export const streamRoute = defineRoute({
  method: 'GET',
  path: '/api/stream',
  operationId: 'streamContext',
  summary: 'Live changes as Server-Sent Events',
  description:
    "Events `context-added`, `context-consumed` and `context-superseded`, each with `id` = the change's sequence and `data` = `{seq, event, item}`, for the caller's team (private items only to their runtime), filtered by scope, scopeKey, type, tags (any) and minUrgency. Without `since` or `Last-Event-ID` the stream starts at the newest change; with either it first replays every later change, with no gap. A `ready` event (no id) says the subscription is live; `: keep-alive` comments keep proxies from closing an idle stream.",
  tags: ['stream'],
  auth: 'runtime',
  query: streamQuerySchema,
  headers: [
    {
      name: 'Last-Event-ID',
      description: 'Resume after this sequence (set by EventSource on reconnect).',
    },
  ],
  responses: {
    200: {
      description: "An event stream; each event's data matches this schema.",
      schema: streamEventSchema,
      contentType: 'text/event-stream',
    },
  },
  async handler({ query, caller, services, context }) {
    const viewer = viewerOf(caller);
    const afterSeq = resumeSeq(
      context.req.header('last-event-id'),
      query.since,
      await services.store.latestSeq(),
    );
    const filter = streamFilter(query);
    const subscriber = services.feed.subscribe(viewer, filter, afterSeq);
    return streamSSE(
      context,
      async (stream) => {
        stream.onAbort(() => subscriber.close());
        const keepAlive = setInterval(() => {
          void stream.write(': keep-alive\n\n').catch(() => subscriber.close());
        }, services.keepAliveSeconds * 1000);
        try {
          await stream.writeSSE({
            event: 'ready',
            data: JSON.stringify({ afterSeq }),
            retry: 1000,
          });
          for (;;) {
            const changes = await subscriber.next();
            if (changes === null) break;
            for (const change of changes) {
              await stream.writeSSE({
                id: String(change.seq),
                event: EVENT_NAMES[change.kind],
                data: sseEventData(change),
              });
            }
          }
        } finally {
          clearInterval(keepAlive);
          subscriber.close();
        }
      },
      async (error) => {
        services.logger.warn({ err: error }, 'event stream ended with an error');
        subscriber.close();
      },
    );
  },
});
