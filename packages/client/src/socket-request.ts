// One HTTP/1.1 request written straight on a TCP socket, for the light client's plain-HTTP
// hubs. A hook is a process per call: node:http's request path (its modules, the agent, the
// parser, each compiled on first use) costs it ~5 ms of CPU per run over a bare socket
// (measured on Node 24), and a hook sends one or two requests. The socket sends
// `Connection: close` and reads the answer to its end: Content-Length, chunked or until close.

/** The answer: its status and its body as text. */
export interface SocketAnswer {
  status: number;
  body: string;
}

export interface SocketRequest {
  url: URL;
  method: string;
  headers: Record<string, string>;
  payload?: string;
  /**
   * The whole request's limit, connecting to the last byte: past it, the request fails (a
   * server that sends a byte now and then cannot hold a hook past its budget).
   */
  timeoutMs: number;
  /** The largest answer taken, head and body (default MAX_ANSWER_BYTES): past it, it fails. */
  maxBytes?: number;
}

/** The largest answer a light request takes by default: 32 MiB (a full page of listed items). */
export const MAX_ANSWER_BYTES = 32 * 1024 * 1024;

/** Received bytes in one buffer that doubles as it fills (no copy of everything per chunk). */
class Received {
  private buffer = Buffer.alloc(16 * 1024);
  length = 0;

  add(chunk: Buffer): void {
    if (this.length + chunk.length > this.buffer.length) {
      const grown = Buffer.alloc(Math.max(this.buffer.length * 2, this.length + chunk.length));
      this.buffer.copy(grown, 0, 0, this.length);
      this.buffer = grown;
    }
    chunk.copy(this.buffer, this.length);
    this.length += chunk.length;
  }

  bytes(): Buffer {
    return this.buffer.subarray(0, this.length);
  }
}

const HEADER_END = Buffer.from('\r\n\r\n');

/** The body of a chunked answer, or null while it is incomplete. */
function dechunk(raw: Buffer): Buffer | null {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = raw.indexOf('\r\n', at);
    if (lineEnd < 0) return null;
    const size = Number.parseInt(raw.subarray(at, lineEnd).toString('latin1'), 16);
    if (!Number.isFinite(size)) throw new Error('malformed chunked answer');
    if (size === 0) return Buffer.concat(parts);
    const start = lineEnd + 2;
    if (raw.length < start + size + 2) return null;
    parts.push(raw.subarray(start, start + size));
    at = start + size + 2;
  }
}

interface Head {
  status: number;
  /** Where the body starts in the received bytes. */
  bodyAt: number;
  contentLength: number | null;
  chunked: boolean;
}

function parseHead(received: Buffer): Head | null {
  const end = received.indexOf(HEADER_END);
  if (end < 0) return null;
  const lines = received.subarray(0, end).toString('latin1').split('\r\n');
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '');
  if (!status) throw new Error(`malformed answer: ${(lines[0] ?? '').slice(0, 80)}`);
  let contentLength: number | null = null;
  let chunked = false;
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (name === 'content-length') contentLength = Number(value);
    else if (name === 'transfer-encoding') chunked = /chunked/i.test(value);
  }
  return { status: Number(status[1]), bodyAt: end + HEADER_END.length, contentLength, chunked };
}

/** The body once it is all there (`ended`: the server closed the connection), else null. */
function completeBody(head: Head, received: Buffer, ended: boolean): Buffer | null {
  const raw = received.subarray(head.bodyAt);
  if (head.chunked) return dechunk(raw);
  if (head.contentLength !== null) {
    return raw.length >= head.contentLength ? raw.subarray(0, head.contentLength) : null;
  }
  return ended ? raw : null;
}

/**
 * Sends one request on a new connection and resolves with the answer once its body is complete
 * (no wait for the server's close). Rejects with the socket's error, a timeout, or an answer
 * that ends early or is not HTTP.
 */
export function socketRequest(request: SocketRequest): Promise<SocketAnswer> {
  const { url, method, headers, payload, timeoutMs, maxBytes = MAX_ANSWER_BYTES } = request;
  const { connect } = process.getBuiltinModule('node:net');
  return new Promise((resolve, reject) => {
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const socket = connect({ host, port: Number(url.port) || 80 });
    const received = new Received();
    let head: Head | null = null;
    let settled = false;
    const finish = (error: Error | null, answer?: SocketAnswer) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      socket.destroy();
      if (error) reject(error);
      else resolve(answer as SocketAnswer);
    };
    const check = (ended: boolean) => {
      try {
        head ??= parseHead(received.bytes());
        const body = head && completeBody(head, received.bytes(), ended);
        if (head && body) finish(null, { status: head.status, body: body.toString('utf8') });
        else if (ended) finish(new Error('the connection closed before the answer was complete'));
      } catch (error) {
        finish(error as Error);
      }
    };
    const deadline = setTimeout(
      () => finish(new Error(`no complete answer in ${timeoutMs} ms`)),
      timeoutMs,
    );
    socket.on('error', (error) => finish(error));
    socket.on('data', (chunk: Buffer) => {
      if (received.length + chunk.length > maxBytes) {
        finish(new Error(`the answer is larger than ${maxBytes} bytes`));
        return;
      }
      received.add(chunk);
      check(false);
    });
    socket.on('end', () => check(true));
    socket.on('close', () => check(true));
    const lines = [`${method} ${url.pathname}${url.search} HTTP/1.1`, `host: ${url.host}`];
    for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
    lines.push('connection: close');
    if (payload !== undefined) lines.push(`content-length: ${Buffer.byteLength(payload)}`);
    // As node:http refuses them: a header line break would smuggle another header or request.
    if (lines.some((line) => /[\r\n]/.test(line))) {
      finish(new Error('a header holds a line break'));
      return;
    }
    // Written, not ended: the hub closes the connection after its answer (`connection: close`).
    socket.write(`${lines.join('\r\n')}\r\n\r\n${payload ?? ''}`);
  });
}
