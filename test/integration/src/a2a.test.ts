import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Message, Part, StreamResponse, Task } from '@a2a-js/sdk';
import { Role, TaskState } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import {
  ContentTypeNotSupportedError,
  RequestMalformedError,
  TaskNotCancelableError,
  TaskNotFoundError,
} from '@a2a-js/sdk/errors';
import { call, runCli, tempDir, waitUntil } from '@ctxbus/test-kit';
import { storeUrl, useHubPair, withPostgres } from '@ctxbus/test-kit/postgres';
import { describe, expect, it } from 'vitest';
import { useInProcessHub } from './in-process-serve.ts';

// A2A 1.0 against a real `ctxbus serve`, spoken by the real @a2a-js/sdk client: the Agent
// Cards, a message that becomes a routed ctxbus task (the same task /api/tasks shows), get,
// cancel, and a stream of its states while a worker claims and completes it over /api/tasks.

const ROUTING = 'urn:ctxbus:a2a:routing:v1';

const dataDir = tempDir('ctxbus-a2a-');
writeFileSync(
  join(dataDir, 'capabilities.yaml'),
  readFileSync(join(import.meta.dirname, '../../../capabilities.yaml'), 'utf8'),
);

const hub = useInProcessHub({
  dataDir,
  tokens: {
    claw: ['acme', 'openclaw'],
    code: ['acme', 'claude-code'],
    codex: ['acme', 'codex'],
    globex: ['globex', 'openclaw'],
  },
});

/** A client that discovers the hub's card and sends `token` (or none) with every call. */
async function clientFor(token: string | null, base = hub.url) {
  const fetchImpl: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    if (token !== null) headers.set('authorization', `Bearer ${token}`);
    return fetch(input, { ...init, headers });
  };
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
    }),
  );
  return factory.createFromUrl(base);
}

let messages = 0;
function textPart(value: string): Part {
  return { content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: '' };
}
function dataPart(value: unknown): Part {
  return { content: { $case: 'data', value }, metadata: undefined, filename: '', mediaType: '' };
}
function message(parts: Part[], metadata?: Record<string, unknown>): Message {
  messages += 1;
  return {
    messageId: `msg-${process.pid}-${messages}-${Date.now()}`,
    contextId: '',
    taskId: '',
    role: Role.ROLE_USER,
    parts,
    metadata,
    extensions: [],
    referenceTaskIds: [],
  };
}
/** SendMessage's request; `returnImmediately` unless `blocking` (A2A's default: wait). */
function send(msg: Message, blocking = false) {
  return {
    tenant: '',
    message: msg,
    configuration: {
      acceptedOutputModes: [],
      taskPushNotificationConfig: undefined,
      historyLength: undefined,
      returnImmediately: !blocking,
    },
    metadata: undefined,
  };
}
/** "run the tests" for code_execution, its argv in a data part. */
function codeMessage(title: string): Message {
  return message([textPart(title), dataPart({ argv: ['npm', 'test'] })], {
    [ROUTING]: { requiredCapabilities: ['code_execution'] },
  });
}

/**
 * A SendMessage or SendStreamingMessage of a code task as raw JSON-RPC (its HTTP status and
 * headers are what the test reads), with `text` as the message.
 */
function rawSend(
  base: string,
  token: string,
  id: number | string,
  method: 'SendMessage' | 'SendStreamingMessage',
  text: string,
  signal?: AbortSignal,
): Promise<Response> {
  return fetch(`${base}/a2a`, {
    method: 'POST',
    ...(signal && { signal }),
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id,
      method,
      params: {
        message: {
          messageId: randomUUID(),
          role: 'ROLE_USER',
          parts: [{ text }],
          metadata: { [ROUTING]: { requiredCapabilities: ['code_execution'] } },
        },
      },
    }),
  });
}

function asTask(result: Task | Message): Task {
  if (!('status' in result)) throw new Error(`expected a task, got ${JSON.stringify(result)}`);
  return result;
}

async function claimThis(id: string, workerId: string, base = hub.url, token = hub.tokens.code) {
  for (;;) {
    const response = await call(base, 'POST', '/api/tasks/claim', {
      token,
      body: { workerId, leaseMs: 30_000 },
    });
    expect(response.status).toBe(200);
    const task = response.body.task;
    if (!task) throw new Error(`task ${id} was not claimable`);
    if (task.id === id) return task as { id: string; lease: { token: number } };
    await call(base, 'POST', `/api/tasks/${task.id}/cancel`, {
      token,
      body: {},
    });
  }
}

/** GET with a Host header of our choosing (fetch would not let us set it). */
function getWithHost(path: string, host: string, base = hub.url) {
  const url = new URL(base);
  return new Promise<{ status: number; body: unknown }>((resolve, reject) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port, path, headers: { host } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

function states(events: StreamResponse[]): TaskState[] {
  return events.flatMap((event) => {
    if (event.payload?.$case === 'task') return [event.payload.value.status?.state ?? -1];
    if (event.payload?.$case === 'statusUpdate') {
      return [event.payload.value.status?.state ?? -1];
    }
    return [];
  });
}

describe('A2A over the hub', () => {
  it("serves the hub's Agent Card and one per declared runtime, discoverable by the SDK", async () => {
    const client = await clientFor(hub.tokens.claw);
    const card = await client.getAgentCard();
    expect(card.name).toBe('ctxbus hub');
    expect(card.supportedInterfaces).toEqual([
      expect.objectContaining({ url: `${hub.url}/a2a`, protocolBinding: 'JSONRPC' }),
    ]);
    expect(card.capabilities?.streaming).toBe(true);
    expect(card.capabilities?.extensions.map((extension) => extension.uri)).toEqual([ROUTING]);
    expect(card.skills.map((skill) => skill.id)).toContain('code_execution');

    const runtime = await clientFor(hub.tokens.claw, `${hub.url}/a2a/openclaw/`);
    const runtimeCard = await runtime.getAgentCard();
    expect(runtimeCard.name).toBe('ctxbus: openclaw');
    expect(runtimeCard.supportedInterfaces[0]?.url).toBe(`${hub.url}/a2a/openclaw`);

    const undeclared = await call(hub.url, 'GET', '/a2a/nobody/.well-known/agent-card.json', {});
    expect(undeclared.status).toBe(404);
    expect(undeclared.body.error.code).toBe('not_found');

    // Cacheable, as A2A asks: Cache-Control and an ETag; asked again with it, 304 and no body.
    for (const path of [
      '/.well-known/agent-card.json',
      '/a2a/openclaw/.well-known/agent-card.json',
    ]) {
      const first = await fetch(`${hub.url}${path}`);
      expect(first.headers.get('cache-control')).toBe('public, max-age=300');
      const etag = first.headers.get('etag') ?? '';
      expect(etag).toMatch(/^"[\w-]{27}"$/);
      expect((await first.json()).name).toMatch(/ctxbus/);
      const again = await fetch(`${hub.url}${path}`, { headers: { 'if-none-match': etag } });
      expect(again.status).toBe(304);
      expect(await again.text()).toBe('');
      const other = await fetch(`${hub.url}${path}`, { headers: { 'if-none-match': '"stale"' } });
      expect(other.status).toBe(200);
    }
  });

  it('names no Host header it was not configured for: a non-loopback name gets 503', async () => {
    const port = new URL(hub.url).port;
    const foreign = await getWithHost('/.well-known/agent-card.json', `evil.example:${port}`);
    expect(foreign.status).toBe(503);
    expect(JSON.stringify(foreign.body)).toContain('--public-url');
    const local = await getWithHost('/.well-known/agent-card.json', `localhost:${port}`);
    expect(local.status).toBe(200);
    expect(local.body).toMatchObject({
      supportedInterfaces: [{ url: `http://localhost:${port}/a2a` }],
    });
  });

  it('SendMessage creates a routed ctxbus task; GetTask and /api/tasks show the same task', async () => {
    const client = await clientFor(hub.tokens.claw);
    const msg = codeMessage('run the tests\nin the api package');
    const task = asTask(await client.sendMessage(send(msg)));
    expect(task.status?.state).toBe(TaskState.TASK_STATE_SUBMITTED);
    expect(task.metadata?.[ROUTING]).toMatchObject({ kind: 'queue', runtime: 'claude-code' });
    expect(task.metadata?.ctxbus).toMatchObject({
      origin: 'openclaw',
      targetRuntime: 'claude-code',
    });

    const rest = await call(hub.url, 'GET', `/api/tasks/${task.id}`, { token: hub.tokens.claw });
    expect(rest.status).toBe(200);
    expect(rest.body.task).toMatchObject({
      title: 'run the tests',
      description: 'run the tests\nin the api package',
      requiredCapabilities: ['code_execution'],
      origin: 'openclaw',
      state: 'SUBMITTED',
      input: { argv: ['npm', 'test'] },
      idempotencyKey: `a2a:${msg.messageId}`,
      routing: { kind: 'queue', runtime: 'claude-code' },
    });

    const got = await client.getTask({ tenant: '', id: task.id, historyLength: undefined });
    expect(got).toMatchObject({ id: task.id, status: { state: TaskState.TASK_STATE_SUBMITTED } });
    const again = asTask(await client.sendMessage(send(msg)));
    expect(again.id).toBe(task.id);

    const canceled = await client.cancelTask({ tenant: '', id: task.id, metadata: undefined });
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    const after = await call(hub.url, 'GET', `/api/tasks/${task.id}`, { token: hub.tokens.claw });
    expect(after.body.task.state).toBe('CANCELED');
    await expect(
      client.cancelTask({ tenant: '', id: task.id, metadata: undefined }),
    ).rejects.toBeInstanceOf(TaskNotCancelableError);
  });

  it('refuses a cancel from a runtime that is no party to the task as not cancelable, audited', async () => {
    const origin = await clientFor(hub.tokens.claw);
    const task = asTask(await origin.sendMessage(send(codeMessage('not yours to cancel'))));
    const refusals = async () => {
      const page = await call(hub.url, 'GET', '/api/audit?limit=200', { token: hub.tokens.claw });
      return (page.body.records as { kind: string; subject: string }[]).filter(
        (record) => record.kind === 'task.report-refused' && record.subject === task.id,
      ).length;
    };
    const before = await refusals();
    const bystander = await clientFor(hub.tokens.codex);
    const refused = await bystander
      .cancelTask({ tenant: '', id: task.id, metadata: undefined })
      .then(
        () => null,
        (error: unknown) => error,
      );
    expect(refused).toBeInstanceOf(TaskNotCancelableError);
    expect(await refusals()).toBe(before + 1);
    const after = await call(hub.url, 'GET', `/api/tasks/${task.id}`, { token: hub.tokens.claw });
    expect(after.body.task.state).toBe('SUBMITTED');
  });

  it('ends a stream whose token is revoked with an error that says so, not a silent close', async () => {
    const minted = await call(hub.url, 'POST', '/api/admin/tokens', {
      token: hub.adminToken,
      body: { teamId: 'acme', runtime: 'openclaw' },
    });
    expect(minted.status).toBe(201);
    const response = await rawSend(
      hub.url,
      minted.body.token,
      'revoked',
      'SendStreamingMessage',
      'streamed, then revoked',
    );
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = '';
    while (!text.includes('\n\n')) text += decoder.decode((await reader.read()).value);
    const revoked = await call(hub.url, 'DELETE', `/api/admin/tokens/${minted.body.info.id}`, {
      token: hub.adminToken,
    });
    expect(revoked.status).toBe(200);
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value);
    }
    const events = text
      .split('\n\n')
      .filter((block) => block.startsWith('data: '))
      .map((block) => JSON.parse(block.slice(6)));
    expect(events.at(-1)).toMatchObject({
      id: 'revoked',
      error: { code: -32000, data: { ctxbusCode: 'unauthorized' } },
    });
  });

  it('takes requiredCapabilities from a data part, and says when a message names none', async () => {
    const client = await clientFor(hub.tokens.claw);
    const task = asTask(
      await client.sendMessage(
        send(message([textPart('look it up'), dataPart({ requiredCapabilities: ['search'] })])),
      ),
    );
    const rest = await call(hub.url, 'GET', `/api/tasks/${task.id}`, { token: hub.tokens.claw });
    expect(rest.body.task.requiredCapabilities).toEqual(['search']);
    expect(rest.body.task.input).toBeNull();

    const refused = client.sendMessage(send(message([textPart('do something')])));
    await expect(refused).rejects.toBeInstanceOf(RequestMalformedError);
    await expect(refused).rejects.toThrow(/requiredCapabilities/);
  });

  it('streams a task from SUBMITTED to COMPLETED while a worker claims and completes it', async () => {
    const client = await clientFor(hub.tokens.claw);
    const stream = client.sendMessageStream(send(codeMessage('stream me')));
    const first = await stream.next();
    if (first.done || first.value.payload?.$case !== 'task') throw new Error('no task first');
    const id = first.value.payload.value.id;
    expect(first.value.payload.value.status?.state).toBe(TaskState.TASK_STATE_SUBMITTED);

    const claimed = await claimThis(id, 'a2a-worker');
    const done = await call(hub.url, 'POST', `/api/tasks/${id}/complete`, {
      token: hub.tokens.code,
      body: { token: claimed.lease.token, result: { exitCode: 0, stdout: 'all green' } },
    });
    expect(done.status).toBe(200);

    const rest: StreamResponse[] = [];
    for await (const event of stream) rest.push(event);
    expect(states([first.value, ...rest])).toEqual([
      TaskState.TASK_STATE_SUBMITTED,
      TaskState.TASK_STATE_WORKING,
      TaskState.TASK_STATE_COMPLETED,
    ]);
    const artifact = rest.find((event) => event.payload?.$case === 'artifactUpdate');
    expect(
      artifact?.payload?.$case === 'artifactUpdate' && artifact.payload.value.artifact,
    ).toMatchObject({
      parts: [{ content: { $case: 'data', value: { exitCode: 0, stdout: 'all green' } } }],
    });
    const got = await client.getTask({ tenant: '', id, historyLength: undefined });
    expect(got.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(got.artifacts[0]?.parts[0]?.content).toEqual({
      $case: 'data',
      value: { exitCode: 0, stdout: 'all green' },
    });
  });

  it('a blocking SendMessage (the default) answers once a worker has completed the task', async () => {
    const client = await clientFor(hub.tokens.claw);
    const answer = client.sendMessage(send(codeMessage('block until done'), true));
    let id = '';
    await waitUntil(async () => {
      const listed = await call(hub.url, 'GET', '/api/tasks?state=SUBMITTED&limit=200', {
        token: hub.tokens.claw,
      });
      id = listed.body.tasks.find((task: any) => task.title === 'block until done')?.id ?? '';
      return id !== '';
    }, 'the blocking message to become a task');
    const claimed = await claimThis(id, 'blocking-worker');
    await call(hub.url, 'POST', `/api/tasks/${id}/complete`, {
      token: hub.tokens.code,
      body: { token: claimed.lease.token, result: { exitCode: 0 } },
    });
    const task = asTask(await answer);
    expect(task.id).toBe(id);
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(task.artifacts[0]?.parts[0]?.content).toEqual({ $case: 'data', value: { exitCode: 0 } });
  });

  it('SubscribeToTask follows a task until it is canceled', async () => {
    const client = await clientFor(hub.tokens.claw);
    const task = asTask(await client.sendMessage(send(codeMessage('follow me'))));
    const stream = client.resubscribeTask({ tenant: '', id: task.id });
    const first = await stream.next();
    expect(first.done).toBe(false);
    await claimThis(task.id, 'a2a-follower');
    const canceled = await call(hub.url, 'POST', `/api/tasks/${task.id}/cancel`, {
      token: hub.tokens.claw,
      body: { note: 'never mind' },
    });
    expect(canceled.status).toBe(200);
    const rest: StreamResponse[] = [];
    for await (const event of stream) rest.push(event);
    expect(states([first.value as StreamResponse, ...rest])).toEqual([
      TaskState.TASK_STATE_SUBMITTED,
      TaskState.TASK_STATE_WORKING,
      TaskState.TASK_STATE_CANCELED,
    ]);
  });

  it('answers A2A errors: an unknown task, another team, no token, an unknown method', async () => {
    const client = await clientFor(hub.tokens.claw);
    await expect(
      client.getTask({
        tenant: '',
        id: 'task_00000000-0000-4000-8000-000000000000',
        historyLength: undefined,
      }),
    ).rejects.toBeInstanceOf(TaskNotFoundError);
    await expect(
      client.getTask({ tenant: '', id: 'not-a-task-id', historyLength: undefined }),
    ).rejects.toBeInstanceOf(TaskNotFoundError);

    const mine = asTask(await client.sendMessage(send(codeMessage('acme only'))));
    const other = await clientFor(hub.tokens.globex);
    await expect(
      other.getTask({ tenant: '', id: mine.id, historyLength: undefined }),
    ).rejects.toBeInstanceOf(TaskNotFoundError);

    const anonymous = await clientFor(null);
    await expect(anonymous.sendMessage(send(codeMessage('who am I')))).rejects.toThrow(/401/);

    const unknown = await fetch(`${hub.url}/a2a`, {
      method: 'POST',
      headers: { authorization: `Bearer ${hub.tokens.claw}`, 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'message/send', params: {} }),
    });
    expect(await unknown.json()).toMatchObject({ jsonrpc: '2.0', id: 7, error: { code: -32601 } });
    const garbled = await fetch(`${hub.url}/a2a`, {
      method: 'POST',
      headers: { authorization: `Bearer ${hub.tokens.claw}`, 'content-type': 'application/json' },
      body: '{"jsonrpc":',
    });
    expect(await garbled.json()).toMatchObject({ id: null, error: { code: -32700 } });
  });

  it('ListTasks through the SDK: newest first, paged, with the total, never another team’s', async () => {
    const client = await clientFor(hub.tokens.claw);
    const made = [];
    for (const title of ['list one', 'list two']) {
      made.push(asTask(await client.sendMessage(send(codeMessage(title)))).id);
    }
    const request = {
      tenant: '',
      contextId: '',
      status: TaskState.TASK_STATE_UNSPECIFIED,
      pageSize: 1,
      pageToken: '',
      historyLength: undefined,
      statusTimestampAfter: undefined,
      includeArtifacts: false,
    };
    const first = await client.listTasks(request);
    expect(first.tasks.map((task) => task.id)).toEqual([made[1]]);
    expect(first.nextPageToken).toBe(made[1]);
    expect(first.totalSize).toBeGreaterThanOrEqual(2);
    const next = await client.listTasks({ ...request, pageToken: first.nextPageToken });
    expect(next.tasks.map((task) => task.id)).toEqual([made[0]]);
    const other = await clientFor(hub.tokens.globex);
    const theirs = await other.listTasks({ ...request, pageSize: 100 });
    expect(theirs.tasks.map((task) => task.id)).not.toContain(made[0]);
  });

  it('refuses a file part it would drop, as the SDK names it, and creates no task', async () => {
    const client = await clientFor(hub.tokens.claw);
    const file: Part = {
      content: { $case: 'raw', value: Buffer.from('AAAA') },
      metadata: undefined,
      filename: 'a.mp4',
      mediaType: 'video/mp4',
    };
    const msg = message([textPart('analyze this'), file], {
      [ROUTING]: { requiredCapabilities: ['code_execution'] },
    });
    await expect(client.sendMessage(send(msg))).rejects.toBeInstanceOf(
      ContentTypeNotSupportedError,
    );
    const listed = await call(hub.url, 'GET', '/api/tasks?limit=200', { token: hub.tokens.claw });
    expect(
      (listed.body.tasks as { title: string }[]).filter((task) => task.title === 'analyze this'),
    ).toEqual([]);
  });

  it('acts on a streaming notification (no id) and answers 204 with no body, not a stream', async () => {
    const notify = (method: string, params: unknown) =>
      fetch(`${hub.url}/a2a`, {
        method: 'POST',
        headers: { authorization: `Bearer ${hub.tokens.claw}`, 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', method, params }),
      });
    const title = `notified ${Date.now()}`;
    const streamed = await notify('SendStreamingMessage', {
      message: {
        messageId: `notify-${Date.now()}`,
        role: 'ROLE_USER',
        parts: [{ text: title }],
        metadata: { [ROUTING]: { requiredCapabilities: ['code_execution'] } },
      },
    });
    expect([streamed.status, await streamed.text()]).toEqual([204, '']);
    const listed = await call(hub.url, 'GET', '/api/tasks?limit=200', { token: hub.tokens.claw });
    const made = (listed.body.tasks as { id: string; title: string }[]).filter(
      (task) => task.title === title,
    );
    expect(made).toHaveLength(1); // it acted
    const subscribed = await notify('SubscribeToTask', { id: made[0]?.id });
    expect([subscribed.status, await subscribed.text()]).toEqual([204, '']);
  });

  it("runs the docs' A2A example as written", async () => {
    const doc = readFileSync(join(import.meta.dirname, '../../../docs/channels.md'), 'utf8');
    const section = doc.slice(doc.indexOf('\n## A2A\n'));
    const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
    if (!block) throw new Error('docs/channels.md has no sh block under "## A2A"');
    const { stdout } = await promisify(execFile)('bash', ['-euc', block], {
      env: { ...process.env, CTXBUS_URL: hub.url, CTXBUS_TOKEN: hub.tokens.claw },
    });
    const [card, sent] = stdout.split(/(?<=})(?=\{)/).map((text) => JSON.parse(text));
    expect(card).toMatchObject({
      name: 'ctxbus hub',
      supportedInterfaces: [{ url: `${hub.url}/a2a`, protocolBinding: 'JSONRPC' }],
      capabilities: { streaming: true },
    });
    expect(sent).toMatchObject({
      jsonrpc: '2.0',
      id: 1,
      result: {
        task: {
          status: { state: 'TASK_STATE_SUBMITTED' },
          metadata: {
            [ROUTING]: { kind: 'queue', runtime: 'claude-code' },
            ctxbus: { origin: 'openclaw' },
          },
        },
      },
    });
  });
});

describe('blocking SendMessage waits and the stream limits', () => {
  const limitedDir = tempDir('ctxbus-a2a-limited-');
  writeFileSync(
    join(limitedDir, 'capabilities.yaml'),
    readFileSync(join(dataDir, 'capabilities.yaml')),
  );
  const limited = useInProcessHub({
    dataDir: limitedDir,
    args: ['--max-streams-per-token', '2'],
    tokens: { claw: ['acme', 'openclaw'] },
  });

  it("count as the token's live streams: past its limit a wait is refused at once, naming it", async () => {
    const client = await clientFor(limited.tokens.claw, limited.url);
    // Two waits for tasks no worker takes hold the token's two places (25 s each at most).
    const waits = [1, 2].map((n) =>
      client.sendMessage(send(codeMessage(`waiting ${n}`), true)).catch((error: unknown) => error),
    );
    await waitUntil(
      async () =>
        (await call(limited.url, 'GET', '/api/admin/streams', { token: limited.adminToken ?? '' }))
          .body.open === 2,
      'the two waits to hold their places',
    );
    const third = await client.sendMessage(send(codeMessage('one wait too many'), true)).then(
      () => null,
      (error: unknown) => error as Error,
    );
    expect(third?.message).toMatch(/this token already holds 2 live streams/);
    // As HTTP: 429 with when to try again, as GET /api/stream answers; the JSON-RPC error says
    // why, as no malformed request (-32600).
    const raw = await rawSend(limited.url, limited.tokens.claw, 7, 'SendMessage', 'one more');
    expect(raw.status, await raw.clone().text()).toBe(429);
    expect(raw.headers.get('retry-after')).toBe('1');
    expect(await raw.json()).toMatchObject({
      id: 7,
      error: { code: -32000, data: { ctxbusCode: 'limit_reached' } },
    });
    void Promise.all(waits);
  });
});

describe('A2A cards behind --public-url', () => {
  const behind = useInProcessHub({ args: ['--public-url', 'https://hub.example.com/ctxbus/'] });

  it('name the public URL whatever Host the request came with', async () => {
    for (const host of ['evil.example', `127.0.0.1:${new URL(behind.url).port}`]) {
      const card = await getWithHost('/.well-known/agent-card.json', host, behind.url);
      expect(card.status).toBe(200);
      expect(card.body).toMatchObject({
        supportedInterfaces: [{ url: 'https://hub.example.com/ctxbus/a2a' }],
      });
    }
  });

  it("let the MCP endpoint answer requests sent to the public URL's host, and no other", async () => {
    // Without a token: past the Host check, the endpoint asks for one (401); before it, 403.
    const publicHost = await getWithHost('/mcp', 'hub.example.com', behind.url);
    expect(publicHost.status).toBe(401);
    const loopback = await getWithHost('/mcp', `localhost:${new URL(behind.url).port}`, behind.url);
    expect(loopback.status).toBe(401);
    const other = await getWithHost('/mcp', 'evil.example', behind.url);
    expect(other.status).toBe(403);
    expect(other.body).toMatchObject({ error: { message: 'Invalid Host header: evil.example' } });
  });

  it('refuse a public URL that is not http(s)', async () => {
    const result = await runCli(
      ['serve', '--port', '0', '--data', tempDir(), '--public-url', 'ftp://x'],
      {},
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--public-url must be an http(s) URL');
  });
});

await withPostgres('A2A on PostgreSQL', (url, schemas) => {
  describe('A2A across two hubs on one PostgreSQL schema', () => {
    const { a, b } = useHubPair(url, schemas, 'a2a', useInProcessHub);

    it('streams from one hub what a worker does through the other', async () => {
      const client = await clientFor(a.tokens.claw, b.url);
      const stream = client.sendMessageStream(send(codeMessage('across hubs')));
      const first = await stream.next();
      if (first.done || first.value.payload?.$case !== 'task') throw new Error('no task first');
      const id = first.value.payload.value.id;
      const claimed = await claimThis(id, 'pg-worker', a.url, a.tokens.code);
      const done = await call(a.url, 'POST', `/api/tasks/${id}/complete`, {
        token: a.tokens.code,
        body: { token: claimed.lease.token, result: { exitCode: 0 } },
      });
      expect(done.status).toBe(200);
      const rest: StreamResponse[] = [];
      for await (const event of stream) rest.push(event);
      expect(states([first.value, ...rest])).toEqual([
        TaskState.TASK_STATE_SUBMITTED,
        TaskState.TASK_STATE_WORKING,
        TaskState.TASK_STATE_COMPLETED,
      ]);
      const listed = await call(a.url, 'GET', '/api/tasks?state=COMPLETED', {
        token: a.tokens.claw,
      });
      expect(listed.body.tasks.map((task: { id: string }) => task.id)).toContain(id);
    });
  });

  describe('the stream limit on PostgreSQL', () => {
    const schema = schemas.next('a2alimit');
    // The repository's matrix: a code task queues for claude-code (no worker here), so each
    // admitted stream stays open; with none, a task is rejected and its stream ends at once,
    // freeing its place for a later caller.
    const limited = useInProcessHub({
      store: storeUrl(url, schema),
      args: ['--max-streams-per-token', '2', '--capabilities', join(dataDir, 'capabilities.yaml')],
      tokens: { claw: ['acme', 'openclaw'] },
    });

    it('lets exactly the limit of concurrent streams in, however many ask at once', async () => {
      const controller = new AbortController();
      const asks = Array.from({ length: 10 }, (_, index) =>
        rawSend(
          limited.url,
          limited.tokens.claw,
          index,
          'SendStreamingMessage',
          `stream ${index}`,
          controller.signal,
        ),
      );
      const answers = await Promise.all(asks);
      // Each admitted stream is open: its task waits in the queue.
      for (const answer of answers.filter((response) => response.status === 200)) {
        const reader = (answer.body as ReadableStream<Uint8Array>).getReader();
        const first = new TextDecoder().decode((await reader.read()).value);
        expect(first).toContain('TASK_STATE_SUBMITTED');
      }
      const statuses = answers.map((response) => response.status);
      expect(statuses.filter((status) => status === 200)).toHaveLength(2);
      expect(statuses.filter((status) => status === 429)).toHaveLength(8);
      controller.abort();
    });
  });
});
