import type { LookupAddress, LookupOptions } from 'node:dns';
import { lookup } from 'node:dns';
import { lookup as lookupAsync } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { CtxbusError } from '@ctxbus/core';

// Webhook endpoints must not turn the hub into a network probe: only http(s), and no private,
// loopback, link-local or otherwise non-public address unless the hub's operator allows them.
// Checked when a subscription is created (with a clear error), and again on every connection
// (the resolved address, so DNS rebinding cannot slip a private address in later).

const blocked = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this" network
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata services
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24], // documentation
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  blocked.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
  ['2001:db8::', 32], // documentation
  ['100::', 64], // discard
] as const) {
  blocked.addSubnet(network, prefix, 'ipv6');
}

/** IPv4 carried in an IPv6 address (mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::/96`). */
function embeddedIpv4(address: string): string | null {
  const lower = address.toLowerCase();
  const dotted = /^(?:::ffff:|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (dotted?.[1]) return dotted[1];
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (hex?.[1] && hex[2]) {
    const high = Number.parseInt(hex[1], 16);
    const low = Number.parseInt(hex[2], 16);
    return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
  }
  return null;
}

/** Whether an IP address is private, loopback, link-local or otherwise not public. */
export function isNonPublicAddress(address: string): boolean {
  const v4 = embeddedIpv4(address);
  if (v4) return blocked.check(v4, 'ipv4');
  const family = isIP(address);
  if (family === 4) return blocked.check(address, 'ipv4');
  if (family === 6) return blocked.check(address, 'ipv6');
  return true;
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
  let addresses: LookupAddress[];
  try {
    addresses = await lookupAsync(host, { all: true, verbatim: true });
  } catch {
    throw refuse(endpoint, `the host ${host} does not resolve`);
  }
  const bad = addresses.find((entry) => isNonPublicAddress(entry.address));
  if (bad) throw refuse(endpoint, `${host} resolves to ${privateReason(bad.address)}`);
}

function privateReason(address: string): string {
  return `${address} is a private, loopback or reserved address (start the hub with --allow-private-webhooks to allow it)`;
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
      const refused: NodeJS.ErrnoException = new Error(
        `${hostname} resolves to ${bad.address}, a non-public address`,
      );
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
