import { streamEventSchema, streamQuerySchema } from '@ctxbus/core';
import { upgradeWebSocket } from '@hono/node-server';
import { viewerOf } from '../caller.js';
import { defineRoute } from '../route-definition.js';
import { resumeSeq, streamFilter, webSocketMessage } from './stream-route.js';

export const streamWebSocketRoute = defineRoute({
  method: 'GET',
  path: '/api/stream/ws',
  operationId: 'streamContextWebSocket',
  summary: 'Live changes over a WebSocket',
  description:
    'The same changes, filters and resume rules as `/api/stream`, as JSON text messages: first `{"type":"ready","afterSeq"}`, then `{"type":"event","seq","event","item"}` per change. Resume with `since` or a `Last-Event-ID` header on the upgrade request. The token goes in the upgrade request\'s Authorization header.',
  tags: ['stream'],
  auth: 'runtime',
  query: streamQuerySchema,
  headers: [{ name: 'Last-Event-ID', description: 'Resume after this sequence.' }],
  responses: {
    101: {
      description: 'Switching to the WebSocket protocol; each message carries one event.',
      schema: streamEventSchema,
    },
  },
  async handler({ query, caller, services, context }) {
    const viewer = viewerOf(caller);
    const afterSeq = resumeSeq(
      context.req.header('last-event-id'),
      query.since,
      await services.store.latestSeq(),
    );
    const subscriber = services.feed.subscribe(viewer, streamFilter(query), afterSeq);
    const upgrade = upgradeWebSocket(() => ({
      onOpen(_event, socket) {
        socket.send(JSON.stringify({ type: 'ready', afterSeq }));
        void (async () => {
          for (;;) {
            const changes = await subscriber.next();
            if (changes === null) break;
            for (const change of changes) socket.send(webSocketMessage(change));
          }
          socket.close(1001, 'the hub is shutting down');
        })().catch((error: unknown) => {
          services.logger.warn({ err: error }, 'websocket stream ended with an error');
          socket.close(1011, 'stream error');
        });
      },
      onClose() {
        subscriber.close();
      },
      onError() {
        subscriber.close();
      },
    }));
    const response = await upgrade(context, async () => {});
    if (!response) {
      subscriber.close();
      return {
        status: 426,
        body: {
          error: {
            code: 'validation_failed',
            message: 'this route needs a WebSocket upgrade request',
          },
        },
      };
    }
    return response;
  },
});
