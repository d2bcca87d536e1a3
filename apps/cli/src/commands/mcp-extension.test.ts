import { describe, expect, it } from 'vitest';
import { mcpAllowedHosts } from './mcp-extension.js';

const LOOPBACK = ['localhost', '127.0.0.1', '[::1]'];

describe('mcpAllowedHosts', () => {
  it('takes loopback names, the address the hub listens on, and its public URL’s host', () => {
    expect(mcpAllowedHosts({ host: '127.0.0.1' }, LOOPBACK)).toEqual(LOOPBACK);
    expect(mcpAllowedHosts({ host: '::1' }, LOOPBACK)).toEqual(LOOPBACK);
    expect(mcpAllowedHosts({ host: '192.0.2.2' }, LOOPBACK)).toEqual([...LOOPBACK, '192.0.2.2']);
    expect(mcpAllowedHosts({ host: 'fd00::2' }, LOOPBACK)).toEqual([...LOOPBACK, '[fd00::2]']);
    // A wildcard is no name a client sends: the public URL says which one is.
    expect(
      mcpAllowedHosts({ host: '0.0.0.0', publicUrl: 'https://Ctxbus.Example.com:8443/' }, LOOPBACK),
    ).toEqual([...LOOPBACK, 'ctxbus.example.com']);
    expect(mcpAllowedHosts({ host: '::', publicUrl: 'http://[fd00::3]:7420' }, LOOPBACK)).toEqual([
      ...LOOPBACK,
      '[fd00::3]',
    ]);
  });
});
