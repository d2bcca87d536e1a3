import { CtxbusError } from '@ctxbus/core';
import { describe, expect, it } from 'vitest';
import { checkEndpoint, isNonPublicAddress, publicOnlyLookup } from './endpoint-guard.js';
import { sendWebhook } from './webhook-sender.js';

/** The four IPv6 forms from the hardening report, each embedding 127.0.0.1. */
const EMBEDDED_LOOPBACK = [
  '::127.0.0.1',
  '::ffff:0:127.0.0.1',
  '64:ff9b:1::7f00:1',
  '2002:7f00:1::',
];
const PUBLIC = ['8.8.8.8', '93.184.215.14', '2606:4700::1111', '2001:4860:4860::8888'];

async function refusal(endpoint: string, allowPrivate = false): Promise<string> {
  try {
    await checkEndpoint(endpoint, allowPrivate);
  } catch (error) {
    expect(CtxbusError.isInstance(error)).toBe(true);
    expect((error as CtxbusError).code).toBe('endpoint_not_allowed');
    return (error as CtxbusError).message;
  }
  throw new Error(`expected ${endpoint} to be refused`);
}

describe('isNonPublicAddress', () => {
  it.each([
    '127.0.0.1',
    '127.255.0.9',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '::1',
    '::',
    'fc00::1',
    'fd12:3456::1',
    'fe80::1',
    'ff02::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:a9fe:a9fe',
    '64:ff9b::10.0.0.1',
    // IPv6 forms that embed an IPv4 address are refused whatever they embed.
    '::127.0.0.1', // IPv4-compatible (deprecated)
    '::8.8.8.8',
    '::ffff:0:127.0.0.1', // SIIT
    '::ffff:0:8.8.8.8',
    '64:ff9b:1::7f00:1', // local-use NAT64
    '64:ff9b::808:808', // NAT64
    '2002:7f00:1::', // 6to4 of 127.0.0.1
    '2002:808:808::1', // 6to4 of 8.8.8.8
    '2001:0:4136:e378:8000:63bf:3fff:fdd2', // Teredo
    // Other non-global ranges.
    '2001:db8::1',
    '3fff::1', // documentation (RFC 9637)
    '2001:2::1', // benchmarking
    'fec0::1', // site-local
    '100::1', // discard
    '4000::1', // outside global unicast 2000::/3
    '192.0.2.1',
    '198.18.0.1',
    '192.88.99.1', // 6to4 relay anycast
    '240.0.0.1',
    'fe80::1%eth0',
    'not an address',
    '',
  ])('%s is not public', (address) => {
    expect(isNonPublicAddress(address)).toBe(true);
  });

  it.each([
    '93.184.215.14',
    '8.8.8.8',
    '172.32.0.1',
    '2606:4700::1111',
    '2a00:1450:4001:80b::200e',
    '::ffff:8.8.8.8',
  ])('%s is public', (address) => {
    expect(isNonPublicAddress(address)).toBe(false);
  });
});

describe('checkEndpoint', () => {
  it('refuses private, loopback and link-local targets, by address or by name', async () => {
    expect(await refusal('http://127.0.0.1:8080/hook')).toMatch(/--allow-private-webhooks/);
    expect(await refusal('http://[::1]/hook')).toMatch(/::1/);
    expect(await refusal('http://[::ffff:127.0.0.1]/hook')).toMatch(/private/);
    for (const embedded of [
      '::127.0.0.1',
      '::ffff:0:127.0.0.1',
      '64:ff9b:1::7f00:1',
      '2002:7f00:1::',
    ]) {
      expect(await refusal(`http://[${embedded}]/hook`)).toMatch(/not global|private/);
    }
    expect(await refusal('http://169.254.169.254/latest/meta-data')).toMatch(/169\.254/);
    expect(await refusal('https://10.0.0.5/hook')).toMatch(/10\.0\.0\.5/);
    // localhost resolves (from /etc/hosts) to loopback: refused as a name that does not
    // resolve is, naming no address.
    const byName = await refusal('http://localhost:9/hook');
    expect(byName).toMatch(/the host localhost does not resolve to public addresses only/);
    expect(byName).not.toMatch(/127\.0\.0\.1|::1/);
    expect(await refusal('https://no-such-host.invalid/x')).toMatch(
      /the host no-such-host\.invalid does not resolve to public addresses only \(it resolves to none, or to a private/,
    );
  });

  it('refuses other schemes, credentials and names that do not resolve', async () => {
    expect(await refusal('ftp://93.184.215.14/x')).toMatch(/only http and https/);
    expect(await refusal('https://user:pw@93.184.215.14/x')).toMatch(/no credentials/);
    expect(await refusal('https://no-such-host.invalid/x')).toMatch(/does not resolve/);
  });

  it('accepts public addresses, and private ones when the hub allows them', async () => {
    for (const address of PUBLIC) {
      const host = address.includes(':') ? `[${address}]` : address;
      await expect(checkEndpoint(`https://${host}/hook`, false)).resolves.toBeUndefined();
    }
    await expect(checkEndpoint('http://127.0.0.1:8080/hook', true)).resolves.toBeUndefined();
    // Still only http(s), even when private targets are allowed.
    expect(await refusal('file:///etc/passwd', true)).toMatch(/only http and https/);
  });
});

describe('sendWebhook', () => {
  const options = { timeoutMs: 1_000, allowPrivate: false, userAgent: 'ctxbus-test' };

  it('refuses a literal non-public address at delivery time, embedded IPv4 forms included', async () => {
    for (const host of ['127.0.0.1', ...EMBEDDED_LOOPBACK.map((address) => `[${address}]`)]) {
      const result = await sendWebhook(`http://${host}:9/hook`, {}, '{}', options);
      expect(result.ok, host).toBe(false);
      expect(result.ok ? '' : result.error).toMatch(/not a public address/);
    }
  });

  it('lets a public address through the guard at delivery time (the POST itself may fail)', async () => {
    for (const host of ['8.8.8.8', '[2606:4700::1111]']) {
      const result = await sendWebhook(`http://${host}:9/hook`, {}, '{}', {
        ...options,
        timeoutMs: 200,
      });
      expect(result.ok ? '' : result.error, host).not.toMatch(/not a public address/);
    }
  });
});

describe('publicOnlyLookup (the connection-time check of a host name)', () => {
  const lookup = (host: string) =>
    new Promise<{ code?: string; addresses?: unknown }>((resolve) => {
      publicOnlyLookup(host, { all: true }, (error, addresses) =>
        resolve(error ? { code: error.code ?? 'none' } : { addresses }),
      );
    });

  it.each(['localhost', '127.0.0.1', ...EMBEDDED_LOOPBACK])('refuses %s', async (host) => {
    expect(await lookup(host)).toEqual({ code: 'ENDPOINT_NOT_ALLOWED' });
  });

  it.each(PUBLIC)('passes %s', async (host) => {
    const result = await lookup(host);
    expect(result.code).toBeUndefined();
    expect(result.addresses).toEqual([expect.objectContaining({ address: host })]);
  });
});
