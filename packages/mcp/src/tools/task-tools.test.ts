import type { CtxbusClient } from '@ctxbus/client';
import { createClient } from '@ctxbus/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCtxbusMcpServer } from '../create-ctxbus-mcp-server.js';
import type { ConnectedClient, TestHub } from '../test-kit.js';
import { connectInMemory, REPO_CAPABILITIES, startTestHub, textOf } from '../test-kit.js';

// The task tools against a real hub loaded with the repository's capabilities.yaml: OpenClaw
// (through its MCP server) hands code to Claude Code; Claude Code's worker (the REST client
// here) claims it; each side records progress and moves the task with task_update.

let hub: TestHub;
/** MCP as OpenClaw, the origin of the tasks. */
let claw: ConnectedClient;
/** MCP as Claude Code, the doer. */
let code: ConnectedClient;
/** Claude Code's worker, claiming over REST. */
let worker: CtxbusClient;

beforeAll(async () => {
  hub = await startTestHub('claude-code', { capabilitiesFile: REPO_CAPABILITIES });
  const clawClient = createClient({ url: hub.url, token: await hub.mint('openclaw') });
  claw = await connectInMemory(createCtxbusMcpServer({ backend: clawClient }));
  code = await connectInMemory(createCtxbusMcpServer({ backend: hub.client }));
  worker = hub.client;
});

afterAll(async () => {
  await claw.close();
  await code.close();
  await hub.close();
});

interface TaskResult {
  task: {
    id: string;
    state: string;
    targetRuntime: string | null;
    lease: { token: number } | null;
    result: unknown;
  };
  history?: { from: string | null; to: string; by: string; note: string | null }[];
  routing?: { kind: string; runtime: string | null; requiresApproval: boolean };
  status?: string;
}

async function call(on: ConnectedClient, name: string, args: Record<string, unknown>) {
  const result = await on.client.callTool({ name, arguments: args });
  return { result, structured: result.structuredContent as unknown as TaskResult };
}

async function ok(on: ConnectedClient, name: string, args: Record<string, unknown>) {
  const outcome = await call(on, name, args);
  if (outcome.result.isError) throw new Error(textOf(outcome.result));
  return outcome;
}

const codeTask = (title: string, extra: Record<string, unknown> = {}) => ({
  title,
  requiredCapabilities: ['code_execution'],
  input: { argv: ['pnpm', 'test'], cwd: '/tmp' },
  ...extra,
});

/** Claims until this task is the one claimed (earlier tests may leave others waiting). */
async function claimThis(id: string, workerId: string) {
  for (;;) {
    const task = await worker.claimTask({ workerId });
    if (!task) throw new Error(`task ${id} was not claimable`);
    if (task.id === id) return task;
    await worker.cancelTask(task.id, 'not this test’s');
  }
}

describe('task_create', () => {
  it('routes the task and explains the decision in words', async () => {
    const { result, structured } = await ok(claw, 'task_create', codeTask('Run the tests'));
    expect(structured.status).toBe('created');
    expect(structured.task).toMatchObject({ state: 'SUBMITTED', targetRuntime: 'claude-code' });
    expect(structured.routing).toMatchObject({
      kind: 'queue',
      runtime: 'claude-code',
      requiresApproval: false,
    });
    const text = textOf(result);
    expect(text).toContain('SUBMITTED: Run the tests');
    expect(text).toMatch(/Routing: queued for claude-code, which can do it but is offline/);
    expect(text).toContain('No approval needed.');
  });

  it('the same idempotency key returns the task already created', async () => {
    const first = await ok(claw, 'task_create', codeTask('Once', { idempotencyKey: 'k-once' }));
    const again = await ok(claw, 'task_create', codeTask('Once', { idempotencyKey: 'k-once' }));
    expect(again.structured.status).toBe('existing');
    expect(again.structured.task.id).toBe(first.structured.task.id);
    expect(textOf(again.result)).toMatch(/^Already created/);
  });

  it('refuses a preference or constraint it does not take, naming it; nothing is created', async () => {
    const count = async () => (await worker.tasks({ limit: 200 })).tasks.length;
    const before = await count();
    for (const [extra, named] of [
      [
        { preferences: { prefr: ['codex'] } },
        /^task_create failed: invalid input: preferences: Unrecognized key: "prefr"$/,
      ],
      [
        { constraints: { timeoutSeconds: 60 } },
        /^task_create failed: invalid input: constraints: Unrecognized key: "timeoutSeconds"$/,
      ],
    ] as const) {
      const refused = await call(claw, 'task_create', codeTask('Typo', extra));
      expect(refused.result.isError).toBe(true);
      expect(textOf(refused.result)).toMatch(named);
    }
    expect(await count()).toBe(before);
    // The fields it takes still work.
    const taken = await ok(
      claw,
      'task_create',
      codeTask('Prefers', {
        preferences: { prefer: ['claude-code'] },
        constraints: { seconds: 5 },
      }),
    );
    expect(taken.structured.status).toBe('created');
  });

  it('a task no runtime can do is REJECTED, escalated to a human', async () => {
    const { result, structured } = await ok(claw, 'task_create', {
      title: 'Fly a drone',
      requiredCapabilities: ['drone_flight'],
    });
    expect(structured.task.state).toBe('REJECTED');
    expect(structured.routing?.kind).toBe('escalate');
    expect(textOf(result)).toMatch(/no runtime can do it: the task is REJECTED/);
  });

  it('a runtime the file does not declare needs a human’s approval; task_update never gives it', async () => {
    const intern = await connectInMemory(
      createCtxbusMcpServer({
        backend: createClient({ url: hub.url, token: await hub.mint('intern') }),
      }),
    );
    try {
      // The worker asks about the task's own command (the hub refuses any other).
      const { result, structured } = await ok(
        intern,
        'task_create',
        codeTask('Deploy', { input: { argv: ['pnpm', 'deploy'], cwd: '/tmp' } }),
      );
      // Queued, flagged: the worker binds the exact command and asks for the approval.
      expect(structured.routing?.requiresApproval).toBe(true);
      expect(textOf(result)).toMatch(/A human must approve it first: intern is not declared/);
      const id = structured.task.id;
      const claimed = await claimThis(id, 'worker-approval');
      await worker.requestApproval(id, {
        token: claimed.lease?.token ?? 0,
        request: {
          argv: ['pnpm', 'deploy'],
          cwd: '/tmp',
          scriptHash: null,
          because: 'untrusted_origin',
        },
      });
      const status = await ok(intern, 'task_status', { taskId: id });
      expect(status.structured.task.state).toBe('AUTH_REQUIRED');
      expect(textOf(status.result)).toContain(`Approval pending until`);
      expect(textOf(status.result)).toContain(
        `["pnpm","deploy"] in "/tmp" (a human answers: ctxbus approve|deny ${id})`,
      );
      // Leaving AUTH_REQUIRED for SUBMITTED is an approval, never an update.
      const sneak = await call(intern, 'task_update', {
        taskId: id,
        status: 'SUBMITTED',
        note: 'approve myself',
      });
      expect(sneak.result.isError).toBe(true);
      expect(textOf(sneak.result)).toMatch(/waits for a human's approval/);
      // Canceling it does work.
      const canceled = await ok(intern, 'task_update', {
        taskId: id,
        status: 'CANCELED',
        note: 'not needed',
      });
      expect(canceled.structured.task.state).toBe('CANCELED');
      // Once ended, a note is refused (not answered with success and lost).
      const again = await call(intern, 'task_update', {
        taskId: id,
        status: 'CANCELED',
        note: 'again',
      });
      expect(again.result.isError).toBe(true);
      expect(textOf(again.result)).toMatch(
        /has ended \(CANCELED\): a note goes on an open task only/,
      );
    } finally {
      await intern.close();
    }
  });

  it('bad input is a tool error naming the field', async () => {
    const { result } = await call(claw, 'task_create', { title: 'x', requiredCapabilities: [] });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/^task_create failed: invalid input: requiredCapabilities/);
  });
});

describe('task_status and task_update through a task’s life', () => {
  it('origin and doer record progress, ask for input, answer it, and finish under the fencing token', async () => {
    const created = await ok(claw, 'task_create', codeTask('Run the full suite'));
    const id = created.structured.task.id;

    const first = await claimThis(id, 'worker-1');
    expect(first.lease?.token).toBeGreaterThan(0);
    const token = first.lease?.token ?? 0;

    // Progress: the current state with a note changes nothing but is recorded for everyone;
    // on a WORKING task only under the claim's token (the holder's runtime is not the holder).
    const forged = await call(code, 'task_update', {
      taskId: id,
      status: 'WORKING',
      note: 'all tests passed',
    });
    expect(forged.result.isError).toBe(true);
    expect(textOf(forged.result)).toMatch(/needs the claim's fencing token/);
    const progress = await ok(code, 'task_update', {
      taskId: id,
      status: 'WORKING',
      note: 'tests 40/120 passed',
      token,
    });
    expect(progress.structured.task.state).toBe('WORKING');
    const { items } = await worker.list({ scopeKey: `task:${id}`, limit: 1 });
    expect(items[0]?.content).toContain('Note: tests 40/120 passed');

    // A move of a WORKING task without the token is refused, with the reason.
    const noToken = await call(code, 'task_update', {
      taskId: id,
      status: 'INPUT_REQUIRED',
      note: 'which branch?',
    });
    expect(noToken.result.isError).toBe(true);
    expect(textOf(noToken.result)).toMatch(/stale lease .*must carry its token/);

    const asking = await ok(code, 'task_update', {
      taskId: id,
      status: 'INPUT_REQUIRED',
      note: 'which branch?',
      token,
    });
    expect(asking.structured.task.state).toBe('INPUT_REQUIRED');

    // The origin answers: back in the queue, claimed again under another token.
    const answered = await ok(claw, 'task_update', {
      taskId: id,
      status: 'SUBMITTED',
      note: 'use main',
    });
    expect(answered.structured.task.state).toBe('SUBMITTED');
    const second = await claimThis(id, 'worker-2');
    const newer = second.lease?.token ?? 0;
    expect(newer).not.toBe(token);

    // The old claim's token cannot finish it; the current one can.
    const stale = await call(code, 'task_update', {
      taskId: id,
      status: 'COMPLETED',
      note: 'all green',
      token,
    });
    expect(stale.result.isError).toBe(true);
    expect(textOf(stale.result)).toMatch(/conflict: .*stale lease/);
    const done = await ok(code, 'task_update', {
      taskId: id,
      status: 'COMPLETED',
      note: 'all green',
      token: newer,
      result: { passed: 120, failed: 0 },
    });
    expect(done.structured.task).toMatchObject({
      state: 'COMPLETED',
      result: { passed: 120, failed: 0 },
    });

    // task_status: the state, the result and the history in words and in structure.
    const status = await ok(claw, 'task_status', { taskId: id });
    expect(status.structured.task.state).toBe('COMPLETED');
    expect(status.structured.history?.map((event) => event.to)).toEqual([
      'SUBMITTED',
      'WORKING',
      'INPUT_REQUIRED',
      'SUBMITTED',
      'WORKING',
      'COMPLETED',
    ]);
    const text = textOf(status.result);
    expect(text).toContain('COMPLETED: Run the full suite');
    expect(text).toContain('attempt 2 of 3');
    expect(text).toContain('Result: {"passed":120,"failed":0}');
    expect(text).toContain('INPUT_REQUIRED -> SUBMITTED by openclaw: use main');

    // Terminal: nothing moves it any more.
    const late = await call(claw, 'task_update', { taskId: id, status: 'CANCELED', note: 'x' });
    expect(late.result.isError).toBe(true);
    expect(textOf(late.result)).toMatch(/COMPLETED is terminal/);
  });

  it('CANCELED stops a WORKING task without a token, and the worker’s token then goes stale', async () => {
    const created = await ok(claw, 'task_create', codeTask('Long job'));
    const id = created.structured.task.id;
    const claimed = await claimThis(id, 'worker-3');
    const canceled = await ok(claw, 'task_update', {
      taskId: id,
      status: 'CANCELED',
      note: 'changed my mind',
    });
    expect(canceled.structured.task.state).toBe('CANCELED');
    await expect(
      worker.completeTask(id, { token: claimed.lease?.token ?? 0, result: {} }),
    ).rejects.toMatchObject({ code: 'conflict' });
    const status = await ok(code, 'task_status', { taskId: id });
    expect(textOf(status.result)).toContain('WORKING -> CANCELED by openclaw: changed my mind');
  });

  it('states only the hub sets are refused with what sets them', async () => {
    const created = await ok(claw, 'task_create', codeTask('Not yet claimed'));
    const id = created.structured.task.id;
    const working = await call(claw, 'task_update', { taskId: id, status: 'WORKING', note: 'go' });
    expect(textOf(working.result)).toMatch(/cannot be updated to WORKING: a worker claims it/);
    const completed = await call(claw, 'task_update', {
      taskId: id,
      status: 'COMPLETED',
      note: 'done',
    });
    expect(textOf(completed.result)).toMatch(/COMPLETED needs token/);
    // A result with another move would be dropped: refused, the task unchanged.
    const withResult = await call(claw, 'task_update', {
      taskId: id,
      status: 'FAILED',
      result: { passed: 3 },
    });
    expect(textOf(withResult.result)).toMatch(/result goes with COMPLETED only/);
    const failed = await ok(claw, 'task_update', {
      taskId: id,
      status: 'FAILED',
      note: 'no longer possible',
    });
    expect(failed.structured.task.state).toBe('FAILED');
  });

  it('an unknown task is a not-found error; another team’s task is unknown too', async () => {
    const missing = await call(claw, 'task_status', {
      taskId: 'task_019a0000-0000-7000-8000-000000000000',
    });
    expect(textOf(missing.result)).toMatch(/^task_status failed: not found: no task/);
    const created = await ok(claw, 'task_create', codeTask('Acme only'));
    const globex = await connectInMemory(
      createCtxbusMcpServer({
        backend: createClient({ url: hub.url, token: await hub.mint('claude-code', 'globex') }),
      }),
    );
    try {
      const other = await call(globex, 'task_update', {
        taskId: created.structured.task.id,
        status: 'CANCELED',
        note: 'not mine',
      });
      expect(textOf(other.result)).toMatch(/not found/);
    } finally {
      await globex.close();
    }
  });
});

describe('task://active', () => {
  it('lists the open tasks from the task store, newest first; finished ones never linger', async () => {
    const older = await ok(claw, 'task_create', codeTask('Active older'));
    const newer = await ok(claw, 'task_create', codeTask('Active newer'));
    const finished = await ok(claw, 'task_create', codeTask('Finished one'));
    await ok(claw, 'task_update', {
      taskId: finished.structured.task.id,
      status: 'CANCELED',
      note: 'done with it',
    });
    await worker.write({ type: 'status', title: 'T-77: my own thread', scopeKey: 'task:T-77' });
    const { contents } = await claw.client.readResource({ uri: 'task://active' });
    const text = contents[0] && 'text' in contents[0] ? contents[0].text : '';
    expect(text).toContain(`SUBMITTED: Active newer [${newer.structured.task.id}] on claude-code`);
    expect(text.indexOf('Active newer')).toBeLessThan(text.indexOf('Active older'));
    expect(text).toContain(older.structured.task.id);
    expect(text).not.toContain('Finished one');
    expect(text).toContain('## Other task status');
    expect(text).toContain('T-77: my own thread');
    // Hub tasks are not repeated among the agents' own threads.
    expect(text.split(older.structured.task.id)).toHaveLength(2);
  });

  it('notifies a subscriber when a task changes', async () => {
    const created = await ok(claw, 'task_create', codeTask('Watched'));
    await code.client.subscribeResource({ uri: 'task://active' });
    try {
      await worker.cancelTask(created.structured.task.id, 'stop');
      await code.nextUpdate('task://active');
      const { contents } = await code.client.readResource({ uri: 'task://active' });
      const text = contents[0] && 'text' in contents[0] ? contents[0].text : '';
      expect(text).not.toContain('Watched');
    } finally {
      await code.client.unsubscribeResource({ uri: 'task://active' });
    }
  });
});
