import type { HubTarget } from './hub-target.js';

// The hub calls of the PermissionRequest hook, on Node's own fetch (no zod, no client: the hook
// bundle stays light for the hooks that run on every prompt). Answers are checked for the fields
// the hook reads; anything else is a PermissionHubError, and the hook then leaves the decision
// to Codex's own prompt.

/** The part of a task the hook reads. */
export interface PermissionTask {
  id: string;
  state: string;
  approval: {
    status: 'pending' | 'approved' | 'denied' | 'expired';
    request: { argv?: unknown; cwd?: unknown; digest?: unknown };
    decidedBy: string | null;
    note: string | null;
    expiresAt: string;
  } | null;
}

/** What POST /api/approvals takes (core's permissionRequestBodySchema). */
export interface PermissionAsk {
  request: { argv: string[]; cwd: string; tool: string; reason?: string };
  idempotencyKey: string;
  waitSeconds: number;
}

/** What the hook needs from the hub. */
export interface PermissionHub {
  readonly url: string;
  ask(body: PermissionAsk): Promise<PermissionTask>;
  task(id: string): Promise<PermissionTask>;
  cancel(id: string, note: string): Promise<void>;
  /**
   * Calls `onEvent` with `ready` once the task's stream is live, then with `change` for each
   * change of the task (its status items); resolves when the stream ends, rejects when it fails.
   */
  follow(
    id: string,
    signal: AbortSignal,
    onEvent: (event: 'ready' | 'change') => void,
  ): Promise<void>;
}

export class PermissionHubError extends Error {
  constructor(
    message: string,
    readonly status: number | null,
  ) {
    super(message);
    this.name = 'PermissionHubError';
  }
}

const APPROVAL_STATUSES = new Set(['pending', 'approved', 'denied', 'expired']);

function isTask(value: unknown): value is PermissionTask {
  if (value === null || typeof value !== 'object') return false;
  const task = value as Record<string, unknown>;
  const approval = task.approval as Record<string, unknown> | null | undefined;
  return (
    typeof task.id === 'string' &&
    typeof task.state === 'string' &&
    (approval === null ||
      (typeof approval === 'object' &&
        APPROVAL_STATUSES.has(approval.status as string) &&
        typeof approval.request === 'object' &&
        approval.request !== null))
  );
}

function taskOf(body: unknown): PermissionTask {
  const task = (body as { task?: unknown } | null)?.task;
  if (!isTask(task)) throw new PermissionHubError('unexpected task response', 200);
  return task;
}

/** The events of an SSE body, by name (`event:` lines), as they arrive. */
async function readEvents(
  body: ReadableStream<Uint8Array>,
  onEvent: (name: string) => void,
): Promise<void> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true }).replace(/\r\n?/g, '\n');
    let end = buffer.indexOf('\n\n');
    while (end >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const name = /^event: ?(.*)$/m.exec(block)?.[1]?.trim();
      if (name) onEvent(name);
      end = buffer.indexOf('\n\n');
    }
  }
}

/** The hook's hub, for `target`; each call but `follow` gives up after `timeoutMs`. */
export function permissionHub(target: HubTarget, timeoutMs: number): PermissionHub {
  const base = target.url.replace(/\/+$/, '');
  const headers = { authorization: `Bearer ${target.token}`, accept: 'application/json' };
  const call = async (method: 'GET' | 'POST', path: string, body?: unknown) => {
    let response: Response;
    try {
      response = await fetch(`${base}${path}`, {
        method,
        headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
        ...(body !== undefined && { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      throw new PermissionHubError(`cannot reach ${base}: ${(error as Error).message}`, null);
    }
    const json = (await response.json().catch(() => undefined)) as
      | { error?: { message?: string } }
      | undefined;
    if (!response.ok || json === undefined) {
      throw new PermissionHubError(
        json?.error?.message ?? `the hub answered ${response.status}`,
        response.status,
      );
    }
    return json;
  };
  return {
    url: base,
    ask: async (body) => taskOf(await call('POST', '/api/approvals', body)),
    task: async (id) => taskOf(await call('GET', `/api/tasks/${encodeURIComponent(id)}`)),
    cancel: async (id, note) => {
      await call('POST', `/api/tasks/${encodeURIComponent(id)}/cancel`, { note });
    },
    async follow(id, signal, onEvent) {
      const query = `scopeKey=${encodeURIComponent(`task:${id}`)}&tags=task`;
      const response = await fetch(`${base}/api/stream?${query}`, {
        headers: { ...headers, accept: 'text/event-stream' },
        signal,
      });
      if (!response.ok || !response.body) {
        throw new PermissionHubError(`the hub answered ${response.status}`, response.status);
      }
      await readEvents(response.body, (name) => {
        if (name === 'ready') onEvent('ready');
        else if (name === 'context-added') onEvent('change');
      });
    },
  };
}
