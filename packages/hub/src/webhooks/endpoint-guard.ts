import type { LookupAddress, LookupOptions } from 'node:dns';
import { lookup } from 'node:dns';
import { lookup as lookupAsync } from 'node:dns/promises';
import { isIP } from 'node:net';
import { CtxbusError } from '@ctxbus/core';
import ipaddr from 'ipaddr.js';

// Webhook endpoints must not turn the hub into a network probe: only http(s), and no private,
// loopback, link-local or otherwise non-public address unless the hub's operator allows them.
// Checked when a subscription is created (with a clear error), and again on every connection
// (the resolved address, so DNS rebinding cannot slip a private address in later).

/**
 * Whether an IP address is anything but globally routable unicast. An allow-list, classified
 * by ipaddr.js (IANA's special-purpose registries): IPv4 passes only as `unicast`; IPv6 only
 * as `unicast` inside global unicast 2000::/3, so every form that embeds an IPv4 address
 * (IPv4-compatible ::/96, SIIT ::ffff:0:0:0/96, NAT64 64:ff9b::/96 and 64:ff9b:1::/48, 6to4
 * 2002::/16, Teredo) is refused whatever it embeds. The one exception is an IPv4-mapped
 * address (::ffff:a.b.c.d), which is the IPv4 address itself and is judged as such.
 */
export function isNonPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return ipaddr.IPv4.parse(address).range() !== 'unicast';
  if (family !== 6) return true;
  // The WHATWG URL parser writes a trailing dotted quad as hex first: ipaddr.js would read
  // `::a.b.c.d` (IPv4-compatible) as `::ffff:a.b.c.d` (mapped).
  // (A scoped address such as fe80::1%eth0 is no URL host: refused.)
  if (!URL.canParse(`http://[${address}]/`)) return true;
  const v6 = ipaddr.IPv6.parse(new URL(`http://[${address}]/`).hostname.slice(1, -1));
  const mapped = v6.parts.slice(0, 5).every((part) => part === 0) && v6.parts[5] === 0xffff;
  if (mapped) return v6.toIPv4Address().range() !== 'unicast';
  const first = v6.parts[0] ?? 0;
  return v6.range() !== 'unicast' || first < 0x2000 || first > 0x3fff;
}

function refuse(url: string, reason: string): CtxbusError {
  return new CtxbusError('endpoint_not_allowed', `endpoint ${url}: ${reason}`, {
    details: { field: 'endpoint' },
  });
}

/** The hostname without IPv6 brackets. */
function hostOf(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '');
}

/**
 * Checks an endpoint before a subscription is stored: http(s), no credentials, and (unless
 * `allowPrivate`) every address its host resolves to is public.
 */
export async function checkEndpoint(endpoint: string, allowPrivate: boolean): Promise<void> {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw refuse(endpoint, 'not a URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw refuse(endpoint, 'only http and https endpoints are allowed');
  }
  if (url.username || url.password) {
    throw refuse(endpoint, 'no credentials in the URL: verify the signature instead');
  }
  if (allowPrivate) return;
  const host = hostOf(url);
  if (isIP(host)) {
    if (isNonPublicAddress(host)) throw refuse(endpoint, privateReason(host));
    return;
  }
  // A name that does not resolve and one that resolves to a private address are refused in the
  // same words, naming no address: the answer must not map the hub's network (which names
  // exist there, and where they point) for whoever holds a token.
  const addresses = await lookupAsync(host, { all: true, verbatim: true }).catch(() => []);
  if (addresses.length === 0 || addresses.some((entry) => isNonPublicAddress(entry.address))) {
    throw refuse(endpoint, unreachableName(host));
  }
}

function unreachableName(host: string): string {
  return `the host ${host} does not resolve to public addresses only (it resolves to none, or to a private, loopback or reserved one): check the name, or start the hub with --allow-private-webhooks for an endpoint on a private network`;
}

function privateReason(address: string): string {
  return `${address} is not a global unicast address: private, loopback, reserved, or an IPv6 form that embeds an IPv4 address (start the hub with --allow-private-webhooks to allow it)`;
}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * A `lookup` for http.request that refuses non-public addresses at connection time. (A literal
 * IP host is not looked up: check it with `isNonPublicAddress` before connecting.)
 */
export function publicOnlyLookup(
  hostname: string,
  options: LookupOptions,
  callback: LookupCallback,
): void {
  lookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return callback(error, '');
    const list = addresses as LookupAddress[];
    const bad = list.find((entry) => isNonPublicAddress(entry.address));
    if (bad) {
      const refused: NodeJS.ErrnoException = new Error(unreachableName(hostname));
      refused.code = 'ENDPOINT_NOT_ALLOWED';
      return callback(refused, '');
    }
    if (options.all) return callback(null, list);
    const first = list[0];
    if (!first) return callback(new Error(`${hostname} did not resolve`), '');
    callback(null, first.address, first.family);
  });
}

export { hostOf };
