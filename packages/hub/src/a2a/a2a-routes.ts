import { createHash } from 'node:crypto';
import type {
  ContextItem,
  CreateTaskRequest,
  Task,
  TaskEvent,
  TaskState,
  Viewer,
} from '@ctxbus/core';
import {
  agentCardFor,
  CtxbusError,
  isTerminalTaskState,
  MAX_JSON_DEPTH,
  parseStrictJsonText,
  StrictJsonError,
  strictUtf8,
  TASK_STATES,
  TASK_TAG,
  taskIdSchema,
  tooDeep,
} from '@ctxbus/core';
import type { Context } from 'hono';
import { z } from 'zod';
import type { RuntimeCaller } from '../caller.js';
import { clientGone } from '../client-gone.js';
import type { HubServices } from '../hub-services.js';
import type { AnyRouteDefinition } from '../route-definition.js';
import { implement } from '../route-definition.js';
import { openEventSink } from '../routes/event-sink.js';
import { streamOwner } from '../routes/stream-route.js';
import { refusedReport } from '../routes/task-routes.js';
import { cardBaseUrl } from './a2a-base-url.js';
import type { JsonRpcId } from './a2a-json-rpc.js';
import {
  A2aRpcError,
  jsonRpcRequestSchema,
  MAX_ID_CHARS,
  parseParams,
  rpcError,
  rpcResult,
} from './a2a-json-rpc.js';
import type { ListTasksParams } from './a2a-task.js';
import {
  A2A_TASK_STATES,
  a2aArtifact,
  a2aStatus,
  endsA2aStream,
  listTasksParamsSchema,
  sendMessageParamsSchema,
  taskIdRequestSchema,
  taskRequestFromMessage,
  taskStateOf,
  toA2aTask,
} from './a2a-task.js';

// A2A 1.0 over the hub's own task store: Agent Cards derived from the capability matrix, and
// a JSON-RPC endpoint (SendMessage, SendStreamingMessage, GetTask, CancelTask,
// SubscribeToTask) whose tasks are ctxbus tasks, routed by the task lifecycle like POST /api/tasks
// and streamed from the change feed (each task change is a status item).
//
// Written by hand with zod rather than with @a2a-js/sdk's server: its DefaultRequestHandler
// runs an in-process AgentExecutor that drives each task through an event bus, while ctxbus
// tasks are moved by workers elsewhere (claims, leases) and their changes already arrive on
// the change feed; its transports are Express (or gRPC) handlers. Five methods over our store
// are less code than adapting both, and keep the hub free of the SDK.

export interface A2aRouteOptions {
  /** The hub's public base URL for its cards (null: the request's origin, loopback only). */
  publicUrl: string | null;
}

const A2A_VERSION = '1.0';

const NO_PUSH =
  'this hub does not send A2A push notifications; stream with SendStreamingMessage or SubscribeToTask (or use a ctxbus push subscription)';

const JSON_TYPE = /^application\/([\w.+-]*\+)?json\b/i;

/** JSON.rawJSON (Node 22+): a value JSON.stringify writes as the given text. */
const rawJson = (text: string): unknown =>
  (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON(text);

/**
 * The source text of a request's integer id past 2^53, which a JS number rounds, so that it is
 * echoed as sent; null for any other id (or a body too deep to walk again).
 */
function bigIdSource(json: unknown, text: string): string | null {
  const id = (json as { id?: unknown } | null)?.id;
  if (typeof id !== 'number' || Number.isSafeInteger(id)) return null;
  const sources = new WeakMap<object, string>();
  try {
    const again = JSON.parse(
      text,
      function (this: object, key: string, value: unknown, parsed?: { source?: string }) {
        if (key === 'id' && parsed?.source !== undefined) sources.set(this, parsed.source);
        return value;
      },
    ) as object;
    return sources.get(again) ?? null;
  } catch {
    return null;
  }
}

/** Reads the JSON-RPC request: a parse error or a bad envelope is a JSON-RPC error. */
async function readRpcRequest(context: Context) {
  const type = context.req.header('content-type') ?? '';
  if (!JSON_TYPE.test(type.trim())) {
    throw new CtxbusError(
      'unsupported_media_type',
      `send the JSON-RPC request as application/json (got "${type || 'no content type'}")`,
    );
  }
  let json: unknown;
  let text: string;
  try {
    text = strictUtf8(new Uint8Array(await context.req.arrayBuffer()));
    json = parseStrictJsonText(text);
  } catch (error) {
    if (!(error instanceof StrictJsonError)) throw error;
    throw new A2aRpcError('parseError', error.message);
  }
  const big = bigIdSource(json, text);
  const exact = (id: JsonRpcId): JsonRpcId =>
    big !== null && typeof id === 'number' ? (rawJson(big) as number) : id;
  const id = (json as { id?: unknown } | null)?.id;
  // An id the envelope refuses (over 200 characters, say) is not echoed back.
  const usableId =
    (typeof id === 'string' && id.length <= MAX_ID_CHARS) || typeof id === 'number'
      ? exact(id)
      : null;
  // Before any schema walks it: a value nested thousands deep is a clear refusal, never a
  // stack overflow (an internal error with a stack in the log).
  const deep = tooDeep(json);
  if (deep !== null) {
    throw Object.assign(
      new A2aRpcError(
        'invalidParams',
        `${deep.replace(/^\./, '')}: nested deeper than ${MAX_JSON_DEPTH} levels`,
      ),
      { id: usableId },
    );
  }
  const envelope = jsonRpcRequestSchema.safeParse(json);
  if (!envelope.success) {
    throw Object.assign(
      new A2aRpcError(
        'invalidRequest',
        'a JSON-RPC 2.0 request object is {"jsonrpc":"2.0","id":...,"method":...,"params":{...}} (no batches)',
      ),
      { id: usableId },
    );
  }
  const request = envelope.data;
  return request.id === undefined ? request : { ...request, id: exact(request.id) };
}

async function findTask(services: HubServices, viewer: Viewer, id: string): Promise<Task> {
  return (await findTaskWithHistory(services, viewer, id)).task;
}

/** The task with its history (what an interrupted task waits for is its last event's note). */
async function findTaskWithHistory(services: HubServices, viewer: Viewer, id: string) {
  const found = taskIdSchema.safeParse(id).success
    ? await services.store.getTask(viewer.teamId, id)
    : null;
  if (!found) throw new A2aRpcError('taskNotFound', `no task ${id} in your team`, { id });
  return found;
}

async function cancel(services: HubServices, viewer: Viewer, id: string): Promise<Task> {
  const before = await findTask(services, viewer, id);
  const refuse = (state: string) =>
    new A2aRpcError('taskNotCancelable', `task ${id} has already ended (${state})`, {
      id,
      state,
    });
  if (isTerminalTaskState(before.state)) throw refuse(before.state);
  let task: Task;
  try {
    task = await services.tasks
      .cancelAs(viewer, id, 'canceled over A2A')
      // A refusal (not a party to the task) is audited, as on POST /api/tasks/:id/cancel.
      .catch((error: unknown) => refusedReport(services, viewer, id, 'cancel', error));
  } catch (error) {
    if (CtxbusError.isInstance(error) && error.code === 'conflict') {
      throw refuse((await findTask(services, viewer, id)).state);
    }
    if (CtxbusError.isInstance(error) && error.code === 'forbidden') {
      throw new A2aRpcError('taskNotCancelable', error.message, {
        id,
        ctxbusCode: error.code,
        ...(error.details !== undefined && { details: error.details }),
      });
    }
    throw error;
  }
  return task;
}

/**
 * The task a message starts. Its messageId is the task's idempotency key: the same message sent
 * again finds its task, another message with an old messageId is InvalidParams.
 */
async function createFromMessage(
  { services, viewer }: RpcCall,
  create: CreateTaskRequest,
  messageId: string,
): Promise<Task> {
  try {
    return (await services.tasks.create(viewer, create)).task;
  } catch (error) {
    const details = CtxbusError.isInstance(error)
      ? (error.details as { reason?: string; taskId?: string } | undefined)
      : undefined;
    if (details?.reason !== 'idempotency_key_reused') throw error;
    throw new A2aRpcError(
      'invalidParams',
      `params.message.messageId ${JSON.stringify(messageId)} was sent before with another message (task ${details.taskId}): a new message needs a new messageId`,
      { messageId, taskId: details.taskId },
    );
  }
}

interface RpcCall {
  id: JsonRpcId;
  method: string;
  params: unknown;
  viewer: Viewer;
  caller: RuntimeCaller;
  services: HubServices;
  context: Context;
  /** The runtime whose card the call came through (its tasks prefer it). */
  preferRuntime?: string;
  /** No id: acted on, never answered (no wait, no stream). */
  notification: boolean;
}

/** Serves one JSON-RPC call: a JSON response, or an SSE stream for the streaming methods. */
async function serveCall(call: RpcCall): Promise<Response | unknown> {
  const { method, params, viewer, services } = call;
  switch (method) {
    case 'SendMessage':
    case 'SendStreamingMessage': {
      const request = parseParams(sendMessageParamsSchema, params, method);
      // A push config given inline would be dropped without a word: refused, as the push
      // methods are (the card says pushNotifications: false).
      const inline = request.configuration ?? {};
      if (inline.taskPushNotificationConfig ?? inline.pushNotificationConfig) {
        throw new A2aRpcError('pushNotificationNotSupported', NO_PUSH);
      }
      await rejectContinuation(call, request.message.taskId);
      const create = taskRequestFromMessage(request, call.preferRuntime);
      const start = () => createFromMessage(call, create, request.message.messageId);
      // A notification is acted on and never answered: nothing to wait for or stream.
      if (call.notification) return toA2aTask(await start());
      if (method === 'SendStreamingMessage') return streamTask(call, start);
      if (request.configuration?.returnImmediately === true)
        return { task: toA2aTask(await start()) };
      const settled = await awaitSettled(call, start);
      return { task: toA2aTask(settled.task, settled.history) };
    }
    case 'GetTask': {
      const { id } = parseParams(taskIdRequestSchema, params, method);
      const { task, history } = await findTaskWithHistory(services, viewer, id);
      return toA2aTask(task, history);
    }
    case 'CancelTask': {
      const { id } = parseParams(taskIdRequestSchema, params, method);
      return toA2aTask(await cancel(services, viewer, id));
    }
    case 'SubscribeToTask': {
      const { id } = parseParams(taskIdRequestSchema, params, method);
      const task = await findTask(services, viewer, id);
      // Any task that has not ended (A2A 3.1.6): one waiting for a person resumes without
      // its client, which follows it from here.
      if (isTerminalTaskState(task.state)) {
        throw new A2aRpcError(
          'unsupportedOperation',
          `task ${id} is ${task.state}: there are no updates to subscribe to`,
          { id, state: task.state },
        );
      }
      if (call.notification) return toA2aTask(task);
      return streamTask(call, () => findTask(services, viewer, id), id);
    }
    case 'CreateTaskPushNotificationConfig':
    case 'GetTaskPushNotificationConfig':
    case 'ListTaskPushNotificationConfigs':
    case 'DeleteTaskPushNotificationConfig':
      throw new A2aRpcError('pushNotificationNotSupported', NO_PUSH);
    case 'ListTasks':
      return listA2aTasks(call, parseParams(listTasksParamsSchema, params, method));
    case 'GetExtendedAgentCard':
      throw new A2aRpcError('unsupportedOperation', `${method} is not supported by this hub`);
    default:
      throw new A2aRpcError(
        'methodNotFound',
        `no method ${method} (A2A 1.0 names, e.g. SendMessage)`,
      );
  }
}

/** ListTasks' default page, as A2A says. */
const LIST_PAGE_SIZE = 50;

/**
 * ListTasks: the team's tasks, newest first, a page at a time (the page token is the last
 * task's id), with the total the filter takes. A context is one task here (its id), so
 * `contextId` lists that task alone; a status update's time is no filter the store keeps
 * (refused, not ignored). Artifacts only with `includeArtifacts`, as A2A's default says.
 */
async function listA2aTasks(call: RpcCall, params: ListTasksParams) {
  const { services, viewer } = call;
  if (params.statusTimestampAfter) {
    throw new A2aRpcError(
      'invalidParams',
      'ListTasks: statusTimestampAfter is not supported by this hub; filter by status, or page through',
    );
  }
  const state = taskStateOf(params.status);
  const filter = state === null ? {} : { states: [state] };
  const pageSize = params.pageSize ?? LIST_PAGE_SIZE;
  const view = (task: Task) => {
    const { artifacts, ...rest } = toA2aTask(task);
    return params.includeArtifacts && artifacts ? { ...rest, artifacts } : rest;
  };
  const known = async (id: string) =>
    taskIdSchema.safeParse(id).success ? await services.store.getTask(viewer.teamId, id) : null;
  if (params.contextId) {
    const found = await known(params.contextId);
    const tasks = found && (state === null || found.task.state === state) ? [found.task] : [];
    return { tasks: tasks.map(view), nextPageToken: '', pageSize, totalSize: tasks.length };
  }
  if (params.pageToken && !(await known(params.pageToken))) {
    throw new A2aRpcError('invalidParams', 'ListTasks: pageToken is not one this hub gave', {
      pageToken: params.pageToken,
    });
  }
  const [tasks, totalSize] = await Promise.all([
    services.store.listTasks(viewer.teamId, {
      ...filter,
      limit: pageSize,
      order: 'newest',
      ...(params.pageToken && { after: params.pageToken }),
    }),
    services.store.countTasks(viewer.teamId, filter),
  ]);
  const last = tasks.at(-1);
  const nextPageToken = tasks.length === pageSize && last ? last.id : '';
  return { tasks: tasks.map(view), nextPageToken, pageSize, totalSize };
}

/** A message to an existing task: not taken (each message creates one); an unknown one is not found. */
async function rejectContinuation(call: RpcCall, taskId: string | undefined): Promise<void> {
  if (taskId !== undefined && taskId !== '') {
    await findTask(call.services, call.viewer, taskId);
    throw new A2aRpcError(
      'unsupportedOperation',
      'a message to an existing task is not supported: each message creates a task',
      { taskId },
    );
  }
}

const encoder = new TextEncoder();

/**
 * How long a blocking SendMessage (A2A's default, `returnImmediately` false) waits for the task
 * to end or be interrupted; past it, the task is answered as it stands (a queued task may wait
 * for hours, longer than any HTTP request should).
 */
export const A2A_BLOCKING_WAIT_MS = 25_000;

/**
 * Creates the task and waits, on the change feed, until its status items say it ended or is
 * interrupted, or for A2A_BLOCKING_WAIT_MS, or until the caller goes away; then answers the
 * task as the store has it.
 */
async function awaitSettled(
  call: RpcCall,
  start: () => Promise<Task>,
): Promise<{ task: Task; history: TaskEvent[] }> {
  const { services, viewer, caller, context } = call;
  // A wait is a live subscription like a stream: it counts against the token's and the
  // team's stream limits (429 past them), so waits by the thousand cannot hold the feed.
  const owner = streamOwner(caller, context);
  // Admitted and subscribed with nothing awaited between, so concurrent calls cannot all pass
  // the count before any subscribes (as GET /api/stream does).
  const after = await services.store.latestSeq();
  services.feed.admit(viewer, owner);
  const subscriber = services.feed.subscribe(viewer, { tags: [TASK_TAG] }, after, owner);
  const timer = setTimeout(() => subscriber.close(), A2A_BLOCKING_WAIT_MS);
  // A caller that went away frees its place at once, not after the wait.
  const signal = context.req.raw.signal;
  const leave = () => subscriber.close();
  signal.addEventListener('abort', leave, { once: true });
  try {
    const task = await start();
    const scopeKey = `task:${task.id}`;
    let state: TaskState = task.state;
    while (!endsA2aStream(state)) {
      const changes = await subscriber.next();
      if (changes === null) {
        if (subscriber.endedBy?.reason === 'token_revoked') throw streamEnded(subscriber.endedBy);
        break;
      }
      for (const change of changes) state = changeTaskState(change, scopeKey) ?? state;
    }
    return (await services.store.getTask(viewer.teamId, task.id)) ?? { task, history: [] };
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', leave);
    subscriber.close();
  }
}

/** Why the hub ended a wait or a stream, as the error the caller is answered with. */
function streamEnded(end: { reason: 'slow_reader' | 'token_revoked'; message: string }) {
  return new CtxbusError(
    end.reason === 'token_revoked' ? 'unauthorized' : 'unavailable',
    end.message,
    {
      details: { reason: end.reason },
    },
  );
}

const statusItemSchema = z.object({ task: z.object({ state: z.enum(TASK_STATES) }) });

/**
 * The task state a change's item was written for, when the change adds that task's status
 * item (a status item superseded by the next one reports an older state).
 */
function changeTaskState(
  { kind, item }: { kind: string; item: ContextItem },
  scopeKey: string,
): TaskState | null {
  if (kind !== 'added' || item.scopeKey !== scopeKey) return null;
  const parsed = statusItemSchema.safeParse(item.runtimeOptions);
  return parsed.success ? parsed.data.task.state : null;
}

/**
 * An SSE stream of one task: the Task first, then a status update (and the result artifact)
 * for each change of its state, until a terminal or interrupted state. Changes come from the
 * change feed (the task's status items), subscribed to before the task is read or created so
 * that none falls between.
 */
async function streamTask(
  call: RpcCall,
  start: () => Promise<Task>,
  taskId?: string,
): Promise<Response> {
  const { services, viewer, caller, context, id } = call;
  const owner = streamOwner(caller, context);
  const after = await services.store.latestSeq();
  services.feed.admit(viewer, owner);
  const subscriber = services.feed.subscribe(
    viewer,
    // A known task: only its status items; a task about to be created: every task's.
    taskId === undefined ? { tags: [TASK_TAG] } : { tags: [TASK_TAG], scopeKey: `task:${taskId}` },
    after,
    owner,
  );
  let task: Task;
  try {
    task = await start();
  } catch (error) {
    subscriber.close();
    throw error;
  }
  const sink = openEventSink(context, () => subscriber.close());
  const send = (result: unknown) =>
    sink.write(encoder.encode(`data: ${JSON.stringify(rpcResult(id, result))}\n\n`));
  const scopeKey = `task:${task.id}`;
  void (async () => {
    const keepAlive = setInterval(
      () => sink.write(encoder.encode(': keep-alive\n\n')),
      services.keepAliveSeconds * 1000,
    );
    try {
      send({ task: toA2aTask(task) });
      let last: TaskState = task.state;
      // A task subscribed to while it waits for someone is followed until it ends, or waits
      // again after resuming; a stream of a new task ends at its first wait, as A2A says.
      let waitingAt: TaskState | null =
        taskId !== undefined && !isTerminalTaskState(last) && endsA2aStream(last) ? last : null;
      const ends = (state: TaskState) => endsA2aStream(state) && state !== waitingAt;
      while (!ends(last) && !sink.closed) {
        const changes = await subscriber.next();
        if (changes === null) {
          // Ended by the hub (the token revoked, a reader too slow): said, not a silent close.
          if (subscriber.endedBy) throw streamEnded(subscriber.endedBy);
          break;
        }
        for (const change of changes) {
          const state = changeTaskState(change, scopeKey);
          if (state === null || state === last) continue;
          last = state;
          if (!ends(state)) {
            waitingAt = null;
            // Each status item says the state it was written for: a quick WORKING then
            // COMPLETED arrive as two updates even when read in one batch.
            const status = { state: A2A_TASK_STATES[state], timestamp: change.item.createdAt };
            send({ statusUpdate: { taskId: task.id, contextId: task.id, status } });
            continue;
          }
          const found = await services.store.getTask(viewer.teamId, task.id);
          const now = found && found.task.state === state ? found.task : null;
          const artifact = now ? a2aArtifact(now) : null;
          if (artifact && state === 'COMPLETED') {
            send({
              artifactUpdate: { taskId: task.id, contextId: task.id, artifact, lastChunk: true },
            });
          }
          const status = now
            ? a2aStatus(now)
            : { state: A2A_TASK_STATES[state], timestamp: change.item.createdAt };
          send({ statusUpdate: { taskId: task.id, contextId: task.id, status } });
          break;
        }
      }
    } catch (error) {
      services.logger.warn({ err: error, taskId: task.id }, 'A2A task stream ended with an error');
      sink.write(encoder.encode(`data: ${JSON.stringify(rpcError(id, error))}\n\n`));
    } finally {
      clearInterval(keepAlive);
      subscriber.close();
      sink.end();
    }
  })();
  return sink.response;
}

async function handleRpc(
  input: { services: HubServices; viewer: Viewer; caller: RuntimeCaller; context: Context },
  preferRuntime?: string,
): Promise<Response> {
  const { services, context } = input;
  // An undeclared runtime's endpoint does not exist: 404, as its card does.
  if (
    preferRuntime !== undefined &&
    !Object.hasOwn(services.capabilities.matrix().runtimes, preferRuntime)
  ) {
    throw new CtxbusError('not_found', `no runtime ${preferRuntime} in the capability matrix`);
  }
  let id: JsonRpcId = null;
  // A request without an id is a notification: JSON-RPC 2.0 (4.1) has the server act on it and
  // never answer it (HTTP 204, no body; a stream it would have opened is closed at once).
  let notification = false;
  try {
    const version = context.req.header('a2a-version');
    const request = await readRpcRequest(context);
    id = request.id ?? null;
    notification = request.id === undefined;
    if (version !== undefined && version.trim() !== '' && !['1', '1.0'].includes(version.trim())) {
      throw new A2aRpcError(
        'versionNotSupported',
        `A2A-Version ${version} is not supported; this hub speaks ${A2A_VERSION}`,
      );
    }
    const result = await serveCall({
      ...input,
      id,
      method: request.method,
      params: request.params,
      notification,
      ...(preferRuntime !== undefined && { preferRuntime }),
    });
    if (notification) return context.body(null, 204);
    if (result instanceof Response) return result;
    return context.json(rpcResult(id, result));
  } catch (error) {
    if (CtxbusError.isInstance(error) && error.code === 'unsupported_media_type') throw error;
    if (clientGone(error)) {
      // The client hung up mid-body: its doing, one info line (as on /api), nothing to answer.
      services.logger.info(
        { path: context.req.path },
        'the client closed the connection mid-request',
      );
    } else if (!(error instanceof A2aRpcError) && !CtxbusError.isInstance(error)) {
      services.logger.error({ err: error }, 'A2A call failed');
    }
    if (notification) return context.body(null, 204);
    const envelopeId = (error as { id?: JsonRpcId }).id;
    // Over its live streams' limit (a blocking SendMessage or a stream): 429 and when to try
    // again, as GET /api/stream answers, with the JSON-RPC error as the body.
    if (CtxbusError.isInstance(error) && error.code === 'limit_reached') {
      context.header('retry-after', '1');
      return context.json(rpcError(envelopeId ?? id, error), 429);
    }
    return context.json(rpcError(envelopeId ?? id, error));
  }
}

const RPC_DESCRIPTION =
  'A2A 1.0 JSON-RPC (application/json; `A2A-Version: 1.0` if sent): `SendMessage` creates a ctxbus task from the message (title: the first text line; `requiredCapabilities`: from the message metadata under `urn:ctxbus:a2a:routing:v1`, or a data part; input: the data part) routed like POST /api/tasks, and answers `{task}` (once the task ends or is interrupted, at most 25 s, unless `configuration.returnImmediately`) with the A2A Task: state `TASK_STATE_*`, the routing decision in `metadata["urn:ctxbus:a2a:routing:v1"]`. `GetTask`, `ListTasks` (the tasks of the team newest first, `pageSize` 1-100, `nextPageToken`, `totalSize`; artifacts with `includeArtifacts`), `CancelTask`; `SendStreamingMessage` and `SubscribeToTask` answer an SSE stream of `{task}` then `{statusUpdate}` (and `{artifactUpdate}` with the result) until a terminal or interrupted state (`SubscribeToTask`: any task not ended; one waiting for someone is followed until it ends or waits again). A file part (`raw`, `url`) is refused with -32005; one data part per message. Errors are JSON-RPC errors with A2A codes (-32001 task not found, -32002 not cancelable, -32004 unsupported, -32005 content type not supported, -32602 invalid params, -32000 any other refusal, `data.ctxbusCode` naming it; past the token\'s live streams, HTTP 429 with Retry-After). The caller is a runtime token: it is the task\'s origin.';

/** How long a client may keep a card without asking again (capabilities.yaml may change). */
const CARD_MAX_AGE_SECONDS = 300;

/**
 * A card with the caching headers A2A asks for: Cache-Control and an ETag of its content, so a
 * client asking again with If-None-Match gets 304 and no body while the card is unchanged.
 */
function cardResponse(card: unknown, context: Context): Response {
  const body = JSON.stringify(card);
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
  const headers = {
    'cache-control': `public, max-age=${CARD_MAX_AGE_SECONDS}`,
    etag,
  };
  const asked = context.req.header('if-none-match');
  if (
    asked?.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag || tag.trim() === '*')
  ) {
    return new Response(null, { status: 304, headers });
  }
  return new Response(body, {
    status: 200,
    headers: { ...headers, 'content-type': 'application/json' },
  });
}

/** The A2A routes: the hub's card, each runtime's card, and the JSON-RPC endpoints. */
export function a2aRoutes(options: A2aRouteOptions): AnyRouteDefinition[] {
  return [
    implement('getAgentCard', {
      summary: "The hub's A2A Agent Card (no auth)",
      description:
        "Skills are the capabilities some declared runtime can do; the JSON-RPC interface is `/a2a`. URLs in it are the hub's `--public-url`, else the request's origin when that is a loopback name (any other name: 503).",
      tags: ['a2a'],
      statuses: {
        200: 'The card.',
        503: 'No public URL configured, and the request is not to a loopback name.',
      },
      handler({ services, context }) {
        const card = agentCardFor(services.capabilities.matrix(), {
          baseUrl: cardBaseUrl(context.req.url, options.publicUrl),
          version: services.version,
        });
        return cardResponse(card, context);
      },
    }),
    implement('getRuntimeAgentCard', {
      summary: "A declared runtime's A2A Agent Card (no auth)",
      description:
        "Discover it with the runtime's base URL, `<hub>/a2a/<runtime>/`. Its skills are what that runtime can do; its interface `/a2a/<runtime>` is the hub's endpoint, with tasks preferring that runtime.",
      tags: ['a2a'],
      statuses: {
        200: 'The card.',
        404: 'The runtime is not declared in the capability matrix (`not_found`).',
      },
      handler({ params, services, context }) {
        const matrix = services.capabilities.matrix();
        if (!Object.hasOwn(matrix.runtimes, params.runtime)) {
          throw new CtxbusError(
            'not_found',
            `no runtime ${params.runtime} in the capability matrix`,
            { details: { runtime: params.runtime } },
          );
        }
        const card = agentCardFor(matrix, {
          baseUrl: cardBaseUrl(context.req.url, options.publicUrl),
          version: services.version,
          runtime: params.runtime,
        });
        return cardResponse(card, context);
      },
    }),
    implement('a2aJsonRpc', {
      summary: 'A2A 1.0 JSON-RPC: send a message that creates a task, get, cancel, stream',
      description: RPC_DESCRIPTION,
      tags: ['a2a'],
      headers: [{ name: 'A2A-Version', description: 'The A2A version the client speaks (1.0).' }],
      statuses: {
        200: 'A JSON-RPC response (or, for the streaming methods, an SSE stream of them).',
      },
      handler: (input) => handleRpc(input),
    }),
    implement('a2aRuntimeJsonRpc', {
      summary: "A2A 1.0 JSON-RPC through a runtime's card: its tasks prefer that runtime",
      description: `${RPC_DESCRIPTION} Tasks sent here put the runtime first in \`preferences.prefer\`.`,
      tags: ['a2a'],
      statuses: { 200: 'A JSON-RPC response (or an SSE stream of them).' },
      handler: (input) => handleRpc(input, input.params.runtime),
    }),
  ];
}
