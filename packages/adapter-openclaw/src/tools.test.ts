import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { CtxbusClient } from '@ctxbus/client';
import { Blackboard, PersistentResources } from '@ctxbus/client';
import { describe, expect, it } from 'vitest';
import type { AgentTool, ToolResult } from './openclaw-sdk.js';
import { pluginConfigJsonSchema } from './plugin-config.js';
import { registerCtxbus } from './register-plugin.js';
import { SHARED_CONTEXT_TOOL_NAMES } from './shared-context.js';
import type { TestHub } from './test-host.js';
import { recordingHost, usePluginTestbed } from './test-host.js';
import { PLUGIN_TOOL_NAMES } from './tools.js';

let hub: TestHub;
let token: string;
/** Claude Code's side: a reader, and the worker that claims tasks over REST. */
let claude: CtxbusClient;
let stateDir: string;

usePluginTestbed('ctxbus-openclaw-tools-', (bed) => {
  ({ hub, token, claude, stateDir } = bed);
});

function toolsOf(agentId: string, config: Record<string, unknown> = {}) {
  const host = recordingHost({ url: hub.url, token, stateDir, ...config });
  registerCtxbus(host.api, { env: {} });
  const tools = new Map(
    host.tools({ agentId, sessionKey: `agent:${agentId}:main` }).map((tool) => [tool.name, tool]),
  );
  const get = (name: string): AgentTool => {
    const tool = tools.get(name);
    if (!tool) throw new Error(`no tool ${name}`);
    return tool;
  };
  return { host, tools, get };
}

describe('the registered tools', () => {
  it('are the names the manifest declares, with JSON Schema parameters', () => {
    const { host, tools } = toolsOf('main');
    expect([...tools.keys()]).toEqual([...PLUGIN_TOOL_NAMES]);
    expect(host.toolNames).toEqual([...PLUGIN_TOOL_NAMES]);
    for (const tool of tools.values()) {
      expect(tool.parameters).toMatchObject({ type: 'object' });
      expect(tool.description.length).toBeGreaterThan(40);
    }
  });

  it('match plugin/openclaw.plugin.json (tools and config schema)', () => {
    const manifest = JSON.parse(
      readFileSync(
        fileURLToPath(new URL('../plugin/openclaw.plugin.json', import.meta.url)),
        'utf8',
      ),
    );
    expect(manifest.id).toBe('ctxbus');
    expect(manifest.contracts.tools).toEqual([...PLUGIN_TOOL_NAMES, ...SHARED_CONTEXT_TOOL_NAMES]);
    expect(manifest.configSchema).toEqual(pluginConfigJsonSchema());
  });
});

describe('context tools', () => {
  it('write as the calling agent, with its tags and conversation', async () => {
    const { get } = toolsOf('research', { agents: { research: { tags: ['market'] } } });
    const result = await get('context_write').execute('call-w', {
      type: 'discovery',
      title: 'Competitor X cut prices by 20%',
    });
    expect(result.content[0]?.text).toContain('Competitor X cut prices');
    const found = await claude.list({ runtime: 'openclaw', type: 'discovery', limit: 5 });
    const item = found.items.find((entry) => entry.title === 'Competitor X cut prices by 20%');
    expect(item?.source).toMatchObject({ agentId: 'research', threadId: 'agent:research:main' });
    expect(item?.relevanceTags).toEqual(expect.arrayContaining(['openclaw', 'market']));
  });

  it('search and memory work through the hub', async () => {
    const { get } = toolsOf('main');
    await get('memory_write').execute('call-m', {
      key: 'team/conventions/deploys',
      title: 'Deploys happen on Tuesdays',
    });
    const memory = await get('memory_query').execute('call-q', { path: 'team/conventions' });
    expect(memory.content[0]?.text).toContain('Deploys happen on Tuesdays');
    const search = await get('context_search').execute('call-s', { query: 'deploys tuesdays' });
    expect(search.content[0]?.text).toContain('Deploys happen on Tuesdays');
  });

  it("take the seed's forms and refuse arguments no form takes, as over MCP", async () => {
    const { get } = toolsOf('main');
    await get('context_write').execute('call-a', {
      type: 'alert',
      title: 'Deploy pipeline stuck on Tuesdays',
      urgency: 'attention',
    });
    const filtered = await get('context_search').execute('call-f', {
      query: 'deploys tuesdays',
      filters: { type: 'alert' },
    });
    const results = (filtered.details as { results: { item: { type: string } }[] }).results;
    expect(results.length).toBeGreaterThan(0);
    expect(results.every((result) => result.item.type === 'alert')).toBe(true);
    const read = await get('context_read').execute('call-r', {
      scope: 'global',
      query: 'deploy pipeline',
    });
    expect(read.content[0]?.text).toContain('Deploy pipeline stuck on Tuesdays');
    await expect(
      get('context_read').execute('call-u', { scope: 'global', filter: 'alerts' }),
    ).rejects.toThrow(/context_read takes no "filter"; it takes /);
  });

  it('bad input throws one line naming the field', async () => {
    const { get } = toolsOf('main');
    await expect(get('context_write').execute('call-bad', { type: 'gossip' })).rejects.toThrow(
      /^context_write failed: invalid input: type: .*title/,
    );
  });
});

describe('layer tools (seed 004)', () => {
  it("update_swarm_shared_state takes the seed's (key, value) and the board's fields, as the agent", async () => {
    const { get } = toolsOf('research');
    const set = await get('update_swarm_shared_state').execute('call-b1', {
      key: 'market-size',
      value: { eur: 1200000 },
    });
    expect(set.content[0]?.text).toContain('market-size');
    const added = await get('update_swarm_shared_state').execute('call-b2', {
      add: {
        sharedNotes: [{ content: 'pricing page is stale', priority: 'medium' }],
        createdUrls: ['https://example.com/report'],
        activeRoutines: ['weekly-scan'],
      },
    });
    expect((added.details as { board: unknown }).board).toMatchObject({
      taskResults: { 'market-size': { eur: 1200000 } },
      createdUrls: ['https://example.com/report'],
      activeRoutines: ['weekly-scan'],
      sharedNotes: [
        { content: 'pricing page is stale', priority: 'medium', createdBy: 'openclaw/research' },
      ],
      updatedBy: 'openclaw/research',
    });
    // Claude Code reads the same board through the client.
    const board = new Blackboard({ client: claude, board: { scope: 'space', id: 'swarm' } });
    expect((await board.state()).createdUrls).toContain('https://example.com/report');
    await expect(
      get('update_swarm_shared_state').execute('call-b3', { key: 'x', value: 1, priority: 'high' }),
    ).rejects.toThrow(/update_swarm_shared_state takes no "priority"; it takes board, key/);
  });

  it('resource_manage keeps typed resources Claude Code reads, and deletes them', async () => {
    const { get } = toolsOf('main');
    await get('resource_manage').execute('call-r1', {
      action: 'add',
      name: 'routines/triage',
      value: { steps: ['label', 'assign'] },
      type: 'routine',
    });
    const resources = new PersistentResources({ client: claude });
    expect(await resources.read('routines/triage')).toMatchObject({
      type: 'routine',
      createdBy: 'openclaw/main',
    });
    const listed = await get('resource_manage').execute('call-r2', {
      action: 'list',
      type: 'routine',
    });
    expect(listed.content[0]?.text).toContain('routines/triage');
    await get('resource_manage').execute('call-r3', { action: 'delete', name: 'routines/triage' });
    expect(await resources.read('routines/triage')).toBeUndefined();
    await expect(
      get('resource_manage').execute('call-r4', {
        action: 'get',
        name: 'routines/triage',
        value: 1,
      }),
    ).rejects.toThrow(/value do not go with get: resource_manage get takes name/);
  });

  it("never show another runtime's private values, nor another team's", async () => {
    await new PersistentResources({ client: claude }).put('notes/claude-only', 'the cobalt idea', {
      visibility: 'private',
    });
    await new Blackboard({
      client: claude,
      board: { scope: 'space', id: 'claude-scratch' },
      visibility: 'private',
    }).set('draft', 'cobalt');
    const { get } = toolsOf('main');
    await expect(
      get('resource_manage').execute('call-p1', { action: 'get', name: 'notes/claude-only' }),
    ).rejects.toThrow(/not found/);
    const search = await get('resource_manage').execute('call-p2', {
      action: 'list',
      query: 'cobalt idea',
    });
    expect((search.details as { resources: unknown[] }).resources).toEqual([]);
    const board = await get('update_swarm_shared_state').execute('call-p3', {
      board: 'claude-scratch',
    });
    expect((board.details as { board: { taskResults: unknown } }).board.taskResults).toEqual({});

    await get('resource_manage').execute('call-p4', {
      action: 'put',
      name: 'plans/acme',
      value: 'acme only',
    });
    const outsider = toolsOf('main', { token: await hub.mint('openclaw', 'globex') });
    await expect(
      outsider.get('resource_manage').execute('call-p5', { action: 'get', name: 'plans/acme' }),
    ).rejects.toThrow(/not found/);
    const theirs = await outsider.get('update_swarm_shared_state').execute('call-p6', {});
    expect((theirs.details as { board: { updatedBy: unknown } }).board.updatedBy).toBeNull();
  });
});

/** Claims this task as Claude Code's worker and completes it with `result`. */
async function workOn(taskId: string, result: unknown) {
  for (;;) {
    const task = await claude.claimTask({
      workerId: 'test-worker',
      capabilities: ['code_execution'],
    });
    if (!task) throw new Error(`task ${taskId} was not claimable`);
    if (task.id !== taskId) {
      await claude.cancelTask(task.id, 'not this test’s');
      continue;
    }
    await claude.completeTask(task.id, { token: task.lease?.token ?? 0, result });
    return;
  }
}

describe('capability_request', () => {
  it('routes a command to Claude Code’s worker and returns its result', async () => {
    const { get } = toolsOf('main');
    const updates: ToolResult[] = [];
    let announced: (text: string) => void = () => undefined;
    const routed = new Promise<string>((resolve) => {
      announced = resolve;
    });
    const pending = get('capability_request').execute(
      'call-tests-1',
      { title: 'Run the tests of ctxbus', argv: ['pnpm', 'test'], cwd: '/srv/ctxbus' },
      undefined,
      (partial) => {
        updates.push(partial);
        announced(partial.content[0]?.text ?? '');
      },
    );
    // The first progress update names the task, once it exists.
    const taskId = /\(task (task_[0-9a-f-]+), SUBMITTED\)/.exec(await routed)?.[1] ?? '';
    const created = (await claude.task(taskId)).task;
    expect(created).toMatchObject({
      title: 'Run the tests of ctxbus',
      input: { argv: ['pnpm', 'test'], cwd: '/srv/ctxbus' },
      targetRuntime: 'claude-code',
    });
    await workOn(created?.id ?? '', { exitCode: 0, stdout: '42 tests passed' });
    const result = await pending;
    expect(result.details).toMatchObject({
      state: 'COMPLETED',
      result: { exitCode: 0, stdout: '42 tests passed' },
    });
    expect(result.content[0]?.text).toContain('claude-code');
    expect(updates[0]?.content[0]?.text).toContain('SUBMITTED');
  });

  it('a retried call finds the task it made instead of making another', async () => {
    const { get } = toolsOf('main');
    const args = {
      title: 'Lint ctxbus',
      argv: ['pnpm', 'lint'],
      cwd: '/srv/ctxbus',
      waitSeconds: 0,
    };
    const first = await get('capability_request').execute('call-lint', args);
    const again = await get('capability_request').execute('call-lint', args);
    expect((again.details as { taskId: string }).taskId).toBe(
      (first.details as { taskId: string }).taskId,
    );
    expect(first.content[0]?.text).toContain('Not finished yet');
  });

  it('says what the work needs when it cannot tell', async () => {
    const { get } = toolsOf('main');
    await expect(
      get('capability_request').execute('call-vague', { title: 'Do the thing' }),
    ).rejects.toThrow(/requiredCapabilities/);
  });
});
