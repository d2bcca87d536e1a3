import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TestHub } from '@ctxbus/test-kit';
import { call, removeDir, startHubProcess, tempDir } from '@ctxbus/test-kit';
import { describe, expect, it } from 'vitest';
import { startInProcessServe, useInProcessHub } from './in-process-serve.ts';

// The in-process `ctxbus serve` the integration files use when the hub process is not their
// subject: set up as the command sets a hub up (the same options, defaults and extensions),
// with its log kept, and stopped cleanly.

const repositoryFile = join(import.meta.dirname, '../../../capabilities.yaml');

/** What a hub says of itself, less what differs between any two hubs (port, paths). */
async function profile(hub: TestHub) {
  const health = (await call(hub.url, 'GET', '/health')).body;
  const mcp = await fetch(`${hub.url}/mcp`, { method: 'POST' });
  const dashboard = await fetch(`${hub.url}/`);
  const tooLarge = await call(hub.url, 'POST', '/api/context', {
    token: hub.adminToken,
    rawBody: 'x'.repeat(70_000),
  });
  const cors = await fetch(`${hub.url}/health`, { headers: { origin: 'https://app.example' } });
  return {
    version: health.version,
    capabilities: {
      status: health.capabilities.status,
      runtimes: health.capabilities.runtimes,
      error: health.capabilities.error,
    },
    adminToken: typeof hub.adminToken,
    mcp: mcp.status,
    dashboard: [dashboard.status, dashboard.headers.get('content-type')],
    tooLarge: tooLarge.status,
    cors: cors.headers.get('access-control-allow-origin'),
  };
}

describe('ctxbus serve in the test process', () => {
  const dataDir = tempDir('ctxbus-in-process-');
  writeFileSync(join(dataDir, 'capabilities.yaml'), readFileSync(repositoryFile, 'utf8'));
  const args = ['--max-body-bytes', '65536'];
  const env = { CTXBUS_CORS_ORIGINS: 'https://app.example' };
  const hub = useInProcessHub({ dataDir, args, env, tokens: { code: ['acme', 'claude-code'] } });

  it('serves what a `ctxbus serve` process with the same options and environment serves', async () => {
    const processDir = tempDir('ctxbus-in-process-twin-');
    writeFileSync(join(processDir, 'capabilities.yaml'), readFileSync(repositoryFile, 'utf8'));
    const twin = await startHubProcess({ dataDir: processDir, args, env });
    try {
      const own = await profile(hub);
      expect(own).toMatchObject({
        capabilities: { status: 'loaded', runtimes: 4, error: null },
        adminToken: 'string',
        mcp: 401,
        dashboard: [200, expect.stringContaining('text/html')],
        tooLarge: 413,
        cors: 'https://app.example',
      });
      expect(own).toEqual(await profile(twin));
    } finally {
      expect(await twin.stop()).toBe(0);
      removeDir(processDir);
    }
    const written = await call(hub.url, 'POST', '/api/context', {
      token: hub.tokens.code,
      body: { type: 'status', title: 'through the fixture' },
    });
    expect(written.status).toBe(201);
  });

  it('keeps the data directory across a stop and a start, and logs as the process does', async () => {
    const again = tempDir('ctxbus-in-process-again-');
    const first = await startInProcessServe({ dataDir: again });
    const token = first.adminToken;
    expect(token).toMatch(/^cbx_/);
    expect(await first.stop()).toBe(0);
    expect(await first.stop(), 'a second stop').toBe(0);
    // The lock is released: another hub takes the directory, and finds the admin token.
    const second = await startInProcessServe({ dataDir: again, args: ['--log-level', 'info'] });
    try {
      expect(second.adminToken).toBeNull();
      const tokens = await call(second.url, 'GET', '/api/admin/tokens', { token });
      expect(tokens.status).toBe(200);
      const listening = second
        .stderr()
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line))
        .find((line) => line.msg === 'hub listening');
      expect(listening).toMatchObject({ service: 'ctxbus-hub', url: second.url });
    } finally {
      expect(await second.stop()).toBe(0);
      removeDir(again);
    }
  });

  it('refuses the options `ctxbus serve` refuses', async () => {
    await expect(startInProcessServe({ args: ['--durability', 'sometimes'] })).rejects.toThrow(
      '--durability must be normal or full (got "sometimes")',
    );
    await expect(startInProcessServe({ args: ['--no-such-option'] })).rejects.toThrow(
      "unknown option '--no-such-option'",
    );
  });
});
