import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo, Server, Socket } from 'node:net';
import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { socketRequest } from './socket-request.js';

// The light client's bare-socket request against real servers: node:http's (what the hub runs
// on, in each of its body framings) and raw TCP ones for the answers a broken peer gives.

const servers: Server[] = [];

afterEach(async () => {
  await Promise.all(
    servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))),
  );
});

async function listen(server: Server): Promise<URL> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
}

/** A TCP server that answers each connection's first bytes with `reply`. */
function rawServer(reply: (socket: Socket) => void): Promise<URL> {
  return listen(createServer((socket) => socket.once('data', () => reply(socket))));
}

const request = (url: URL, path: string, payload?: string) =>
  socketRequest({
    url: new URL(path, url),
    method: payload === undefined ? 'GET' : 'POST',
    headers: { authorization: 'Bearer t', accept: 'application/json' },
    ...(payload !== undefined && { payload }),
    timeoutMs: 30_000,
  });

describe('socketRequest', () => {
  it('sends the method, path, query, headers and a UTF-8 body as node:http reads them', async () => {
    const seen: unknown[] = [];
    const url = await listen(
      createHttpServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (chunk: Buffer) => chunks.push(chunk));
        req.on('end', () => {
          seen.push({
            method: req.method,
            url: req.url,
            authorization: req.headers.authorization,
            connection: req.headers.connection,
            body: Buffer.concat(chunks).toString('utf8'),
          });
          res.writeHead(201, { 'content-type': 'application/json' }).end('{"ok":"✓"}');
        });
      }),
    );
    const answer = await request(url, '/api/context?since=3&limit=2', '{"title":"déjà 決定"}');
    expect(answer).toEqual({ status: 201, body: '{"ok":"✓"}' });
    expect(seen).toEqual([
      {
        method: 'POST',
        url: '/api/context?since=3&limit=2',
        authorization: 'Bearer t',
        connection: 'close',
        body: '{"title":"déjà 決定"}',
      },
    ]);
  });

  it('reads a chunked answer, and one that ends with the connection', async () => {
    const chunked = await listen(
      createHttpServer((_req, res) => {
        res.writeHead(500);
        res.write('{"error":');
        res.end('{"code":"unavailable"}}');
      }),
    );
    expect(await request(chunked, '/')).toEqual({
      status: 500,
      body: '{"error":{"code":"unavailable"}}',
    });
    const untilClose = await rawServer((socket) => socket.end('HTTP/1.1 200 OK\r\n\r\n{"a":1}'));
    expect(await request(untilClose, '/')).toEqual({ status: 200, body: '{"a":1}' });
  });

  it('fails on an answer cut short, one that is not HTTP, a line break in a header', async () => {
    const cut = await rawServer((socket) =>
      socket.end('HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n{"a"'),
    );
    await expect(request(cut, '/')).rejects.toThrow('closed before the answer was complete');
    const notHttp = await rawServer((socket) => socket.end('SSH-2.0-OpenSSH_9.6\r\n\r\n'));
    await expect(request(notHttp, '/')).rejects.toThrow('malformed answer: SSH-2.0');
    await expect(
      socketRequest({
        url: cut,
        method: 'GET',
        headers: { authorization: 'Bearer t\r\nx-smuggled: 1' },
        timeoutMs: 30_000,
      }),
    ).rejects.toThrow('a header holds a line break');
  });

  it('holds the whole request to its limit, however often a byte comes, and bounds the answer', async () => {
    const timers: NodeJS.Timeout[] = [];
    // A head, then a space every 50 ms: never idle, never done.
    // The client cuts each connection: the server's side of it then fails, said to no one.
    const drip = await rawServer((socket) => {
      socket.on('error', () => {});
      socket.write('HTTP/1.1 200 OK\r\ncontent-length: 1000000\r\n\r\n');
      const timer = setInterval(() => socket.write(' '), 50);
      timers.push(timer);
      socket.once('close', () => clearInterval(timer));
    });
    const started = performance.now();
    await expect(
      socketRequest({ url: drip, method: 'GET', headers: {}, timeoutMs: 600 }),
    ).rejects.toThrow('no complete answer in 600 ms');
    expect(performance.now() - started).toBeLessThan(5_000);
    for (const timer of timers) clearInterval(timer);
    // An answer past the bound fails as it arrives, before it is all there.
    const huge = await rawServer((socket) => {
      socket.on('error', () => {});
      socket.write('HTTP/1.1 200 OK\r\ncontent-length: 100000000\r\n\r\n');
      socket.write(Buffer.alloc(200_000, 120));
    });
    await expect(
      socketRequest({
        url: huge,
        method: 'GET',
        headers: {},
        timeoutMs: 30_000,
        maxBytes: 100_000,
      }),
    ).rejects.toThrow('larger than 100000 bytes');
  });
});
