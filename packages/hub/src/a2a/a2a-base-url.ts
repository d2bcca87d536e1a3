import { CtxbusError } from '@ctxbus/core';
import ipaddr from 'ipaddr.js';

// The URL an Agent Card gives for the hub. A card names the endpoint a client will send its
// token to, so it never echoes an arbitrary Host header: it is the hub's configured public URL
// (`ctxbus serve --public-url`), else the request's own origin only when that names a loopback
// host (localhost, 127.0.0.0/8, ::1). A request through any other name, with no public URL
// configured, gets a 503 that says to configure one.

/** A configured public URL without its trailing slashes; refuses what is not http(s). */
export function normalizePublicUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new CtxbusError('validation_failed', `the public URL "${value}" is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new CtxbusError('validation_failed', `the public URL must be http(s) (got "${value}")`);
  }
  if (url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') {
    throw new CtxbusError(
      'validation_failed',
      'the public URL takes no query, fragment or credentials',
    );
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

/** Whether a hostname (as in a URL: IPv6 in brackets) is this machine's loopback. */
export function isLoopbackHostname(hostname: string): boolean {
  const bare = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (bare === 'localhost' || bare.endsWith('.localhost')) return true;
  if (!ipaddr.isValid(bare)) return false;
  const address = ipaddr.process(bare);
  return address.range() === 'loopback';
}

/** The base URL for cards served in answer to a request to `requestUrl` (Host included). */
export function cardBaseUrl(requestUrl: string, publicUrl: string | null): string {
  if (publicUrl !== null) return publicUrl;
  const url = new URL(requestUrl);
  if (isLoopbackHostname(url.hostname)) return url.origin;
  throw new CtxbusError(
    'unavailable',
    `this hub has no public URL, and ${url.hostname} is not a loopback name: start it with --public-url (or $CTXBUS_PUBLIC_URL) to serve Agent Cards under that name`,
    { retryable: false },
  );
}
