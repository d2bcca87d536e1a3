import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CtxbusError } from '@ctxbus/core';
import { describe, expect, it } from 'vitest';
import { createHubCall, fetchTransport } from './hub-call.js';
import type { StreamState } from './hub-stream.js';
import { readHubStream } from './hub-stream.js';

/**
 * A local server speaking the hub's SSE wire format, one script per connection, recording the
 * Last-Event-ID each connection sent (a hub that repeats itself, to test the reader's rule).
 */
async function sseServer(
  scripts: (((response: ServerResponse) => void) | { status: number; body: unknown })[],
) {
  const lastEventIds: (string | undefined)[] = [];
  const server = createServer((request, response) => {
    const header = request.headers['last-event-id'];
    lastEventIds.push(typeof header === 'string' ? header : undefined);
    const script = scripts[lastEventIds.length - 1] ?? (() => {});
    if (typeof script !== 'function') {
      response.writeHead(script.status, { 'content-type': 'application/json' });
      response.end(JSON.stringify(script.body));
      return;
    }
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    script(response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const close = () => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return { url, lastEventIds, close };
}

const ready = (afterSeq: number) => `event: ready\ndata: ${JSON.stringify({ afterSeq })}\n\n`;
const change = (seq: number) =>
  `event: context-added\ndata: ${JSON.stringify({ seq })}\nid: ${seq}\n\n`;

/** Reads `server`'s stream until the change `lastSeq` (1 ms backoff): what it saw, and its states. */
async function readUntil(server: { url: string }, lastSeq: number) {
  const controller = new AbortController();
  const states: StreamState[] = [];
  const seen: number[] = [];
  const hub = createHubCall({
    url: server.url,
    transport: fetchTransport({ url: server.url, token: 't' }),
  });
  for await (const event of readHubStream({
    hub,
    parse: (message) => JSON.parse(message.data) as { seq: number },
    signal: controller.signal,
    backoff: { initialMs: 1, maxMs: 1 },
    onState: (state) => states.push(state),
  })) {
    seen.push(event.seq);
    if (event.seq === lastSeq) controller.abort();
  }
  return { seen, states };
}

describe('readHubStream', () => {
  it("goes on from the hub's newest change when its changes start over below the reader's (a replaced store)", async () => {
    const beyond = {
      status: 400,
      body: {
        error: {
          code: 'validation_failed',
          message: 'Last-Event-ID 9 is beyond the newest change (2)',
          details: { reason: 'beyond_newest', newest: 2 },
        },
      },
    };
    const server = await sseServer([
      (response) => response.end(ready(8) + change(9)),
      beyond,
      (response) => response.write(ready(2) + change(3)),
    ]);
    let seen: number[];
    try {
      ({ seen } = await readUntil(server, 3));
    } finally {
      await server.close();
    }
    expect(seen).toEqual([9, 3]);
    expect(server.lastEventIds).toEqual([undefined, '9', undefined]);
  });

  it('ends with the refusal when the first resume point is past the newest change (the caller asked for it)', async () => {
    const server = await sseServer([
      {
        status: 400,
        body: {
          error: {
            code: 'validation_failed',
            message: 'since 99 is beyond the newest change (2)',
            details: { reason: 'beyond_newest', newest: 2 },
          },
        },
      },
    ]);
    try {
      const hub = createHubCall({
        url: server.url,
        transport: fetchTransport({ ...server, token: 't' }),
      });
      const reading = (async () => {
        for await (const _ of readHubStream({
          hub,
          since: 99,
          parse: (message) => JSON.parse(message.data) as { seq: number },
          backoff: { initialMs: 1, maxMs: 1 },
        })) {
          // nothing comes
        }
      })();
      await expect(reading).rejects.toThrow(/beyond the newest change/);
    } finally {
      await server.close();
    }
  });

  it('resumes with Last-Event-ID from ready or the last change, and delivers each sequence once', async () => {
    const server = await sseServer([
      (response) => response.end(ready(7)),
      (response) => response.end(ready(7) + change(8)),
      (response) => response.write(ready(8) + change(8) + change(9)),
    ]);
    let seen: number[];
    let states: StreamState[];
    try {
      ({ seen, states } = await readUntil(server, 9));
    } finally {
      await server.close();
    }
    expect(seen).toEqual([8, 9]);
    expect(server.lastEventIds).toEqual([undefined, '7', '8']);
    expect(states).toEqual([
      'connecting',
      'live',
      'reconnecting',
      'connecting',
      'live',
      'reconnecting',
      'connecting',
      'live',
      'closed',
    ]);
  });

  it('ends with unauthorized when the hub says the token was revoked', async () => {
    const disconnect = { reason: 'token_revoked', message: 'revoked', resumeAfter: 3 };
    const server = await sseServer([
      (response) =>
        response.end(`${ready(3)}event: disconnect\ndata: ${JSON.stringify(disconnect)}\n\n`),
    ]);
    try {
      const hub = createHubCall({
        url: server.url,
        transport: fetchTransport({ ...server, token: 't' }),
      });
      const stream = readHubStream({ hub, parse: () => ({ seq: 0 }) });
      const error = await stream.next().catch((caught: unknown) => caught);
      expect(CtxbusError.isInstance(error) && error.code).toBe('unauthorized');
      expect(server.lastEventIds).toHaveLength(1);
    } finally {
      await server.close();
    }
  });
});
