import { CtxbusError } from '@ctxbus/core';
import { describe, expect, it } from 'vitest';
import { checkEndpoint, isNonPublicAddress } from './endpoint-guard.js';

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
    'not an address',
  ])('%s is not public', (address) => {
    expect(isNonPublicAddress(address)).toBe(true);
  });

  it.each(['93.184.215.14', '8.8.8.8', '172.32.0.1', '2606:4700::1111', '::ffff:8.8.8.8'])(
    '%s is public',
    (address) => {
      expect(isNonPublicAddress(address)).toBe(false);
    },
  );
});

describe('checkEndpoint', () => {
  it('refuses private, loopback and link-local targets, by address or by name', async () => {
    expect(await refusal('http://127.0.0.1:8080/hook')).toMatch(/--allow-private-webhooks/);
    expect(await refusal('http://[::1]/hook')).toMatch(/::1/);
    expect(await refusal('http://[::ffff:127.0.0.1]/hook')).toMatch(/private/);
    expect(await refusal('http://169.254.169.254/latest/meta-data')).toMatch(/169\.254/);
    expect(await refusal('https://10.0.0.5/hook')).toMatch(/10\.0\.0\.5/);
    // localhost resolves (from /etc/hosts) to loopback.
    expect(await refusal('http://localhost:9/hook')).toMatch(/localhost resolves to/);
  });

  it('refuses other schemes, credentials and names that do not resolve', async () => {
    expect(await refusal('ftp://93.184.215.14/x')).toMatch(/only http and https/);
    expect(await refusal('https://user:pw@93.184.215.14/x')).toMatch(/no credentials/);
    expect(await refusal('https://no-such-host.invalid/x')).toMatch(/does not resolve/);
  });

  it('accepts public addresses, and private ones when the hub allows them', async () => {
    await expect(checkEndpoint('https://93.184.215.14/hook', false)).resolves.toBeUndefined();
    await expect(checkEndpoint('http://127.0.0.1:8080/hook', true)).resolves.toBeUndefined();
    // Still only http(s), even when private targets are allowed.
    expect(await refusal('file:///etc/passwd', true)).toMatch(/only http and https/);
  });
});
