import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { hostOf, isNonPublicAddress, publicOnlyLookup } from './endpoint-guard.js';

/** How one webhook POST went. */
export type SendResult = { ok: true; status: number } | { ok: false; error: string };

export interface SendOptions {
  timeoutMs: number;
  allowPrivate: boolean;
  userAgent: string;
}

/** Bytes of a response body read (and dropped); the rest is not waited for. */
const MAX_RESPONSE_BYTES = 64 * 1024;

/**
 * POSTs one webhook with node:http(s): no redirects followed (a 3xx is a failure), a hard
 * timeout for the whole exchange, and (unless private targets are allowed) a lookup that
 * refuses non-public addresses at connection time.
 */
export function sendWebhook(
  endpoint: string,
  headers: Record<string, string>,
  body: string,
  options: SendOptions,
): Promise<SendResult> {
  const url = new URL(endpoint);
  const host = hostOf(url);
  if (!options.allowPrivate && isIP(host) && isNonPublicAddress(host)) {
    return Promise.resolve({ ok: false, error: `${host} is not a public address` });
  }
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve) => {
    let settled = false;
    const finish = (result: SendResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    const outgoing = request(
      url,
      {
        method: 'POST',
        headers: {
          ...headers,
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
          'user-agent': options.userAgent,
        },
        ...(!options.allowPrivate && { lookup: publicOnlyLookup }),
      },
      (response) => {
        const status = response.statusCode ?? 0;
        let read = 0;
        response.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read > MAX_RESPONSE_BYTES) response.destroy();
        });
        const done = () =>
          finish(
            status >= 200 && status < 300
              ? { ok: true, status }
              : { ok: false, error: `HTTP ${status}` },
          );
        response.on('end', done);
        response.on('close', done);
        response.on('error', done);
      },
    );
    const timer = setTimeout(() => {
      outgoing.destroy();
      finish({ ok: false, error: `no response within ${options.timeoutMs} ms` });
    }, options.timeoutMs);
    outgoing.on('error', (error: NodeJS.ErrnoException) =>
      finish({ ok: false, error: error.code ? `${error.code}: ${error.message}` : error.message }),
    );
    outgoing.end(body);
  });
}
