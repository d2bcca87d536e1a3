import { existsSync } from 'node:fs';
import { readLiveRecord, removeLiveRecord, writeLiveRecord } from './live-files.js';

// Starting and ending a session's live push, from the hooks: SessionStart spawns one detached
// process per session (when the install turned live push on and Claude Code gave the hook an
// inbox socket), SessionEnd removes its record. One process per session, not a daemon: it
// inherits the inbox's socket and token from the hook's environment, and its life is the
// session's (it ends when the record, the socket or the Claude Code process is gone).

/**
 * How every live push message starts. Claude Code runs UserPromptSubmit for a message its
 * inbox queued, with the message as the prompt: the hook knows it by this and adds nothing.
 */
export const LIVE_PUSH_HEADER = '[ctxbus live push]';

export function isLivePush(prompt: string): boolean {
  return prompt.startsWith(LIVE_PUSH_HEADER);
}

/** The environment switch `ctxbus install claude-code --live` writes into the settings. */
export const LIVE_ENV = 'CTXBUS_LIVE';

export function liveEnabled(env: NodeJS.ProcessEnv): boolean {
  return /^(1|true|yes|on)$/i.test(env[LIVE_ENV] ?? '');
}

/** How often the live process checks that its session still runs. */
export const LIVE_CHECK_MS = 1_000;

export interface LiveStartOptions {
  env: NodeJS.ProcessEnv;
  stateDir: string;
  sessionId: string;
  /** The newest sequence the session's SessionStart saw (0: unknown). */
  since: number;
  /** The live process's script (the plugin's ctxbus-claude-live.js). */
  script: string;
  /** The Node that runs it (default: this one). */
  nodePath?: string;
}

/** Whether process `pid` exists (signal 0 checks without sending anything). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Why there is no live push for this session start, or null to start one. */
function notStarting(options: LiveStartOptions): string | null {
  if (!liveEnabled(options.env)) return 'off';
  const socket = options.env.CLAUDE_CODE_MESSAGING_SOCKET;
  if (!socket || !existsSync(socket)) return 'no inbox socket';
  if (!options.env.CTXBUS_URL || !options.env.CTXBUS_TOKEN) return 'no hub';
  const record = readLiveRecord(options.stateDir, options.sessionId);
  // A resume, /compact or /clear in the same process starts the session again: one is enough.
  if (record?.socket === socket && record.pid !== null && processAlive(record.pid)) {
    return 'running';
  }
  return null;
}

/**
 * Starts the session's live push unless it is off, has no inbox, or runs already. Returns what
 * happened ('started', or why not); never throws (the hook fails open).
 */
export function startLivePush(options: LiveStartOptions): string {
  try {
    const why = notStarting(options);
    if (why) return why;
    const { env, stateDir, sessionId } = options;
    const socket = env.CLAUDE_CODE_MESSAGING_SOCKET as string;
    const claudePid = Number(env.CLAUDE_PID);
    const record = {
      // node:crypto only when a live process starts: loading it costs every hook run ~5 ms.
      nonce: process.getBuiltinModule('node:crypto').randomUUID(),
      socket,
      claudePid: Number.isInteger(claudePid) && claudePid > 0 ? claudePid : null,
      pid: null,
      startedAt: new Date().toISOString(),
    };
    writeLiveRecord(stateDir, sessionId, record);
    // node:child_process only here: loaded by every hook run, it costs each ~3 ms of CPU.
    const { spawn } = process.getBuiltinModule('node:child_process');
    const child = spawn(options.nodePath ?? process.execPath, [options.script], {
      detached: true,
      stdio: 'ignore',
      env: {
        ...env,
        CTXBUS_STATE_DIR: stateDir,
        CTXBUS_LIVE_SESSION: sessionId,
        CTXBUS_LIVE_NONCE: record.nonce,
        CTXBUS_LIVE_SINCE: String(options.since),
      },
    });
    child.unref();
    if (child.pid) writeLiveRecord(stateDir, sessionId, { ...record, pid: child.pid });
    return 'started';
  } catch {
    return 'failed';
  }
}

/** SessionEnd: the session's live push ends (its process sees the record gone). */
export function stopLivePush(stateDir: string, sessionId: string): void {
  try {
    removeLiveRecord(stateDir, sessionId);
  } catch {
    // nothing to end
  }
}

/** What the live process checks each second: why it should end, or null to go on. */
export function livePushEnded(options: {
  stateDir: string;
  sessionId: string;
  nonce: string;
  socket: string;
}): string | null {
  const record = readLiveRecord(options.stateDir, options.sessionId);
  if (!record) return 'the session ended';
  if (record.nonce !== options.nonce) return 'another live push serves the session';
  if (record.claudePid !== null && !processAlive(record.claudePid)) return 'Claude Code exited';
  if (!existsSync(options.socket)) return 'the inbox socket is gone';
  return null;
}
