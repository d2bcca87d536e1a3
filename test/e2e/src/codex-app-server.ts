import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

// The real `codex app-server` (JSON-RPC over stdio, the protocol Codex's IDE extension and
// desktop app speak), driven as a client would: threads and turns with an approval policy
// `codex exec` cannot have (it never asks), notifications kept in order, and the server's own
// requests (a command's approval: Codex asking its user) answered by the test.

export interface AppServerRequest {
  method: string;
  params: Record<string, unknown>;
}

export interface CodexAppServerClient {
  call<Result = Record<string, unknown>>(method: string, params: unknown): Promise<Result>;
  /** Every notification so far (method and params), in order. */
  readonly notifications: { method: string; params: Record<string, unknown> }[];
  /** Every request the server made of the client (approvals), in order. */
  readonly requests: AppServerRequest[];
  /** Resolves with the first notification (past or future) that `match` accepts. */
  next(match: (method: string, params: Record<string, unknown>) => boolean): Promise<unknown>;
  stderr(): string;
  /** Ends the server and resolves once its process has exited (its files are then still). */
  close(): Promise<void>;
}

interface Message {
  id?: number | string;
  method?: string;
  params?: Record<string, unknown>;
  result?: unknown;
  error?: { message?: string };
}

/**
 * Starts `codex app-server` with `env`; `answer` decides each request the server makes (its
 * result), e.g. `{ decision: 'decline' }` for a command's approval.
 */
export async function startCodexAppServer(
  codex: string,
  env: NodeJS.ProcessEnv,
  cwd: string,
  answer: (request: AppServerRequest) => unknown,
): Promise<CodexAppServerClient> {
  const child = spawn(codex, ['app-server'], { env, cwd, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const pending = new Map<number, (message: Message) => void>();
  const notifications: CodexAppServerClient['notifications'] = [];
  const requests: AppServerRequest[] = [];
  const watchers: {
    match: (m: string, p: Record<string, unknown>) => boolean;
    done: () => void;
  }[] = [];
  const send = (message: unknown) => child.stdin.write(`${JSON.stringify(message)}\n`);
  createInterface({ input: child.stdout }).on('line', (line) => {
    const message = JSON.parse(line) as Message;
    if (message.method !== undefined && message.id !== undefined) {
      const request = { method: message.method, params: message.params ?? {} };
      requests.push(request);
      send({ id: message.id, result: answer(request) });
    } else if (message.method !== undefined) {
      const params = message.params ?? {};
      notifications.push({ method: message.method, params });
      for (const watcher of [...watchers]) {
        if (watcher.match(message.method, params)) {
          watchers.splice(watchers.indexOf(watcher), 1);
          watcher.done();
        }
      }
    } else if (typeof message.id === 'number') {
      pending.get(message.id)?.(message);
      pending.delete(message.id);
    }
  });
  let nextId = 0;
  const call = <Result>(method: string, params: unknown) =>
    new Promise<Result>((resolve, reject) => {
      const id = ++nextId;
      pending.set(id, (message) =>
        message.error
          ? reject(new Error(`${method}: ${message.error.message ?? 'failed'}`))
          : resolve(message.result as Result),
      );
      send({ id, method, params });
    });
  await call('initialize', {
    clientInfo: { name: 'ctxbus-e2e', title: 'ctxbus e2e', version: '1' },
    capabilities: null,
  });
  send({ method: 'initialized' });
  return {
    call,
    notifications,
    requests,
    next: (match) =>
      new Promise<void>((resolve) => {
        if (notifications.some((note) => match(note.method, note.params))) resolve();
        else watchers.push({ match, done: resolve });
      }),
    stderr: () => stderr,
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.stdin.end();
        child.kill();
      }),
  };
}
