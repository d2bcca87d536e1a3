import type { IncomingHttpHeaders, Server } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describeCheck, TEST_WAIT_MS } from './wait-until.ts';

export interface ReceivedWebhook {
  headers: IncomingHttpHeaders;
  body: string;
  /** The status the receiver answered with. */
  status: number;
}

export interface WebhookReceiver {
  url: string;
  received: ReceivedWebhook[];
  /** Decides each answer (default 204). */
  respond: (request: { headers: IncomingHttpHeaders; body: string }) => number;
  waitFor(predicate: (received: ReceivedWebhook[]) => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** A real HTTP server on loopback that records every webhook POST it gets. */
export async function startWebhookReceiver(port = 0): Promise<WebhookReceiver> {
  const listeners = new Set<() => void>();
  const receiver: WebhookReceiver = {
    url: '',
    received: [],
    respond: () => 204,
    waitFor(predicate, timeoutMs = TEST_WAIT_MS) {
      if (predicate(receiver.received)) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(
            new Error(
              `timed out after ${timeoutMs} ms waiting for webhooks to satisfy ${describeCheck(predicate)}; received ${receiver.received.length}`,
            ),
          );
        }, timeoutMs);
        const check = () => {
          if (!predicate(receiver.received)) return;
          clearTimeout(timer);
          listeners.delete(check);
          resolve();
        };
        listeners.add(check);
      });
    },
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const status = receiver.respond({ headers: request.headers, body });
      receiver.received.push({ headers: request.headers, body, status });
      response.writeHead(status).end();
      for (const listener of [...listeners]) listener();
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return receiver;
}
