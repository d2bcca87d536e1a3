// HTTP/1.1 clients for the delivery benchmark, written straight on TCP sockets, as lean as the
// raw floor's pg clients. Node's http client costs ~0.8 ms of CPU per request and ~12 us per
// received event here; in the one benchmark process that holds the writer and 100 subscribers,
// that CPU was counted as delivery latency. The hub on the other end is the real
// `ctxbus serve`, parsing real HTTP.

import type { Socket } from 'node:net';
import { connect } from 'node:net';

export interface RawResponse {
  status: number;
  body: string;
}

interface Pending {
  resolve: (response: RawResponse) => void;
  reject: (error: Error) => void;
}

/** One keep-alive connection: requests go one at a time; responses need a Content-Length. */
class RawConnection {
  private readonly socket: Socket;
  private buffer: Buffer = Buffer.alloc(0);
  private pending: Pending | null = null;
  /** The socket closed (the hub ends keep-alive connections idle for 5 s): never reused. */
  closed = false;
  readonly ready: Promise<void>;

  constructor(host: string, port: number) {
    this.socket = connect(port, host);
    this.socket.setNoDelay(true);
    this.ready = new Promise((resolve, reject) => {
      this.socket.once('connect', resolve);
      this.socket.once('error', reject);
    });
    this.socket.on('data', (chunk: Buffer) => {
      this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
      this.parse();
    });
    this.socket.on('error', (error) => this.fail(error));
    this.socket.on('close', () => {
      this.closed = true;
      this.fail(new Error('connection closed'));
    });
  }

  get busy(): boolean {
    return this.pending !== null;
  }

  /** Taken at once (busy from this call on), sent once the connection is up. */
  send(head: string, body: string): Promise<RawResponse> {
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject };
      this.ready.then(() => this.socket.write(`${head}\r\n\r\n${body}`), reject);
    });
  }

  close(): void {
    this.socket.destroy();
  }

  private parse(): void {
    const end = this.buffer.indexOf('\r\n\r\n');
    if (end < 0) return;
    const head = this.buffer.subarray(0, end).toString('latin1');
    const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
    if (!length) {
      this.fail(new Error(`response without Content-Length: ${head.split('\r\n')[0]}`));
      return;
    }
    const total = end + 4 + Number(length[1]);
    if (this.buffer.length < total) return;
    const body = this.buffer.subarray(end + 4, total).toString('utf8');
    this.buffer = this.buffer.subarray(total);
    const pending = this.pending;
    this.pending = null;
    pending?.resolve({ status: Number(head.slice(9, 12)), body });
  }

  private fail(error: Error): void {
    const pending = this.pending;
    this.pending = null;
    pending?.reject(error);
  }
}

/** POSTs JSON on keep-alive connections: an idle one, or a new one when all are busy. */
export class RawHttpClient {
  private readonly connections: RawConnection[] = [];
  private readonly host: string;
  private readonly port: number;
  private readonly token: string;

  constructor(url: string, token: string) {
    this.token = token;
    const target = new URL(url);
    this.host = target.hostname;
    this.port = Number(target.port);
  }

  post(path: string, body: unknown): Promise<RawResponse> {
    const text = JSON.stringify(body);
    // A closed connection is dropped: a write to its destroyed socket would be lost silently,
    // and the post would wait for an answer forever.
    for (let index = this.connections.length - 1; index >= 0; index--) {
      if (this.connections[index]?.closed) this.connections.splice(index, 1);
    }
    let connection = this.connections.find((candidate) => !candidate.busy);
    if (!connection) {
      connection = new RawConnection(this.host, this.port);
      this.connections.push(connection);
    }
    // No await before send: a post issued while this one waited for a new connection's
    // handshake would find it idle and take it too, and one of the two would never settle.
    const head = [
      `POST ${path} HTTP/1.1`,
      `Host: ${this.host}:${this.port}`,
      `Authorization: Bearer ${this.token}`,
      'Content-Type: application/json',
      `Content-Length: ${Buffer.byteLength(text)}`,
    ].join('\r\n');
    return connection.send(head, text);
  }

  close(): void {
    for (const connection of this.connections) connection.close();
  }
}

/**
 * An event stream read off its socket: `onEvent` gets each complete SSE event's text and the
 * time its last bytes arrived (taken before any parsing). Chunked framing is skipped: every
 * event is whole inside one chunk (the hub writes each batch of events as one chunk).
 */
export function openRawEventStream(
  url: string,
  path: string,
  token: string,
  onEvent: (event: string, at: number) => void,
): { ready: Promise<void>; close(): void } {
  const target = new URL(url);
  const socket = connect(Number(target.port), target.hostname);
  socket.setNoDelay(true);
  let resolveReady: () => void = () => {};
  let rejectReady: (error: Error) => void = () => {};
  const ready = new Promise<void>((resolve, reject) => {
    resolveReady = resolve;
    rejectReady = reject;
  });
  socket.once('connect', () => {
    socket.write(
      `GET ${path} HTTP/1.1\r\nHost: ${target.host}\r\nAuthorization: Bearer ${token}\r\nAccept: text/event-stream\r\n\r\n`,
    );
  });
  let headers = true;
  let text = '';
  socket.on('data', (chunk: Buffer) => {
    const at = performance.now();
    text += chunk.toString('utf8');
    if (headers) {
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return;
      const status = Number(text.slice(9, 12));
      if (status !== 200) {
        rejectReady(new Error(`stream answered ${status}`));
        socket.destroy();
        return;
      }
      headers = false;
      text = text.slice(end + 4);
    }
    for (;;) {
      const end = text.indexOf('\n\n');
      if (end < 0) break;
      const block = text.slice(0, end);
      text = text.slice(end + 2);
      // Chunk-size lines come before an event; keep-alive comments have none.
      const start = block.indexOf('event: ');
      if (start < 0) continue;
      const event = block.slice(start);
      if (event.startsWith('event: ready')) resolveReady();
      else onEvent(event, at);
    }
  });
  socket.on('error', (error) => rejectReady(error));
  return { ready, close: () => socket.destroy() };
}
