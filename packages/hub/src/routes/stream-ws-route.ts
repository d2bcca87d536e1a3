import { upgradeWebSocket } from '@hono/node-server';
import type { WebSocket } from 'ws';
import type { FeedSubscriber } from '../change-feed.js';
import { implement } from '../route-definition.js';
import { END_GRACE_MS } from './event-sink.js';
import {
  resumeSeq,
  streamFilter,
  streamOwner,
  WEBSOCKET_CLOSE_CODES,
  webSocketMessage,
} from './stream-route.js';

/** Bytes queued on a socket before the stream waits for its reader (as SSE waits for drain). */
const HIGH_WATER_BYTES = 64 * 1024;

/**
 * Sends each change as a message until either side closes. A reader that does not keep up
 * holds the loop once HIGH_WATER_BYTES are queued; the feed buffers up to its byte bound, and
 * past it the hub ends the stream with a `disconnect` message and close code 4008.
 */
async function pipeMessages(
  subscriber: FeedSubscriber,
  socket: WebSocket,
  blackboard: boolean,
): Promise<void> {
  // The peer may be gone before the first message (an upgrade aborted at once): the first
  // failed send, like the socket's close, ends the stream, so nothing more is read for it.
  let broken = false;
  const onSent = (error?: Error) => {
    if (error) {
      broken = true;
      subscriber.close();
    }
  };
  const open = () => !broken && socket.readyState === socket.OPEN;
  for (;;) {
    const changes = await subscriber.next();
    if (changes === null || !open()) break;
    let lastSent: Promise<void> = Promise.resolve();
    for (const [index, change] of changes.entries()) {
      const message = webSocketMessage(change, blackboard);
      if (index < changes.length - 1) socket.send(message, onSent);
      // The last message's callback runs once it has left the process (or the socket broke).
      else
        lastSent = new Promise((resolve) =>
          socket.send(message, (error) => {
            onSent(error);
            resolve();
          }),
        );
    }
    // A reader that stopped reading never takes lastSent: the hub ending the subscription
    // (past the byte bound, a revoked token) must still end the stream.
    if (socket.bufferedAmount > HIGH_WATER_BYTES) await Promise.race([lastSent, subscriber.done]);
  }
  const end = subscriber.endedBy;
  if (!open()) return;
  if (end) {
    socket.send(JSON.stringify({ type: 'disconnect', ...end }));
    socket.close(WEBSOCKET_CLOSE_CODES[end.reason], end.reason);
  } else {
    socket.close(1001, 'the hub is shutting down');
  }
  // The closing handshake needs the reader: one that does not read is dropped after a grace.
  const drop = setTimeout(() => socket.terminate(), END_GRACE_MS);
  drop.unref();
  socket.once('close', () => clearTimeout(drop));
}

export const streamWebSocketRoute = implement('streamContextWebSocket', {
  summary: 'Live changes over a WebSocket',
  description:
    'The same changes, filters and resume rules as `/api/stream`, as JSON text messages: first `{"type":"ready","afterSeq"}`, then `{"type":"event","seq","event","item"}` per change (with `blackboard=true`, the change of a blackboard entry is `{"type":"event","seq","event":"blackboard-updated","change","board","entry","item"}`). Resume with `since` or a `Last-Event-ID` header on the upgrade request. The token goes in the upgrade request\'s Authorization header. When the hub ends the stream (a reader holding more than the per-stream byte bound of undelivered changes; a revoked token) it sends `{"type":"disconnect","reason","message","resumeAfter"}` and closes with 4008 (`slow_reader`: resume with `since=resumeAfter`) or 4001 (`token_revoked`). Frames from the client are capped at 4 KiB.',
  tags: ['stream'],
  headers: [{ name: 'Last-Event-ID', description: 'Resume after this sequence.' }],
  statuses: { 101: 'Switching to the WebSocket protocol; each message carries one event.' },
  async handler({ query, caller, viewer, services, context }) {
    const afterSeq = resumeSeq(
      context.req.header('last-event-id'),
      query.since,
      await services.store.latestSeq(),
    );
    const owner = streamOwner(caller, context);
    services.feed.admit(viewer, owner);
    // The feed subscription starts only once the socket is open: a refused or aborted
    // upgrade never opens it, so it leaves nothing behind.
    let subscriber: FeedSubscriber | null = null;
    const upgrade = upgradeWebSocket(() => ({
      onOpen(_event, socket) {
        const raw = socket.raw as WebSocket;
        const opened = services.feed.subscribe(viewer, streamFilter(query), afterSeq, owner);
        subscriber = opened;
        const gone = new Promise<void>((resolve) => raw.once('close', () => resolve()));
        raw.once('close', () => opened.close());
        socket.send(JSON.stringify({ type: 'ready', afterSeq }));
        void pipeMessages(opened, raw, query.blackboard ?? false)
          .catch((error: unknown) => {
            services.logger.warn({ err: error }, 'websocket stream ended with an error');
            raw.close(1011, 'stream error');
          })
          .finally(() => {
            opened.close();
            services.feed.linger(opened, gone);
          });
      },
      onClose() {
        subscriber?.close();
      },
      onError() {
        subscriber?.close();
      },
    }));
    const response = await upgrade(context, async () => {});
    if (!response) {
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
