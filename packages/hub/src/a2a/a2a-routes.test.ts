import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Store } from '@ctxbus/store';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { mintToken } from '../auth.js';
import type { Hub } from '../create-hub.js';
import type { MemoryHub } from '../memory-hub.js';
import { memoryHub } from '../memory-hub.js';
import { A2A_BLOCKING_WAIT_MS } from './a2a-routes.js';

// The A2A routes in process, on the repository's capabilities.yaml: the stream of a task says
// every state it went through, however quickly a worker moves it, and what is not a JSON-RPC
// call is answered as JSON-RPC says.

const ROUTING = 'urn:ctxbus:a2a:routing:v1';
let store: Store;
let hub: Hub;
const tokens: Record<string, string> = {};

async function rpc(token: string, method: string, params: unknown, path = '/a2a') {
  return hub.app.request(path, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: `call-${method}`, method, params }),
  });
}

async function post(token: string, path: string, body: unknown) {
  const response = await hub.app.request(path, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as any };
}

function codeMessage(messageId: string) {
  return {
    message: {
      messageId,
      role: 'ROLE_USER',
      parts: [{ text: 'run the tests' }, { data: { argv: ['npm', 'test'] } }],
      metadata: { [ROUTING]: { requiredCapabilities: ['code_execution'] } },
    },
    configuration: { returnImmediately: true },
  };
}

/** How many tasks the team has (up to 200). */
async function taskCount(): Promise<number> {
  const listed = await hub.app.request('/api/tasks?limit=200', {
    headers: { authorization: `Bearer ${tokens.claw}` },
  });
  return ((await listed.json()) as { tasks: unknown[] }).tasks.length;
}

/** The `result` of each SSE event of a finished stream. */
async function events(response: Response): Promise<any[]> {
  const text = await response.text();
  return text
    .split('\n\n')
    .filter((frame) => frame.startsWith('data: '))
    .map((frame) => JSON.parse(frame.slice('data: '.length)));
}

let world: MemoryHub<'code' | 'claw'>;

beforeEach(async () => {
  world = await memoryHub({ code: 'claude-code', claw: 'openclaw' });
  ({ store, hub } = world);
  Object.assign(tokens, world.tokens);
});

afterEach(() => world.close());

describe('A2A routes', () => {
  it('streams every state a task passes while a worker claims and completes it', async () => {
    const sent = (await (
      await rpc(tokens.claw as string, 'SendMessage', codeMessage('m-1'))
    ).json()) as any;
    const id = sent.result.task.id as string;
    const stream = await rpc(tokens.claw as string, 'SubscribeToTask', { id });
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);

    const claimed = await post(tokens.code as string, '/api/tasks/claim', { workerId: 'w' });
    expect(claimed.body.task.id).toBe(id);
    const done = await post(tokens.code as string, `/api/tasks/${id}/complete`, {
      token: claimed.body.task.lease.token,
      result: { exitCode: 0 },
    });
    expect(done.status).toBe(200);

    const results = (await events(stream)).map((event) => {
      expect(event).toMatchObject({ jsonrpc: '2.0', id: 'call-SubscribeToTask' });
      return event.result;
    });
    expect(
      results.map(
        (result) => result.task?.status.state ?? result.statusUpdate?.status.state ?? 'artifact',
      ),
    ).toEqual(['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING', 'artifact', 'TASK_STATE_COMPLETED']);
    expect(results[2].artifactUpdate.artifact.parts).toEqual([{ data: { exitCode: 0 } }]);
  });

  it('says each state its status item was written for, even when the store has moved on', async () => {
    const sent = (await (
      await rpc(tokens.claw as string, 'SendMessage', codeMessage('m-3'))
    ).json()) as any;
    const id = sent.result.task.id as string;
    const stream = await rpc(tokens.claw as string, 'SubscribeToTask', { id });
    // The worker's claim and completion both land in the store before the relay announces
    // either (it reads each event with the task as that event left it).
    const working = await store.claimTask({
      teamId: 'acme',
      runtime: 'claude-code',
      workerId: 'w',
      leaseMs: 30_000,
    });
    if (working?.id !== id || working.lease?.token == null)
      throw new Error('the task was not claimed');
    const completed = await store.completeTask('acme', id, working.lease.token, { exitCode: 0 });
    expect(completed.state).toBe('COMPLETED');
    await hub.services.taskRelay.wake();
    const states = (await events(stream)).map(
      ({ result }) => result.task?.status.state ?? result.statusUpdate?.status.state ?? 'artifact',
    );
    expect(states).toEqual([
      'TASK_STATE_SUBMITTED',
      'TASK_STATE_WORKING',
      'artifact',
      'TASK_STATE_COMPLETED',
    ]);
  });

  it('a blocking SendMessage answers the task as it stands once its wait is over', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const { configuration: _, ...blocking } = codeMessage('m-4');
      let settled = false;
      const answer = rpc(tokens.claw as string, 'SendMessage', blocking).finally(() => {
        settled = true;
      });
      // The hub's wait is armed once its one timer exists (vi.waitFor would move the clock).
      for (let turns = 0; vi.getTimerCount() === 0; turns += 1) {
        if (turns > 10_000) throw new Error('the blocking wait never started');
        await new Promise((resolve) => setImmediate(resolve));
      }
      await vi.advanceTimersByTimeAsync(A2A_BLOCKING_WAIT_MS - 1);
      expect(settled).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      const body = (await (await answer).json()) as any;
      expect(body.result.task.status.state).toBe('TASK_STATE_SUBMITTED');
    } finally {
      vi.useRealTimers();
    }
  });

  it('a blocking SendMessage whose caller went away ends its wait at once', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const { configuration: _, ...blocking } = codeMessage('m-5');
      const caller = new AbortController();
      const answer = hub.app.request('/a2a', {
        method: 'POST',
        headers: { authorization: `Bearer ${tokens.claw}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 'gone',
          method: 'SendMessage',
          params: blocking,
        }),
        signal: caller.signal,
      });
      for (let turns = 0; vi.getTimerCount() === 0; turns += 1) {
        if (turns > 10_000) throw new Error('the blocking wait never started');
        await new Promise((resolve) => setImmediate(resolve));
      }
      caller.abort();
      // Settles with no time passing: the wait (its place in the stream limits) is over.
      const body = (await (await answer).json()) as any;
      expect(body.result.task.status.state).toBe('TASK_STATE_SUBMITTED');
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it("prefers a runtime's card's runtime, and 404s a runtime the matrix does not declare", async () => {
    const viaWeb = (await (
      await rpc(tokens.claw as string, 'SendMessage', codeMessage('m-2'), '/a2a/web')
    ).json()) as any;
    const task = viaWeb.result.task;
    expect(task.metadata.ctxbus.targetRuntime).toBe('web');
    expect(task.metadata[ROUTING]).toMatchObject({ runtime: 'web' });

    const nobody = await rpc(tokens.claw as string, 'GetTask', { id: task.id }, '/a2a/nobody');
    expect(nobody.status).toBe(404);
    expect(await nobody.json()).toMatchObject({ error: { code: 'not_found' } });
  });

  it('answers bad envelopes, bad params and 0.3 method names with JSON-RPC errors', async () => {
    const envelope = await hub.app.request('/a2a', {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens.claw}`, 'content-type': 'application/json' },
      body: JSON.stringify([{ jsonrpc: '2.0', id: 1, method: 'GetTask' }]),
    });
    expect(await envelope.json()).toMatchObject({ id: null, error: { code: -32600 } });
    // An integer id past 2^53 comes back as sent (not rounded); an over-long one is not echoed.
    const raw = (body: string) =>
      hub.app.request('/a2a', {
        method: 'POST',
        headers: { authorization: `Bearer ${tokens.claw}`, 'content-type': 'application/json' },
        body,
      });
    const big = await raw(
      '{"jsonrpc":"2.0","id":12345678901234567891,"method":"GetTask","params":{"id":"x"}}',
    );
    expect(await big.text()).toMatch(
      /^\{"jsonrpc":"2\.0","id":12345678901234567891,"error":\{"code":-32001/,
    );
    const badBig = await raw('{"jsonrpc":"2.0","id":98765432109876543211,"method":7}');
    expect(await badBig.text()).toMatch(/"id":98765432109876543211,"error":\{"code":-32600/);
    const long = await raw(
      JSON.stringify({ jsonrpc: '2.0', id: 'i'.repeat(201), method: 'GetTask' }),
    );
    expect(await long.json()).toMatchObject({ id: null, error: { code: -32600 } });
    const params = await (await rpc(tokens.claw as string, 'GetTask', { id: 5 })).json();
    expect(params).toMatchObject({ id: 'call-GetTask', error: { code: -32602 } });
    const legacy = await (await rpc(tokens.claw as string, 'tasks/get', { id: 'x' })).json();
    expect(legacy).toMatchObject({ error: { code: -32601 } });
    const push = await (
      await rpc(tokens.claw as string, 'CreateTaskPushNotificationConfig', {})
    ).json();
    expect(push).toMatchObject({ error: { code: -32003 } });
    // A push config inside SendMessage is refused the same way, and nothing is created.
    const before = await taskCount();
    for (const field of ['taskPushNotificationConfig', 'pushNotificationConfig']) {
      const base = codeMessage(`m-push-${field}`);
      const inline = await (
        await rpc(tokens.claw as string, 'SendMessage', {
          ...base,
          configuration: { ...base.configuration, [field]: { url: 'https://hooks.example/a2a' } },
        })
      ).json();
      expect(inline, field).toMatchObject({ error: { code: -32003 } });
    }
    expect(await taskCount()).toBe(before);
    const text = await hub.app.request('/a2a', {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens.claw}`, 'content-type': 'text/plain' },
      body: '{}',
    });
    expect(text.status).toBe(415);
    const version = await hub.app.request('/a2a', {
      method: 'POST',
      headers: {
        authorization: `Bearer ${tokens.claw}`,
        'content-type': 'application/json',
        'a2a-version': '0.3',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'GetTask', params: { id: 'x' } }),
    });
    expect(await version.json()).toMatchObject({ id: 2, error: { code: -32009 } });
    const large = await hub.app.request('/a2a', {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens.claw}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 3,
        method: 'GetTask',
        params: { id: 'x'.repeat(2 ** 20) },
      }),
    });
    expect(large.status).toBe(413);
  });

  it('acts on a notification (no id) and never answers it: 204, no body, errors included', async () => {
    const notify = (method: string, params: unknown) =>
      hub.app.request('/a2a', {
        method: 'POST',
        headers: { authorization: `Bearer ${tokens.claw}`, 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', method, params }),
      });
    const before = await taskCount();
    const sent = await notify('SendMessage', codeMessage('m-notified'));
    expect(sent.status).toBe(204);
    expect(await sent.text()).toBe('');
    expect(await taskCount()).toBe(before + 1); // it acted: the task is there
    const failed = await notify('GetTask', { id: 5 });
    expect([failed.status, await failed.text()]).toEqual([204, '']);
  });

  it('refuses a part the task would lose (a file, a second data part, no content), creating nothing', async () => {
    const before = await taskCount();
    const withParts = (parts: unknown[]) => {
      const params = codeMessage(`m-parts-${Math.random()}`);
      return { ...params, message: { ...params.message, parts } };
    };
    const text = { text: 'analyze this' };
    for (const [parts, code, message] of [
      [
        [text, { raw: 'AAAA', mediaType: 'video/mp4' }],
        -32005,
        /^message\.parts\[1\] is a file \(video\/mp4\)/,
      ],
      [[text, { url: 'https://example.com/a.png' }], -32005, /^message\.parts\[1\] is a file: /],
      [
        [text, { data: { a: 1 } }, { data: { b: 2 } }],
        -32602,
        /^message\.parts\[2\] is a second data part/,
      ],
      [[text, { data: [1, 2, 3] }], -32602, /^message\.parts\[1\]\.data must be a JSON object/],
      [[text, {}], -32602, /^message\.parts\[1\] must have exactly one of .*\(it has none\)/],
      [[{ text: 'x', data: { a: 1 } }], -32602, /\(it has text, data\)$/],
    ] as const) {
      const answer = (await (
        await rpc(tokens.claw as string, 'SendMessage', withParts([...parts]))
      ).json()) as any;
      expect(answer.error?.code, JSON.stringify(parts)).toBe(code);
      expect(answer.error.message).toMatch(message);
    }
    expect(await taskCount()).toBe(before);
  });

  it('a message naming a task: not found when there is none, unsupported when there is', async () => {
    const sent = (await (
      await rpc(tokens.claw as string, 'SendMessage', codeMessage('m-cont'))
    ).json()) as any;
    const toTask = (taskId: string) => {
      const params = codeMessage(`m-cont-${taskId}`);
      return { ...params, message: { ...params.message, taskId } };
    };
    const unknown = (await (
      await rpc(tokens.claw as string, 'SendMessage', toTask('task_nope'))
    ).json()) as any;
    expect(unknown.error.code).toBe(-32001);
    const known = (await (
      await rpc(tokens.claw as string, 'SendMessage', toTask(sent.result.task.id))
    ).json()) as any;
    expect(known.error.code).toBe(-32004);
  });

  it('a message sent again is its task; another message with its messageId is invalid params', async () => {
    const send = async (params: unknown) =>
      (await (await rpc(tokens.claw as string, 'SendMessage', params)).json()) as any;
    const first = await send(codeMessage('m-again'));
    expect((await send(codeMessage('m-again'))).result.task.id).toBe(first.result.task.id);
    const other = codeMessage('m-again');
    other.message.parts = [{ text: 'run the tests' }, { data: { argv: ['rm', '-rf', '/'] } }];
    const refused = await send(other);
    expect(refused.error).toMatchObject({
      code: -32602,
      data: { messageId: 'm-again', taskId: first.result.task.id },
    });
    expect(refused.error.message).toMatch(/messageId "m-again" was sent before/);
    expect(await taskCount()).toBe(1);
  });

  it('follows a task subscribed to while it waits for input until it ends', async () => {
    const sent = (await (
      await rpc(tokens.claw as string, 'SendMessage', codeMessage('m-wait'))
    ).json()) as any;
    const id = sent.result.task.id as string;
    const claimed = await post(tokens.code as string, '/api/tasks/claim', { workerId: 'w' });
    expect(claimed.body.task.id).toBe(id);
    const asked = await post(tokens.code as string, `/api/tasks/${id}/update`, {
      state: 'INPUT_REQUIRED',
      note: 'which branch?',
      token: claimed.body.task.lease.token,
    });
    expect(asked.body.task.state).toBe('INPUT_REQUIRED');
    // What it waits for is in its status, for the A2A client to answer.
    const got = (await (await rpc(tokens.claw as string, 'GetTask', { id })).json()) as any;
    expect(got.result.status).toMatchObject({
      state: 'TASK_STATE_INPUT_REQUIRED',
      message: { role: 'ROLE_AGENT', parts: [{ text: 'which branch?' }] },
    });
    const stream = await rpc(tokens.claw as string, 'SubscribeToTask', { id });
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const given = await post(tokens.claw as string, `/api/tasks/${id}/update`, {
      state: 'SUBMITTED',
      note: 'main',
    });
    expect(given.body.task.state).toBe('SUBMITTED');
    const canceled = await post(tokens.claw as string, `/api/tasks/${id}/cancel`, {});
    expect(canceled.status).toBe(200);
    const states = (await events(stream)).map(
      ({ result }) => result.task?.status.state ?? result.statusUpdate?.status.state,
    );
    expect(states).toEqual([
      'TASK_STATE_INPUT_REQUIRED',
      'TASK_STATE_SUBMITTED',
      'TASK_STATE_CANCELED',
    ]);
  });

  it('ListTasks pages the team’s tasks newest first, filtered, with the total', async () => {
    const ids: string[] = [];
    for (const name of ['l-1', 'l-2', 'l-3']) {
      const sent = (await (
        await rpc(tokens.claw as string, 'SendMessage', codeMessage(name))
      ).json()) as any;
      ids.push(sent.result.task.id);
    }
    const claimed = await post(tokens.code as string, '/api/tasks/claim', { workerId: 'w' });
    await post(tokens.code as string, `/api/tasks/${claimed.body.task.id}/complete`, {
      token: claimed.body.task.lease.token,
      result: { exitCode: 0 },
    });
    const list = async (params: Record<string, unknown>) =>
      (await (await rpc(tokens.claw as string, 'ListTasks', params)).json()) as any;
    const first = (await list({ pageSize: 2 })).result;
    expect(first.tasks.map((task: { id: string }) => task.id)).toEqual([ids[2], ids[1]]);
    expect([first.pageSize, first.totalSize, first.nextPageToken]).toEqual([2, 3, ids[1]]);
    const second = (await list({ pageSize: 2, pageToken: first.nextPageToken })).result;
    expect(second.tasks.map((task: { id: string }) => task.id)).toEqual([ids[0]]);
    expect(second.nextPageToken).toBe('');
    // The completed one (the oldest, claimed first), with its artifact only when asked.
    const done = (await list({ status: 'TASK_STATE_COMPLETED' })).result;
    expect([done.totalSize, done.tasks[0].id, done.tasks[0].artifacts]).toEqual([
      1,
      ids[0],
      undefined,
    ]);
    const withArtifacts = (await list({ status: 'TASK_STATE_COMPLETED', includeArtifacts: true }))
      .result;
    expect(withArtifacts.tasks[0].artifacts[0].parts).toEqual([{ data: { exitCode: 0 } }]);
    const unset = (await list({ status: 'TASK_STATE_UNSPECIFIED', contextId: '', pageToken: '' }))
      .result;
    expect(unset.totalSize).toBe(3);
    // A context is one task: its own id.
    const context = (await list({ contextId: ids[1] })).result;
    expect([context.totalSize, context.tasks[0].id]).toEqual([1, ids[1]]);
    expect((await list({ contextId: 'task_nope' })).result.tasks).toEqual([]);
    // Another team sees none of them.
    const globex = (
      await mintToken(store, { role: 'runtime', teamId: 'globex', runtime: 'openclaw' })
    ).token;
    const theirs = ((await (await rpc(globex, 'ListTasks', {})).json()) as any).result;
    expect([theirs.totalSize, theirs.tasks]).toEqual([0, []]);
    // What it cannot do is said, not ignored.
    for (const params of [
      { pageToken: 'task_00000000-0000-4000-8000-000000000000' },
      { statusTimestampAfter: '2026-01-01T00:00:00Z' },
      { pageSize: 101 },
      { status: 'DONE' },
    ]) {
      expect((await list(params)).error?.code, JSON.stringify(params)).toBe(-32602);
    }
  });

  it('refuses a request nested thousands deep as invalid params, echoing its id', async () => {
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    const response = await hub.app.request('/a2a', {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens.claw}`, 'content-type': 'application/json' },
      body: `{"jsonrpc":"2.0","id":"deep","method":"GetTask","params":{"id":${deep}}}`,
    });
    const answer = (await response.json()) as any;
    expect(answer).toMatchObject({ id: 'deep', error: { code: -32602 } });
    expect(answer.error.message).toMatch(/^params\.id(\[0\])+: nested deeper than 32 levels$/);
  });

  it('lists the A2A routes in the OpenAPI document', () => {
    const paths = hub.routes.map((route) => `${route.method} ${route.path}`);
    expect(paths).toEqual(
      expect.arrayContaining([
        'GET /.well-known/agent-card.json',
        'GET /a2a/:runtime/.well-known/agent-card.json',
        'POST /a2a',
        'POST /a2a/:runtime',
      ]),
    );
    expect(readFileSync(join(import.meta.dirname, 'a2a-routes.ts'), 'utf8')).toContain(
      "tags: ['a2a']",
    );
  });
});
