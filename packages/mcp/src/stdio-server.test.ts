import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { waitFor } from '@ctxbus/test-kit';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  getDefaultEnvironment,
  StdioClientTransport,
} from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestHub } from './test-kit.js';
import { INITIALIZE_REQUEST, startTestHub, textOf, watchUpdates } from './test-kit.js';

const BIN = fileURLToPath(new URL('../dist/stdio-bin.js', import.meta.url));

let hub: TestHub;

beforeAll(async () => {
  hub = await startTestHub();
});

afterAll(async () => {
  await hub.close();
});

/**
 * Runs the executable, writes `input` to its stdin and closes it at once; resolves with what it
 * did once it exits.
 */
function runToEnd(env: Record<string, string>, input = '') {
  const exited = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [BIN], { env: { PATH: process.env.PATH ?? '', ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input);
  });
  return waitFor(exited, 'the stdio executable to exit after its stdin closed');
}

describe('the stdio executable', () => {
  it('serves tools, and pushes resource updates, to a real stdio client', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN],
      env: { ...getDefaultEnvironment(), CTXBUS_URL: hub.url, CTXBUS_TOKEN: hub.token },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'stdio-test', version: '0.0.0' });
    const errors: Error[] = [];
    client.onerror = (error) => errors.push(error);
    const updates = watchUpdates(client);
    await client.connect(transport);
    try {
      expect(client.getServerVersion()?.name).toBe('ctxbus');
      const { tools } = await client.listTools();
      expect(tools).toHaveLength(11);

      await client.subscribeResource({ uri: 'decisions://recent' });
      const written = await client.callTool({
        name: 'context_write',
        arguments: { type: 'decision', title: 'Ship the MCP server over stdio' },
      });
      expect(written.isError).toBeFalsy();
      await updates.nextUpdate('decisions://recent');

      const read = await client.callTool({ name: 'context_read', arguments: { type: 'decision' } });
      expect(textOf(read)).toContain('Ship the MCP server over stdio');

      // Tasks through the client-based backend: with no capabilities file nobody can, so the
      // router escalates; the task is still stored, and task_status finds it.
      await client.subscribeResource({ uri: 'task://active' });
      const created = await client.callTool({
        name: 'task_create',
        arguments: { title: 'Run the tests over stdio', requiredCapabilities: ['code_execution'] },
      });
      expect(textOf(created)).toMatch(
        /REJECTED: Run the tests over stdio.*\n.*Routing: no runtime can/s,
      );
      const id = (created.structuredContent as { task: { id: string } }).task.id;
      await updates.nextUpdate('task://active');
      const status = await client.callTool({ name: 'task_status', arguments: { taskId: id } });
      expect(textOf(status)).toContain(`REJECTED: Run the tests over stdio [${id}]`);
    } finally {
      await client.close();
    }
    // A non-protocol line on stdout would have surfaced as a parse error here.
    expect(errors).toEqual([]);
  });

  it('exits with 0 and prints nothing when stdin closes', async () => {
    const result = await runToEnd({ CTXBUS_URL: hub.url, CTXBUS_TOKEN: hub.token });
    expect(result).toEqual({ code: 0, stdout: '', stderr: '' });
  });

  it('answers the requests read before stdin closed, then exits with 0', async () => {
    const title = `piped write ${Date.now()}`;
    const lines = [
      INITIALIZE_REQUEST,
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      {
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'context_write', arguments: { type: 'decision', title } },
      },
      { jsonrpc: '2.0', id: 3, method: 'tools/list' },
    ];
    const input = lines.map((line) => `${JSON.stringify(line)}\n`).join('');
    const result = await runToEnd({ CTXBUS_URL: hub.url, CTXBUS_TOKEN: hub.token }, input);
    expect(result.code).toBe(0);
    const answers = result.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { id: number; result?: { isError?: boolean } });
    expect(answers.map((answer) => answer.id).sort()).toEqual([1, 2, 3]);
    const written = answers.find((answer) => answer.id === 2);
    expect(written?.result?.isError).not.toBe(true);
    expect(JSON.stringify(written)).toContain(title);
  });

  it('exits with 2 and says which setting is missing, on stderr only', async () => {
    const result = await runToEnd({ CTXBUS_TOKEN: hub.token });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe('ctxbus-mcp: no hub URL: set CTXBUS_URL\n');
  });
});
