import { appendFileSync, closeSync, existsSync, fsyncSync, mkdirSync, openSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import type {
  ContextBuildFailure,
  TokenCounter,
  TurnBuildResult,
  TurnContextInput,
} from '@ctxbus/core/light';
import { tryBuildTurnContext, turnContextRecord } from '@ctxbus/core/light';
import { pruneFiles } from './prune-files.js';

// Seed 002's local files (`@ctxbus/client/turn-log`): each built turn appends its snapshot and
// the input that rebuilds it to `<data>/agents/<agentId>/context/<sessionId>.jsonl`; a failed
// build appends its `context_build_error` to `<data>/agents/<agentId>/audit/<sessionId>.jsonl`.
// No zod here (hooks load it per process); `ctxbus replay` reads the files back with the schemas.

/** The per-user data directory: $CTXBUS_DATA, else the platform's usual place. */
export function defaultDataDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.CTXBUS_DATA) return resolve(env.CTXBUS_DATA);
  if (process.platform === 'darwin')
    return join(homedir(), 'Library', 'Application Support', 'ctxbus');
  if (process.platform === 'win32') {
    return join(env.LOCALAPPDATA ?? join(homedir(), 'AppData', 'Local'), 'ctxbus');
  }
  return join(env.XDG_DATA_HOME || join(homedir(), '.local', 'share'), 'ctxbus');
}

/** A session or agent id as one safe file name (runtimes' ids may hold `:` or `/`). */
export function safeFileName(id: string): string {
  const name = id.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\.+/, '_');
  return name.slice(0, 200) || '_';
}

export interface TurnLogPaths {
  context: string;
  audit: string;
}

export function turnLogPaths(dataDir: string, agentId: string, sessionId: string): TurnLogPaths {
  const agent = join(dataDir, 'agents', safeFileName(agentId));
  const file = `${safeFileName(sessionId)}.jsonl`;
  return { context: join(agent, 'context', file), audit: join(agent, 'audit', file) };
}

/** Session files kept per agent and kind (context, audit) unless told otherwise: the newest. */
export const DEFAULT_KEEP_SESSIONS = 200;

/**
 * Keeps the `keep` most recently written session files of a directory and removes the rest, so
 * the turn log stays bounded however many sessions an agent runs. Returns what it removed.
 */
export function pruneSessionFiles(dir: string, keep: number): string[] {
  return pruneFiles(dir, { extension: '.jsonl', keep });
}

/**
 * Appends one JSON line in a single write, then syncs it: a crash leaves at most a torn last
 * line. A session's first line prunes its directory to the newest `keep` sessions.
 */
function appendLine(path: string, value: unknown, keep = DEFAULT_KEEP_SESSIONS): void {
  mkdirSync(join(path, '..'), { recursive: true });
  if (!existsSync(path)) pruneSessionFiles(join(path, '..'), Math.max(keep - 1, 0));
  appendFileSync(path, `${JSON.stringify(value)}\n`, { mode: 0o600 });
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export function appendContextFailure(
  dataDir: string,
  failure: ContextBuildFailure,
  keepSessions = DEFAULT_KEEP_SESSIONS,
): void {
  appendLine(
    turnLogPaths(dataDir, failure.agentId, failure.sessionId).audit,
    failure,
    keepSessions,
  );
}

export interface RecordTurnOptions {
  input: TurnContextInput;
  counter: TokenCounter;
  now: () => number;
  /** The data directory; null writes nothing. */
  dataDir: string | null;
  /** Append the snapshot of a successful build (failures are always audited). */
  snapshots: boolean;
  /** Session files kept per agent (default 200): a new session removes the oldest beyond it. */
  keepSessions?: number;
}

export type RecordedTurn = TurnBuildResult & {
  /** Why the snapshot or audit line could not be written, when it could not. */
  writeError?: string;
};

/**
 * Builds the turn's context; appends its snapshot record when `snapshots` is on, and a failed
 * build's `context_build_error` to the session's audit log. Never throws: a file that cannot be
 * written is reported in `writeError`, with the build's outcome still returned.
 */
export function recordTurn(options: RecordTurnOptions): RecordedTurn {
  const timestampMs = options.now();
  const result = tryBuildTurnContext(options.input, options.counter, timestampMs);
  const { dataDir } = options;
  if (!dataDir) return result;
  try {
    const keep = options.keepSessions ?? DEFAULT_KEEP_SESSIONS;
    if (!result.ok) appendContextFailure(dataDir, result.failure, keep);
    else if (options.snapshots) {
      const { agentId, sessionId } = options.input;
      appendLine(
        turnLogPaths(dataDir, agentId, sessionId).context,
        turnContextRecord(options.input, result.context),
        keep,
      );
    }
    return result;
  } catch (error) {
    return { ...result, writeError: (error as Error).message };
  }
}
