// MCP tool-call latency through the real SDK client: Streamable HTTP to a real hub's /mcp, and
// stdio to a spawned `ctxbus mcp` (a thin client of the same hub).

import type { HubProcess } from '@ctxbus/test-kit';
import { CLI, runtimeToken } from '@ctxbus/test-kit';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Row } from './stats.ts';
import { ms, percentile } from './stats.ts';

async function timeCalls(client: Client, calls: number): Promise<Record<string, number[]>> {
  const results: Record<string, number[]> = {
    context_write: [],
    context_read: [],
    context_search: [],
  };
  const argumentsOf = (tool: string, index: number) =>
    tool === 'context_write'
      ? { type: 'discovery', title: `MCP bench item ${index}`, tags: ['bench'] }
      : tool === 'context_read'
        ? { limit: 10 }
        : { query: `bench item ${index}`, limit: 5 };
  for (const tool of Object.keys(results)) {
    await client.callTool({ name: tool, arguments: argumentsOf(tool, -1) });
    for (let index = 0; index < calls; index++) {
      const started = performance.now();
      const result = await client.callTool({ name: tool, arguments: argumentsOf(tool, index) });
      results[tool]?.push(performance.now() - started);
      if (result.isError) throw new Error(`${tool} failed: ${JSON.stringify(result.content)}`);
    }
  }
  return results;
}

function rows(transport: string, results: Record<string, number[]>): Row[] {
  return Object.entries(results).map(([tool, times]) => ({
    section: 'mcp',
    metric: `${tool} over ${transport} p50 / p99`,
    value: `${ms(percentile(times, 50))} / ${ms(percentile(times, 99))}`,
  }));
}

export async function benchMcp(hub: HubProcess, calls: number): Promise<Row[]> {
  const token = await runtimeToken(hub, 'bench', 'claude-code');
  const http = new Client({ name: 'ctxbus-bench', version: '0' });
  await http.connect(
    new StreamableHTTPClientTransport(new URL(`${hub.url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  const overHttp = await timeCalls(http, calls);
  await http.close();

  const stdio = new Client({ name: 'ctxbus-bench', version: '0' });
  await stdio.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'mcp'],
      env: { ...(process.env as Record<string, string>), CTXBUS_URL: hub.url, CTXBUS_TOKEN: token },
    }),
  );
  const overStdio = await timeCalls(stdio, calls);
  await stdio.close();
  return [...rows('HTTP', overHttp), ...rows('stdio', overStdio)];
}
