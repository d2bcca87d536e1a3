import { createClient } from '@ctxbus/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCtxbusMcpServer } from '../create-ctxbus-mcp-server.js';
import type { ConnectedClient, TestHub } from '../test-kit.js';
import { closedPortUrl, connectInMemory, startTestHub } from '../test-kit.js';

let hub: TestHub;
let mcp: ConnectedClient;

beforeAll(async () => {
  hub = await startTestHub();
  mcp = await connectInMemory(createCtxbusMcpServer({ backend: hub.client }));
  await hub.client.write([
    { type: 'status', title: 'T-42: migration written, tests pending', scopeKey: 'task:T-42' },
    { type: 'decision', title: 'Use SQLite for the embedded store', relevanceTags: ['storage'] },
    { type: 'alert', title: 'Staging is down', urgency: 'blocking' },
    {
      type: 'discovery',
      title: 'Search ranking improves with thread context',
      relevanceTags: ['search'],
    },
  ]);
});

afterAll(async () => {
  await mcp.close();
  await hub.close();
});

function promptText(result: Awaited<ReturnType<ConnectedClient['client']['getPrompt']>>): string {
  const content = result.messages[0]?.content;
  return content?.type === 'text' ? content.text : '';
}

describe('resume-work', () => {
  it('is listed with its optional arguments', async () => {
    const { prompts } = await mcp.client.listPrompts();
    const prompt = prompts.find((entry) => entry.name === 'resume-work');
    expect(prompt?.arguments).toEqual([
      expect.objectContaining({ name: 'focus', required: false }),
      expect.objectContaining({ name: 'taskId', required: false }),
    ]);
  });

  it('hands over the team context: tasks, blockers, decisions, and says to continue', async () => {
    const result = await mcp.client.getPrompt({ name: 'resume-work' });
    expect(result.messages).toHaveLength(1);
    expect(result.messages[0]?.role).toBe('user');
    const text = promptText(result);
    expect(text).toContain('T-42: migration written, tests pending');
    expect(text).toContain('Staging is down');
    expect(text).toContain('Use SQLite for the embedded store');
    expect(text).toMatch(/Continue from there, with the most important active task/);
  });

  it('adds a task’s history and items related to a focus', async () => {
    const result = await mcp.client.getPrompt({
      name: 'resume-work',
      arguments: { taskId: 'T-42', focus: 'search ranking' },
    });
    const text = promptText(result);
    expect(text).toContain('## Task T-42: latest first');
    expect(text).toContain('## Related to "search ranking"');
    expect(text).toContain('Search ranking improves with thread context');
    expect(text).toMatch(/Continue from there, with task T-42/);
  });

  it('rejects a task id that cannot be a scope key, and reports a hub that is down', async () => {
    await expect(
      mcp.client.getPrompt({ name: 'resume-work', arguments: { taskId: 'two words' } }),
    ).rejects.toThrow(/^MCP error -32602: taskId "two words" is not a task id/);
    const down = createClient({ url: await closedPortUrl(), token: hub.token, retries: 0 });
    const offline = await connectInMemory(createCtxbusMcpServer({ backend: down }));
    try {
      await expect(offline.client.getPrompt({ name: 'resume-work' })).rejects.toThrow(
        /resume-work failed: the ctxbus hub is unavailable/,
      );
    } finally {
      await offline.close();
    }
  });
});
