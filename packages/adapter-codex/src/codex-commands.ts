import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { CtxbusError } from '@ctxbus/core/contract';

// Codex's own tools, as the installer drives them: `codex mcp add|get|remove` for the MCP
// server, and `codex app-server` (JSON-RPC over stdio: `hooks/list`, `config/read`,
// `config/batchWrite`, the calls Codex's own /hooks review makes) for hook trust.

export interface CodexCommandResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `codex <args>`; the runner names the binary and Codex's home. */
export interface CodexRunner {
  /** The binary run, for messages. */
  readonly command: string;
  run(args: readonly string[]): Promise<CodexCommandResult>;
  /** Starts `codex app-server` and answers JSON-RPC calls over its stdio. */
  appServer(): Promise<CodexAppServer>;
}

export interface CodexAppServer {
  call<Result>(method: string, params: unknown): Promise<Result>;
  close(): void;
}

const COMMAND_TIMEOUT_MS = 60_000;

/** Codex's home for the runner: `codexHome`, else $CODEX_HOME, else Codex's default. */
function codexEnv(codexHome: string | undefined): NodeJS.ProcessEnv {
  return codexHome ? { ...process.env, CODEX_HOME: codexHome } : process.env;
}

function spawnFailure(command: string, error: Error): CtxbusError {
  return (error as NodeJS.ErrnoException).code === 'ENOENT'
    ? new CtxbusError(
        'not_found',
        `${command} not found: install the Codex CLI (npm install -g @openai/codex) or pass --codex <path>`,
      )
    : new CtxbusError('validation_failed', `${command} failed to start: ${error.message}`);
}

/** A runner for the `codex` binary (default: `codex` on PATH), with `codexHome` as its home. */
export function codexRunner(command = 'codex', codexHome?: string): CodexRunner {
  const env = codexEnv(codexHome);
  return {
    command,
    run: (args) =>
      new Promise((resolve, reject) => {
        const child = spawn(command, [...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (chunk: Buffer) => {
          stdout += chunk.toString();
        });
        child.stderr.on('data', (chunk: Buffer) => {
          stderr += chunk.toString();
        });
        const timer = setTimeout(() => child.kill('SIGKILL'), COMMAND_TIMEOUT_MS);
        child.once('error', (error) => {
          clearTimeout(timer);
          reject(spawnFailure(command, error));
        });
        child.once('close', (code) => {
          clearTimeout(timer);
          resolve({ code, stdout, stderr });
        });
      }),
    appServer: () => startAppServer(command, env),
  };
}

interface RpcReply {
  id?: number;
  result?: unknown;
  error?: { message?: string };
}

async function startAppServer(command: string, env: NodeJS.ProcessEnv): Promise<CodexAppServer> {
  const child = spawn(command, ['app-server'], { env, stdio: ['pipe', 'pipe', 'ignore'] });
  const pending = new Map<number, (reply: RpcReply) => void>();
  let failure: Error | null = null;
  const failAll = (error: Error) => {
    failure = error;
    for (const settle of pending.values()) settle({ error: { message: error.message } });
    pending.clear();
  };
  child.once('error', (error) => failAll(spawnFailure(command, error)));
  child.once('close', () => failAll(new Error('codex app-server exited')));
  createInterface({ input: child.stdout }).on('line', (line) => {
    let reply: RpcReply;
    try {
      reply = JSON.parse(line) as RpcReply;
    } catch {
      return;
    }
    if (typeof reply.id !== 'number') return;
    pending.get(reply.id)?.(reply);
    pending.delete(reply.id);
  });
  let nextId = 0;
  const call = <Result>(method: string, params: unknown): Promise<Result> => {
    if (failure) return Promise.reject(failure);
    const id = ++nextId;
    return new Promise<Result>((resolve, reject) => {
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new CtxbusError('internal', `codex app-server did not answer ${method}`));
      }, COMMAND_TIMEOUT_MS);
      pending.set(id, (reply) => {
        clearTimeout(timer);
        if (reply.error) {
          reject(
            new CtxbusError(
              'internal',
              `codex app-server ${method}: ${reply.error.message ?? 'failed'}`,
            ),
          );
        } else resolve(reply.result as Result);
      });
      child.stdin.write(`${JSON.stringify({ id, method, params })}\n`);
    });
  };
  await call('initialize', {
    clientInfo: { name: 'ctxbus', title: 'ctxbus install codex', version: '1' },
    capabilities: null,
  });
  child.stdin.write(`${JSON.stringify({ method: 'initialized' })}\n`);
  return {
    call,
    close: () => {
      child.stdin.end();
      child.kill();
    },
  };
}

/** Codex's stderr as one line: its warnings and Rust's stack backtrace left out. */
function codexReason(stderr: string): string {
  const cut = stderr.indexOf('Stack backtrace:');
  return (cut === -1 ? stderr : stderr.slice(0, cut))
    .split('\n')
    .filter((line) => line.trim() && !line.startsWith('WARNING:'))
    .map((line) => line.trim())
    .join(' ')
    .trim();
}

function codexFailed(runner: CodexRunner, args: readonly string[], result: CodexCommandResult) {
  return new CtxbusError(
    'internal',
    `${runner.command} ${args.slice(0, 2).join(' ')} failed (exit ${result.code}): ${codexReason(result.stderr) || 'no message'}`,
  );
}

/** Runs `codex <args>`, failing with Codex's own message when it exits non-zero. */
export async function runOrFail(runner: CodexRunner, args: readonly string[]): Promise<string> {
  const result = await runner.run(args);
  if (result.code !== 0) throw codexFailed(runner, args, result);
  return result.stdout;
}

/**
 * Codex runs and reads its configuration (`codex mcp list` loads it, as every command the
 * installer runs does). A config.toml Codex cannot parse is the person's to fix: the error
 * names the file, line and column as Codex does, before anything is minted or written.
 */
export async function checkCodex(runner: CodexRunner): Promise<void> {
  const args = ['mcp', 'list'];
  const result = await runner.run(args);
  if (result.code === 0) return;
  const cause = /Caused by:\s*0:\s*(.+)/.exec(result.stderr)?.[1]?.trim();
  if (cause && /configuration/i.test(result.stderr)) {
    throw new CtxbusError(
      'validation_failed',
      `Codex cannot read its configuration: ${cause}; fix it, then run this again`,
      { details: { reason: 'codex_config' } },
    );
  }
  throw codexFailed(runner, args, result);
}
