import { join } from 'node:path';
import type { SessionState } from '@ctxbus/client/session';
import { readSessionState as readKernelState } from '@ctxbus/client/session';

/** A session's state file (the kernel's `SessionState`, one file per Claude Code session). */
export function sessionStateFile(stateDir: string, sessionId: string): string {
  return join(stateDir, 'sessions', `${sessionId.replace(/[^A-Za-z0-9._-]/g, '_')}.json`);
}

/** A session's state; a missing or damaged file starts fresh rather than failing the hook. */
export function readSessionState(stateDir: string, sessionId: string): SessionState {
  return readKernelState(sessionStateFile(stateDir, sessionId));
}
