import { createClient } from '@ctxbus/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ContextBackend } from '../context-backend.js';
import { createCtxbusMcpServer } from '../create-ctxbus-mcp-server.js';
import type { ConnectedClient, TestHub } from '../test-kit.js';
import { closedPortUrl, connectInMemory, startTestHub, textOf } from '../test-kit.js';

let hub: TestHub;
let mcp: ConnectedClient;

beforeAll(async () => {
  hub = await startTestHub();
  mcp = await connectInMemory(createCtxbusMcpServer({ backend: hub.client }));
});

afterAll(async () => {
  await mcp.close();
  await hub.close();
});

async function call(name: string, args: Record<string, unknown>) {
  return mcp.client.callTool({ name, arguments: args });
}

describe('tools/list', () => {
  it('lists the eleven tools, each with input and output schemas and a teaching description', async () => {
    const { tools } = await mcp.client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual([
      'context_read',
      'context_search',
      'context_shared',
      'context_write',
      'memory_query',
      'memory_write',
      'resource_manage',
      'task_create',
      'task_status',
      'task_update',
      'update_swarm_shared_state',
    ]);
    for (const tool of tools) {
      expect(tool.inputSchema.type).toBe('object');
      expect(tool.outputSchema?.type).toBe('object');
      expect(tool.description?.length).toBeGreaterThan(200);
    }
    const write = tools.find((tool) => tool.name === 'context_write');
    expect(write?.inputSchema.required).toEqual(['type', 'title']);
    expect(write?.description).toMatch(/decision: "Use SQLite/);
  });

  it('a CtxbusClient is a ContextBackend as is', () => {
    const backend: ContextBackend = hub.client;
    expect(backend).toBeDefined();
  });
});

describe('context tools against a real hub', () => {
  it('context_write stores an item that context_read, context_search and context_shared see', async () => {
    const written = await call('context_write', {
      type: 'decision',
      title: 'Use SQLite (WAL, FTS5) for the embedded store',
      content: 'The embedded database: no server to run; measured lighter than PGlite.',
      tags: ['storage', 'sqlite'],
      urgency: 'attention',
    });
    expect(written.isError).toBeFalsy();
    const item = (written.structuredContent as { item: { id: string; tags: string[] } }).item;
    expect(item.tags).toEqual(['storage', 'sqlite']);
    expect(textOf(written)).toMatch(/^Written as seq \d+: \[decision\] Use SQLite/);

    const read = await call('context_read', { type: 'decision', tags: ['storage'] });
    const readItems = (read.structuredContent as { items: { id: string; runtime: string }[] })
      .items;
    expect(readItems.map((entry) => entry.id)).toEqual([item.id]);
    expect(readItems[0]?.runtime).toBe('claude-code');
    expect(textOf(read)).toContain('Use SQLite (WAL, FTS5)');

    const one = await call('context_read', { id: item.id });
    expect((one.structuredContent as { items: { content: string }[] }).items[0]?.content).toBe(
      'The embedded database: no server to run; measured lighter than PGlite.',
    );

    const search = await call('context_search', { query: 'which database did we choose?' });
    const results = (search.structuredContent as { results: { item: { id: string } }[] }).results;
    expect(results[0]?.item.id).toBe(item.id);
    // A pasted log as the question: its first 2,000 characters are searched, and it says so.
    const pasted = await call('context_search', {
      query: `which database did we choose? ${'stack frame at line 42 '.repeat(400)}`,
    });
    expect(pasted.isError, textOf(pasted)).toBeFalsy();
    expect(
      (pasted.structuredContent as { results: { item: { id: string } }[] }).results[0]?.item.id,
    ).toBe(item.id);
    expect(textOf(pasted)).toMatch(
      /^1 result\(s\), best first \(the query was cut to its first 2,000 of 9,229 characters\):/,
    );

    const shared = await call('context_shared', {});
    const bundle = shared.structuredContent as { text: string; format: string; runtime: string };
    expect(bundle.runtime).toBe('claude-code');
    expect(bundle.format).toBe('markdown');
    expect(bundle.text).toContain('Use SQLite (WAL, FTS5)');
    expect(textOf(shared)).toBe(bundle.text);
  });

  it('context_write maps scope keys, ttl and source fields', async () => {
    const written = await call('context_write', {
      type: 'status',
      title: 'T-7: parser done, wiring next',
      scopeKey: 'task:T-7',
      ttlSeconds: 3600,
      taskId: 'T-7',
    });
    const item = (
      written.structuredContent as {
        item: { scope: string; expiresAt: string | null; taskId: string | null };
      }
    ).item;
    expect(item.scope).toBe('task');
    expect(item.taskId).toBe('T-7');
    expect(item.expiresAt).not.toBeNull();
    const read = await call('context_read', { scopeKey: 'task:T-7' });
    expect((read.structuredContent as { items: unknown[] }).items).toHaveLength(1);
  });

  it("context_write accepts seed 000's flat fields, and refuses another runtime", async () => {
    const written = await call('context_write', {
      type: 'decision',
      title: 'Seed-style write through MCP',
      relevanceTags: ['seed'],
      sourceRuntime: 'claude-code',
      sourceAgentId: 'planner',
      sourceTaskId: 'T-9',
      sourceThreadId: 'th-1',
      expiresAfterSeconds: 600,
    });
    expect(written.isError).toBeFalsy();
    const { id } = (written.structuredContent as { item: { id: string } }).item;
    const stored = await hub.client.get(id);
    expect(stored.source).toEqual({
      runtime: 'claude-code',
      agentId: 'planner',
      taskId: 'T-9',
      threadId: 'th-1',
    });
    expect(stored.relevanceTags).toEqual(['seed']);
    expect(stored.expiresAt).not.toBeNull();
    const refused = await call('context_write', {
      type: 'status',
      title: 'pretending to be the web UI',
      sourceRuntime: 'web',
    });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toMatch(/sourceRuntime "web" is not this token's runtime/);
  });

  it('cuts listed content between characters, never inside one (no lone surrogate)', async () => {
    // An emoji (two UTF-16 units) across the listing's 1,000-unit cut.
    const content = `${'a'.repeat(999)}😀${'b'.repeat(50)}`;
    const written = await call('context_write', { type: 'discovery', title: 'emoji cut', content });
    expect(written.isError, textOf(written)).toBeFalsy();
    const listed = await call('context_read', { scopeKey: undefined, limit: 5 });
    const items = (listed.structuredContent as { items: { title: string; content: string }[] })
      .items;
    const cut = items.find((item) => item.title === 'emoji cut');
    expect(cut?.content).toBe(`${'a'.repeat(999)}…`);
    expect(textOf(listed).isWellFormed()).toBe(true);
    expect(JSON.stringify(listed.structuredContent).isWellFormed()).toBe(true);
  });

  it('since returns only what was written after a seq', async () => {
    const first = await call('context_write', { type: 'discovery', title: 'Before the mark' });
    const seq = (first.structuredContent as { item: { seq: number } }).item.seq;
    await call('context_write', { type: 'discovery', title: 'After the mark' });
    // A seq as a number, or as text (as models often send it).
    for (const since of [seq, String(seq)]) {
      const read = await call('context_read', { since });
      expect(read.isError, textOf(read)).toBeFalsy();
      const titles = (read.structuredContent as { items: { title: string }[] }).items.map(
        (entry) => entry.title,
      );
      expect(titles).toEqual(['After the mark']);
    }
  });

  it('memory_write twice on one key supersedes; memory_query by prefix sees the live items', async () => {
    const first = await call('memory_write', {
      key: 'project/ctxbus/stack',
      title: 'Stack: TypeScript, pnpm, turbo',
    });
    expect(first.isError).toBeFalsy();
    const firstId = (first.structuredContent as { item: { id: string } }).item.id;
    expect((first.structuredContent as { superseded: string | null }).superseded).toBeNull();

    const second = await call('memory_write', {
      key: 'project/ctxbus/stack',
      title: 'Stack: TypeScript, pnpm, turbo, tsup, vitest, Biome',
      tags: ['stack'],
    });
    expect((second.structuredContent as { superseded: string | null }).superseded).toBe(firstId);
    expect(textOf(second)).toMatch(/^Updated project\/ctxbus\/stack \(supersedes /);

    await call('memory_write', {
      key: 'project/ctxbus/ci',
      type: 'decision',
      title: 'CI runs ./dev test',
    });
    await call('memory_write', { key: 'project/other', title: 'Not under the prefix' });

    const query = await call('memory_query', { path: 'project/ctxbus/' });
    const items = (query.structuredContent as { items: { key: string; title: string }[] }).items;
    expect(items.map((entry) => [entry.key, entry.title])).toEqual([
      ['project/ctxbus/ci', 'CI runs ./dev test'],
      ['project/ctxbus/stack', 'Stack: TypeScript, pnpm, turbo, tsup, vitest, Biome'],
    ]);
    expect(textOf(query)).toMatch(/^2 keys under project\/ctxbus:/);

    const decisions = await call('memory_query', { path: 'project', type: 'decision' });
    expect(
      (decisions.structuredContent as { items: { key: string }[] }).items.map((entry) => entry.key),
    ).toEqual(['project/ctxbus/ci']);
    expect(textOf(decisions)).toMatch(/^1 key of type decision under project:/);
    const alerts = await call('memory_query', {
      path: 'project/ctxbus',
      type: ['alert', 'request'],
    });
    expect(textOf(alerts)).toBe('Nothing of type alert or request is stored under project/ctxbus.');
  });

  it('memory_query says when more keys lie under the path than its limit, and pages to them', async () => {
    for (let index = 0; index < 7; index++) {
      const written = await call('memory_write', {
        key: `mem/k${String(index).padStart(3, '0')}`,
        title: `key ${index}`,
      });
      expect(written.isError).toBeFalsy();
    }
    const keys = (result: Awaited<ReturnType<typeof call>>) =>
      (result.structuredContent as { items: { key: string }[] }).items.map((entry) => entry.key);
    const first = await call('memory_query', { path: 'mem', limit: 5 });
    expect(keys(first)).toEqual(['mem/k002', 'mem/k003', 'mem/k004', 'mem/k005', 'mem/k006']);
    const { nextBefore } = first.structuredContent as { nextBefore: number | null };
    expect(nextBefore).not.toBeNull();
    expect(textOf(first)).toContain(
      `More keys lie under mem (written earlier): call again with before=${nextBefore}.`,
    );
    const rest = await call('memory_query', { path: 'mem', limit: 5, before: nextBefore });
    expect(keys(rest)).toEqual(['mem/k000', 'mem/k001']);
    expect((rest.structuredContent as { nextBefore: number | null }).nextBefore).toBeNull();
    expect(textOf(rest)).not.toContain('More keys');
  });
});

describe('tool errors in the log', () => {
  it("logs a caller's mistake in one line at info, and what failed on our side at warn", async () => {
    const lines: [string, string][] = [];
    const record = (level: string) => (_object: object, message?: string) =>
      lines.push([level, message ?? '']);
    const logger = {
      debug: record('debug'),
      info: record('info'),
      warn: record('warn'),
      error: record('error'),
    };
    const down = createClient({ url: await closedPortUrl(), token: hub.token, retries: 0 });
    const missing = 'context://items/01a22f5e-146b-71b4-b7ac-f8f667685841';
    for (const backend of [hub.client, down]) {
      const logged = await connectInMemory(createCtxbusMcpServer({ backend, logger }));
      await logged.client.callTool({
        name: 'context_read',
        arguments: { id: '01a22f5e-146b-71b4-b7ac-f8f667685841' },
      });
      // A resource read the same: any client could otherwise fill the log with stacks.
      await logged.client.readResource({ uri: missing }).catch(() => undefined);
      await logged.close();
    }
    expect(lines.filter(([, message]) => message.startsWith('context_read'))).toEqual([
      ['info', expect.stringMatching(/^context_read refused: .*01a22f5e/)],
      ['warn', expect.stringMatching(/^context_read failed: .*cannot reach/)],
    ]);
    expect(lines.filter(([, message]) => message.startsWith(`reading ${missing}`))).toEqual([
      ['info', expect.stringMatching(/failed: .*01a22f5e/)],
      ['warn', expect.stringMatching(/failed: .*cannot reach/)],
    ]);
  });
});

describe('tool errors', () => {
  it('invalid input is a tool error naming the field', async () => {
    const result = await call('context_write', { type: 'opinion', title: 'x' });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe(
      'context_write failed: invalid input: type: Invalid option: expected one of "discovery"|"decision"|"status"|"request"|"alert"',
    );
    const two = await call('context_write', { type: 'discovery', title: '', tags: ['two words'] });
    expect(two.isError).toBe(true);
    expect(textOf(two)).toMatch(
      /^context_write failed: invalid input: title: .*; tags\[0\]: a tag has no spaces or commas$/,
    );
    const since = await call('context_read', { since: 'yesterday' });
    expect(textOf(since)).toMatch(/^context_read failed: invalid input: since: /);
  });

  it('a field taking one value or a list names the values it takes, not just "Invalid input"', async () => {
    const one = await call('context_read', { scope: 'planet' });
    expect(textOf(one)).toBe(
      'context_read failed: invalid input: scope: Invalid option: expected one of "task"|"thread"|"space"|"global"',
    );
    const listed = await call('context_read', { scope: ['global', 'planet'] });
    expect(textOf(listed)).toMatch(
      /^context_read failed: invalid input: scope\[1\]: Invalid option: expected one of "task"/,
    );
    const typed = await call('memory_query', { path: 'project', type: 'bogus' });
    expect(textOf(typed)).toMatch(
      /^memory_query failed: invalid input: type: Invalid option: expected one of "discovery"/,
    );
    const neither = await call('context_read', { scope: 7 });
    expect(textOf(neither)).toMatch(/^context_read failed: invalid input: scope: Invalid option/);
  });

  it('a rule only the hub checks comes back as a one-line tool error', async () => {
    const result = await call('context_write', {
      type: 'status',
      title: 'Mismatched scope',
      scope: 'thread',
      scopeKey: 'task:T-1',
    });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/^context_write failed: invalid input: .*needs scope "task"/);
    expect(textOf(result)).not.toContain('\n');
  });

  it('an unknown tool is a protocol error listing the tools, its code said once', async () => {
    const error: Error = await call('task_delete', {}).then(
      () => new Error('answered'),
      (e: Error) => e,
    );
    // The SDK client puts "MCP error <code>: " in front; the server's message does not again.
    expect(error.message).toMatch(/^MCP error -32602: unknown tool task_delete; this server has/);
    expect(error.message.match(/MCP error/g)).toHaveLength(1);
  });

  it('an unknown id is a not-found tool error', async () => {
    const result = await call('context_read', { id: '019a0000-0000-7000-8000-00000000abcd' });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/^context_read failed: not found: /);
  });

  it('superseding an unknown item is an invalid-reference tool error', async () => {
    const result = await call('context_write', {
      type: 'decision',
      title: 'Replaces nothing',
      supersedes: '019a0000-0000-7000-8000-00000000abcd',
    });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/invalid reference: supersedes names item/);
  });

  it('a hub that is down gives tool errors saying so, for every tool', async () => {
    const down = createClient({ url: await closedPortUrl(), token: hub.token, retries: 0 });
    const offline = await connectInMemory(createCtxbusMcpServer({ backend: down }));
    try {
      const calls: [string, Record<string, unknown>][] = [
        ['context_read', {}],
        ['context_write', { type: 'alert', title: 'Hub down' }],
        ['context_search', { query: 'anything' }],
        ['context_shared', {}],
        ['memory_query', { path: 'project' }],
        ['memory_write', { key: 'a/b', title: 'x' }],
      ];
      for (const [name, args] of calls) {
        const result = await offline.client.callTool({ name, arguments: args });
        expect(result.isError, name).toBe(true);
        expect(textOf(result)).toMatch(
          new RegExp(
            `^${name} failed: the ctxbus hub is unavailable; try again later: cannot reach the ctxbus hub at http://127\\.0\\.0\\.1:\\d+`,
          ),
        );
      }
    } finally {
      await offline.close();
    }
  });

  it('a revoked or unknown token is an unauthorized tool error', async () => {
    const wrong = createClient({ url: hub.url, token: 'cbx_not-a-token' });
    const rejected = await connectInMemory(createCtxbusMcpServer({ backend: wrong }));
    try {
      const result = await rejected.client.callTool({ name: 'context_read', arguments: {} });
      expect(result.isError).toBe(true);
      expect(textOf(result)).toMatch(/rejected the token/);
    } finally {
      await rejected.close();
    }
  });
});
