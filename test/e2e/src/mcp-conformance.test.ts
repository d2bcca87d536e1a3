import { spawn } from 'node:child_process';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { HubProcess } from '@ctxbus/test-kit';
import { call, removeDir, runtimeToken, startHubProcess, tempDir } from '@ctxbus/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const here = dirname(fileURLToPath(import.meta.url));
const BIN = resolve(here, '../node_modules/.bin');
const EXPECTED_FAILURES = resolve(here, '../mcp-expected-failures.yaml');

let hub: HubProcess;
let token: string;
let proxyUrl: string;
let closeProxy: () => void;
const home = tempDir('ctxbus-inspector-home-');

/** Runs a tool from node_modules/.bin; `out` is both streams (for messages), `stdout` its own. */
function run(
  command: string,
  args: string[],
): Promise<{ code: number | null; out: string; stdout: string }> {
  return new Promise((resolvePromise) => {
    const child = spawn(resolve(BIN, command), args, {
      env: {
        ...process.env,
        HOME: home,
        MCP_CATALOG_PATH: resolve(home, 'catalog.json'),
        NO_COLOR: '1',
      },
    });
    let out = '';
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    // 'close', not 'exit': every byte of both streams has been read by then.
    child.once('close', (code) => resolvePromise({ code, out, stdout }));
  });
}

beforeAll(async () => {
  hub = await startHubProcess();
  token = await runtimeToken(hub, 'acme', 'claude-code');
  // The conformance CLI cannot send headers: this forwarder adds the bearer token and passes
  // every other header (Host included, for the DNS-rebinding scenario) to the real /mcp.
  const target = new URL(hub.url);
  const proxy = createServer((req, res) => {
    const upstream = request(
      {
        host: target.hostname,
        port: target.port,
        path: req.url,
        method: req.method,
        headers: { ...req.headers, authorization: `Bearer ${token}` },
      },
      (response) => {
        res.writeHead(response.statusCode ?? 502, response.headers);
        response.pipe(res);
      },
    );
    upstream.on('error', () => {
      res.writeHead(502);
      res.end();
    });
    req.pipe(upstream);
  });
  await new Promise<void>((ready) => proxy.listen(0, '127.0.0.1', ready));
  proxyUrl = `http://localhost:${(proxy.address() as AddressInfo).port}/mcp`;
  closeProxy = () => {
    proxy.closeAllConnections();
    proxy.close();
  };
});

afterAll(async () => {
  closeProxy?.();
  await hub?.stop();
  if (hub) removeDir(hub.dataDir);
  removeDir(home);
});

describe('the /mcp endpoint of a real ctxbus serve', () => {
  it('passes the official MCP conformance suite, failing only fixture-specific scenarios', async () => {
    const result = await run('conformance', [
      'server',
      '--url',
      proxyUrl,
      '--expected-failures',
      EXPECTED_FAILURES,
    ]);
    expect(result.out).toContain('Baseline check passed: all failures are expected.');
    for (const scenario of [
      'server-initialize',
      'ping',
      'tools-list',
      'resources-list',
      'prompts-list',
      'logging-set-level',
      'dns-rebinding-protection',
    ]) {
      expect(result.out).toMatch(new RegExp(`✓ ${scenario}: \\d+ passed, 0 failed`));
    }
    expect(result.code, result.out.slice(-2_000)).toBe(0);
  });

  it('answers MCP Inspector CLI calls: tools/list and a tools/call that writes to the hub', async () => {
    const header = `Authorization: Bearer ${token}`;
    const listed = await run('inspector', [
      '--cli',
      `${hub.url}/mcp`,
      '--transport',
      'http',
      '--header',
      header,
      '--method',
      'tools/list',
    ]);
    expect(listed.code, listed.out).toBe(0);
    const tools = (
      JSON.parse(listed.stdout.slice(listed.stdout.indexOf('{'))) as { tools: { name: string }[] }
    ).tools.map((tool) => tool.name);
    expect(tools).toEqual(
      expect.arrayContaining([
        'context_read',
        'context_write',
        'context_search',
        'context_shared',
        'memory_query',
        'memory_write',
      ]),
    );

    const called = await run('inspector', [
      '--cli',
      `${hub.url}/mcp`,
      '--transport',
      'http',
      '--header',
      header,
      '--method',
      'tools/call',
      '--tool-name',
      'context_write',
      '--tool-arg',
      'type=discovery',
      'title=Written through MCP Inspector (marker 5d1e)',
    ]);
    expect(called.code, called.out).toBe(0);
    expect(called.out).not.toContain('"isError": true');
    const found = await call(hub.url, 'POST', '/api/context/search', {
      token,
      body: { query: 'MCP Inspector marker 5d1e' },
    });
    expect(found.body.results[0]?.item.title).toBe('Written through MCP Inspector (marker 5d1e)');
  });

  it('refuses /mcp without a token, and admin tokens', async () => {
    const body = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 't', version: '1' },
      },
    };
    const headers = { accept: 'application/json, text/event-stream' };
    const anonymous = await call(hub.url, 'POST', '/mcp', { body, headers });
    expect(anonymous.status).toBe(401);
    const admin = await call(hub.url, 'POST', '/mcp', { body, headers, token: hub.adminToken });
    expect(admin.status).toBe(403);
  });
});
