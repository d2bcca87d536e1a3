import type { TestHub } from '@ctxbus/test-kit';
import { removeDir, runCli, runtimeToken, tempDir, waitUntil } from '@ctxbus/test-kit';
import { describe, expect, it } from 'vitest';
import { useInProcessHub } from './in-process-serve.ts';

// The MCP session limits of `ctxbus serve` (--mcp-max-sessions-per-token, --mcp-max-sessions),
// over plain HTTP against /mcp of a real hub.

const PROTOCOL = '2025-06-18';

async function mcpPost(
  hub: TestHub,
  token: string,
  message: object,
  sessionId?: string,
): Promise<{ status: number; sessionId: string | null; body: string }> {
  const response = await fetch(`${hub.url}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(sessionId && { 'mcp-session-id': sessionId, 'mcp-protocol-version': PROTOCOL }),
    },
    body: JSON.stringify(message),
  });
  return {
    status: response.status,
    sessionId: response.headers.get('mcp-session-id'),
    body: await response.text(),
  };
}

/** An initialize; the session id on success. */
async function open(hub: TestHub, token: string) {
  return mcpPost(hub, token, {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: {
      protocolVersion: PROTOCOL,
      capabilities: {},
      clientInfo: { name: 'limits-test', version: '0' },
    },
  });
}

async function ping(hub: TestHub, token: string, sessionId: string): Promise<number> {
  return (await mcpPost(hub, token, { jsonrpc: '2.0', id: 2, method: 'ping' }, sessionId)).status;
}

describe('MCP session limits of ctxbus serve', () => {
  const hub = useInProcessHub({
    args: ['--mcp-max-sessions-per-token', '2', '--mcp-max-sessions', '3'],
  });

  it("closes a token's own oldest idle session at its limit; the endpoint's cap bounds the rest", async () => {
    const flooder = await runtimeToken(hub, 'acme', 'flooder');
    const neighbour = await runtimeToken(hub, 'acme', 'web');
    const third = await runtimeToken(hub, 'globex', 'web');

    const opened: string[] = [];
    for (let index = 0; index < 5; index++) {
      const response = await open(hub, flooder);
      expect(response.status, `initialize ${index}`).toBe(200);
      opened.push(response.sessionId ?? '');
    }
    // Two per token: the three oldest were closed, the two newest live.
    for (const sessionId of opened.slice(0, 3))
      expect(await ping(hub, flooder, sessionId)).toBe(404);
    for (const sessionId of opened.slice(3)) expect(await ping(hub, flooder, sessionId)).toBe(200);

    // Another token is unaffected, up to the endpoint's cap of 3 sessions.
    const theirs = await open(hub, neighbour);
    expect(theirs.status).toBe(200);
    const full = await open(hub, third);
    expect(full.status).toBe(503);
    expect(JSON.parse(full.body)).toMatchObject({ error: { data: { code: 'unavailable' } } });

    // At the cap, a token at its own limit still replaces its own session.
    const replaced = await open(hub, flooder);
    expect(replaced.status).toBe(200);
    expect(await ping(hub, flooder, opened[3] ?? '')).toBe(404);
    expect(await ping(hub, neighbour, theirs.sessionId ?? '')).toBe(200);
  });

  it("frees a revoked token's places: its sessions close, and the endpoint takes another", async () => {
    // After the test above the cap (3) is full (flooder 2, web 1); their tokens revoked, within the hub's
    // verdict interval they close, and a new token's initialize is served instead of a 503.
    const { call } = await import('@ctxbus/test-kit');
    const listed = await call(hub.url, 'GET', '/api/admin/tokens', { token: hub.adminToken });
    for (const info of listed.body.tokens as { id: string; runtime: string | null }[]) {
      if (info.runtime === 'flooder' || info.runtime === 'web') {
        await call(hub.url, 'DELETE', `/api/admin/tokens/${info.id}`, { token: hub.adminToken });
      }
    }
    const fresh = await runtimeToken(hub, 'globex', 'claude-code');
    await waitUntil(async () => (await open(hub, fresh)).status === 200, 'a place to free up');
  });
});

describe('MCP session limit options', () => {
  it('refuses limits that are not positive integers', async () => {
    for (const [option, value] of [
      ['--mcp-max-sessions-per-token', '0'],
      ['--mcp-max-sessions', '1.5'],
    ] as const) {
      const dataDir = tempDir();
      const result = await runCli(['serve', '--port', '0', '--data', dataDir, option, value]);
      removeDir(dataDir);
      expect(result.code, option).toBe(2);
      expect(result.stderr).toContain(`${option} must be an integer from 1 to`);
    }
  });
});
