import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { ErrorCode, Task } from '@ctxbus/core/contract';
import {
  bearer,
  CtxbusError,
  ERROR_CODES,
  hubUnreachable,
  TASK_STATES,
} from '@ctxbus/core/contract';
import type { WorkerHubApi } from './task-worker.js';

// The worker's hub port on node:http with one keep-alive agent. Profiled under load (300 tasks
// through `ctxbus worker`), the full client's fetch + ky + zod path was a quarter of the
// worker's CPU per task. Here a call is one request on a kept-alive socket, its answer checked
// for the fields the worker reads (the hub validated the task when it wrote it). The worker
// learns of new tasks by long-polling its claim (`waitMs`), not from a stream.

export interface WorkerHubSettings {
  url: string;
  token: string;
  /** Per call (default 10 s): an unanswered call is `unavailable`, which the worker retries. */
  timeoutMs?: number;
}

/** The port, and a way to let go of its kept-alive sockets once the worker has stopped. */
export interface WorkerHub extends WorkerHubApi {
  close(): void;
}

type Method = 'GET' | 'POST' | 'DELETE';

/** A hub call the hub refused, as the CtxbusError the worker decides on (conflict, ...). */
function errorFromBody(status: number, text: string): CtxbusError {
  let error: { code?: unknown; message?: unknown } | undefined;
  try {
    error = (JSON.parse(text) as { error?: typeof error }).error;
  } catch {
    error = undefined;
  }
  const code: ErrorCode =
    typeof error?.code === 'string' && Object.hasOwn(ERROR_CODES, error.code)
      ? (error.code as ErrorCode)
      : status >= 500
        ? 'unavailable'
        : 'internal';
  const message = typeof error?.message === 'string' ? error.message : `the hub answered ${status}`;
  return new CtxbusError(code, message, {
    details: { status },
    retryable: status >= 500 || status === 429,
  });
}

/** The fields of a task the worker reads; anything else is the hub's word, not checked here. */
function checkedTask(value: unknown): Task {
  const task = value as Partial<Task> | null;
  const lease = task?.lease;
  if (
    typeof task?.id !== 'string' ||
    typeof task.title !== 'string' ||
    typeof task.origin !== 'string' ||
    !(TASK_STATES as readonly unknown[]).includes(task.state) ||
    (lease !== null && (typeof lease !== 'object' || lease === undefined))
  ) {
    throw new CtxbusError('internal', 'the hub answered with something that is not a task');
  }
  return task as Task;
}

function taskOf(body: unknown): Task {
  return checkedTask((body as { task?: unknown } | null)?.task);
}

export function createWorkerHub(settings: WorkerHubSettings): WorkerHub {
  const base = new URL(settings.url.replace(/\/*$/, '/'));
  const https = base.protocol === 'https:';
  const send = https ? httpsRequest : httpRequest;
  const agent = https ? new HttpsAgent({ keepAlive: true }) : new HttpAgent({ keepAlive: true });
  const timeoutMs = settings.timeoutMs ?? 10_000;
  const authorization = bearer(settings.token);
  const unreachable = (error: Error) => hubUnreachable(base.origin, error);

  const call = (
    method: Method,
    path: string,
    body?: unknown,
    wait?: { ms: number; signal?: AbortSignal },
  ): Promise<unknown> =>
    new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      // A long poll answers after up to `wait.ms`: only silence past that is an unanswered call.
      const limitMs = timeoutMs + (wait?.ms ?? 0);
      const req = send(
        new URL(path, base),
        {
          method,
          agent,
          timeout: limitMs,
          ...(wait?.signal && { signal: wait.signal }),
          headers: {
            authorization,
            accept: 'application/json',
            ...(payload !== undefined && {
              'content-type': 'application/json',
              'content-length': Buffer.byteLength(payload),
            }),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('error', (error) => reject(unreachable(error)));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            const status = res.statusCode ?? 0;
            if (status < 200 || status >= 300) return reject(errorFromBody(status, text));
            try {
              resolve(text === '' ? null : JSON.parse(text));
            } catch {
              reject(new CtxbusError('internal', `the hub answered ${status} with no JSON`));
            }
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error(`no answer in ${limitMs} ms`)));
      req.on('error', (error) => reject(unreachable(error)));
      req.end(payload);
    });
  const taskPath = (id: string, what: string) => `api/tasks/${encodeURIComponent(id)}/${what}`;

  return {
    announce: (body) => call('POST', 'api/presence', body),
    async leave(instanceId) {
      await call('DELETE', `api/presence/${encodeURIComponent(instanceId)}`);
    },
    async claimTask(body, signal) {
      const wait = { ms: body.waitMs ?? 0, ...(signal && { signal }) };
      const answer = (await call('POST', 'api/tasks/claim', body, wait)) as {
        task?: unknown;
      } | null;
      return answer?.task === null ? null : checkedTask(answer?.task);
    },
    renewTask: async (id, body) => taskOf(await call('POST', taskPath(id, 'renew'), body)),
    startTask: async (id, body) => taskOf(await call('POST', taskPath(id, 'start'), body)),
    completeTask: async (id, body) => taskOf(await call('POST', taskPath(id, 'complete'), body)),
    async completeAndClaim(id, body) {
      const answer = (await call('POST', taskPath(id, 'complete'), body)) as {
        next?: unknown;
      } | null;
      const next = answer?.next ?? null;
      return { task: taskOf(answer), next: next === null ? null : checkedTask(next) };
    },
    failTask: async (id, body) => taskOf(await call('POST', taskPath(id, 'fail'), body)),
    requestApproval: async (id, body) =>
      taskOf(await call('POST', taskPath(id, 'approval-request'), body)),
    taskProgress: (id, body) => call('POST', taskPath(id, 'progress'), body),
    async approvalKey() {
      const answer = (await call('GET', 'api/approvals/key')) as { publicKey?: unknown } | null;
      if (typeof answer?.publicKey !== 'string')
        throw new CtxbusError('internal', 'the hub answered with no approval key');
      return answer.publicKey;
    },
    close: () => agent.destroy(),
  };
}
