import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { call, TEST_WAIT_MS, tempDir } from '@ctxbus/test-kit';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { useInProcessHub } from './in-process-serve.ts';

// Tasks through the MCP endpoint of a real `ctxbus serve` (/mcp), and the shared bundle's
// active tasks from the task store, over HTTP.

const dataDir = tempDir('ctxbus-mcp-tasks-');
writeFileSync(
  join(dataDir, 'capabilities.yaml'),
  readFileSync(join(import.meta.dirname, '../../../capabilities.yaml'), 'utf8'),
);

const hub = useInProcessHub({
  dataDir,
  tokens: {
    code: ['acme', 'claude-code'],
    claw: ['acme', 'openclaw'],
    intern: ['acme', 'intern'],
  },
});

async function connect(token: string) {
  const client = new Client({ name: 'mcp-tasks-test', version: '0.0.0' });
  const updates: string[] = [];
  let wake = () => {};
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => {
    updates.push(notification.params.uri);
    wake();
  });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${hub.url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  /** Waits for a resource-updated notification for `uri` after the `seen` first ones. */
  const updateAfter = (seen: number, uri: string) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no update for ${uri}`)), TEST_WAIT_MS);
      const check = () => {
        if (updates.slice(seen).includes(uri)) {
          clearTimeout(timer);
          resolve();
        }
      };
      wake = check;
      check();
    });
  return { client, updates, updateAfter };
}

async function tool(client: Client, name: string, args: Record<string, unknown>) {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const first = result.content[0];
  const text = first?.type === 'text' ? first.text : '';
  if (result.isError) throw new Error(text);
  return {
    text,
    structured: result.structuredContent as {
      task: { id: string; state: string; lease: { token: number } | null };
      routing?: { kind: string };
    },
  };
}

const codeTask = (title: string) => ({
  title,
  requiredCapabilities: ['code_execution'],
  input: { argv: ['pnpm', 'test'], cwd: '/tmp' },
});

interface SharedEntry {
  id: string;
  text: string;
}

async function shared(token = hub.tokens.code) {
  const response = await call(hub.url, 'GET', '/api/context/shared', { token });
  expect(response.status).toBe(200);
  return response.body as {
    activeTasks: SharedEntry[];
    blockedItems: SharedEntry[];
    formatted: string;
  };
}

const ids = (entries: SharedEntry[]) => entries.map((entry) => entry.id);

describe('tasks over the MCP endpoint of ctxbus serve', () => {
  it('task_create, task_status and task_update work over /mcp, and task://active notifies', async () => {
    const claw = await connect(hub.tokens.claw);
    try {
      const { tools } = await claw.client.listTools();
      expect(tools.map((entry) => entry.name)).toEqual(
        expect.arrayContaining(['task_create', 'task_status', 'task_update']),
      );
      const created = await tool(claw.client, 'task_create', codeTask('Run the tests over /mcp'));
      expect(created.structured.routing?.kind).toBe('queue');
      expect(created.text).toContain('Routing: queued for claude-code');
      const id = created.structured.task.id;

      await claw.client.subscribeResource({ uri: 'task://active' });
      const seen = claw.updates.length;
      // A change made elsewhere (a worker's claim over REST) reaches the subscriber.
      const claimed = await call(hub.url, 'POST', '/api/tasks/claim', {
        token: hub.tokens.code,
        body: { workerId: 'w-mcp' },
      });
      expect(claimed.body.task?.id).toBe(id);
      await claw.updateAfter(seen, 'task://active');
      const active = await claw.client.readResource({ uri: 'task://active' });
      const first = active.contents[0];
      expect(first && 'text' in first ? first.text : '').toContain(
        `WORKING: Run the tests over /mcp [${id}] on claude-code, held by w-mcp`,
      );

      const status = await tool(claw.client, 'task_status', { taskId: id });
      expect(status.structured.task.state).toBe('WORKING');
      expect(status.text).toContain('SUBMITTED -> WORKING by w-mcp');

      const canceled = await tool(claw.client, 'task_update', {
        taskId: id,
        status: 'CANCELED',
        note: 'not needed after all',
      });
      expect(canceled.structured.task.state).toBe('CANCELED');
      await claw.client.unsubscribeResource({ uri: 'task://active' });
    } finally {
      await claw.client.close();
    }
  });
});

describe("the shared bundle's active tasks come from the task store", () => {
  it('lists open tasks newest first; finished ones never linger, even behind a stray status item', async () => {
    const open1 = (await call(hub.url, 'POST', '/api/tasks', {
      token: hub.tokens.claw,
      body: codeTask('Shared: older open task'),
    })) as { body: { task: { id: string } } };
    const open2 = (await call(hub.url, 'POST', '/api/tasks', {
      token: hub.tokens.claw,
      body: codeTask('Shared: newer open task'),
    })) as { body: { task: { id: string } } };
    const done = (await call(hub.url, 'POST', '/api/tasks', {
      token: hub.tokens.claw,
      body: codeTask('Shared: finished task'),
    })) as { body: { task: { id: string } } };
    const doneId = done.body.task.id;

    let bundle = await shared();
    const before = ids(bundle.activeTasks);
    expect(before.indexOf(`task:${open2.body.task.id}`)).toBeGreaterThanOrEqual(0);
    expect(before.indexOf(`task:${open2.body.task.id}`)).toBeLessThan(
      before.indexOf(`task:${open1.body.task.id}`),
    );
    expect(bundle.activeTasks.find((entry) => entry.id === `task:${doneId}`)?.text).toContain(
      'SUBMITTED: Shared: finished task',
    );

    // It finishes; then an agent writes a status about it without a done tag. The items alone
    // would list the task again (its newest status is not tagged done); the store says it ended.
    const canceled = await call(hub.url, 'POST', `/api/tasks/${doneId}/cancel`, {
      token: hub.tokens.claw,
      body: {},
    });
    expect(canceled.status).toBe(200);
    const stray = await call(hub.url, 'POST', '/api/context', {
      token: hub.tokens.code,
      body: {
        type: 'status',
        title: 'Shared: still thinking about it',
        scopeKey: `task:${doneId}`,
      },
    });
    expect(stray.status).toBe(201);
    bundle = await shared();
    expect(ids(bundle.activeTasks)).not.toContain(`task:${doneId}`);
    expect(bundle.formatted).not.toContain('Shared: finished task');
    expect(bundle.formatted).not.toContain('Shared: still thinking about it');
    expect(bundle.formatted).toContain('Shared: newer open task');
  });

  it('AUTH_REQUIRED shows as blocking, REJECTED (ended) does not; an approval wait that ended stops blocking', async () => {
    // An origin the file does not declare: the worker binds the command and asks a human.
    const held = (await call(hub.url, 'POST', '/api/tasks', {
      token: hub.tokens.intern,
      body: codeTask('Shared: needs approval'),
    })) as { body: { task: { id: string; state: string } } };
    let claimed: { id: string; lease: { token: number } } | null = null;
    while (claimed?.id !== held.body.task.id) {
      const response = await call(hub.url, 'POST', '/api/tasks/claim', {
        token: hub.tokens.code,
        body: { workerId: 'w-approval' },
      });
      claimed = response.body.task;
      if (!claimed) throw new Error('the held task was not claimable');
    }
    const asked = await call(hub.url, 'POST', `/api/tasks/${held.body.task.id}/approval-request`, {
      token: hub.tokens.code,
      body: {
        token: claimed.lease.token,
        request: {
          // The task's own command (codeTask's input.argv): the hub refuses any other.
          argv: ['pnpm', 'test'],
          cwd: '/tmp',
          scriptHash: null,
          because: 'untrusted_origin',
        },
      },
    });
    expect(asked.body.task?.state).toBe('AUTH_REQUIRED');
    const rejected = (await call(hub.url, 'POST', '/api/tasks', {
      token: hub.tokens.claw,
      body: { title: 'Shared: fly a drone', requiredCapabilities: ['drone_flight'] },
    })) as { body: { task: { id: string; state: string } } };
    expect(rejected.body.task.state).toBe('REJECTED');

    let bundle = await shared();
    const blocked = bundle.blockedItems.map((entry) => entry.text).join('\n');
    expect(blocked).toContain('Shared: needs approval');
    // An ended task blocks nobody: the origin still sees it, as an attention item.
    expect(blocked).not.toContain('Shared: fly a drone');
    // Shown once: as blocking, not again among the active tasks.
    expect(ids(bundle.activeTasks)).not.toContain(`task:${held.body.task.id}`);
    expect(ids(bundle.activeTasks)).not.toContain(`task:${rejected.body.task.id}`);

    // Canceled: its AUTH_REQUIRED item (blocking, unconsumed) no longer tells the truth.
    await call(hub.url, 'POST', `/api/tasks/${held.body.task.id}/cancel`, {
      token: hub.tokens.intern,
      body: {},
    });
    bundle = await shared();
    expect(bundle.formatted).not.toContain('Shared: needs approval');
    const after = bundle.blockedItems.map((entry) => entry.text).join('\n');
    expect(after).not.toContain('Shared: needs approval');
    expect(after).not.toContain('Shared: fly a drone');
  });
});
