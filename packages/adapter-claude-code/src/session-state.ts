import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '@ctxbus/client/files';
import type { SessionState } from '@ctxbus/client/session';
import { readSessionState as readKernelState } from '@ctxbus/client/session';

/** A session's state file (the kernel's `SessionState`, one file per Claude Code session). */
export function sessionStateFile(stateDir: string, sessionId: string): string {
  return join(stateDir, 'sessions', `${sessionId.replace(/[^A-Za-z0-9._-]/g, '_')}.json`);
}

const count = (value: unknown): number =>
  Number.isInteger(value) && (value as number) >= 0 ? (value as number) : 0;

/** A session's state; a missing or damaged file starts fresh rather than failing the hook. */
export function readSessionState(stateDir: string, sessionId: string): SessionState {
  return readKernelState(sessionStateFile(stateDir, sessionId));
}

/**
 * The newest model switch (its handoff sequence) announced per workspace, shared by every
 * session: a switch is told once, to whichever session looks first.
 */
function handoffSeenFile(stateDir: string): string {
  return join(stateDir, 'handoff-seen.json');
}

function readSeenMap(stateDir: string): Record<string, number> {
  try {
    const parsed: unknown = JSON.parse(readFileSync(handoffSeenFile(stateDir), 'utf8'));
    return parsed !== null && typeof parsed === 'object' ? (parsed as Record<string, number>) : {};
  } catch {
    return {};
  }
}

export function readHandoffSeen(stateDir: string, workspace: string): number {
  return count(readSeenMap(stateDir)[workspace]);
}

export function writeHandoffSeen(stateDir: string, workspace: string, sequence: number): void {
  const file = handoffSeenFile(stateDir);
  mkdirSync(stateDir, { recursive: true });
  writeFileAtomic(file, JSON.stringify({ ...readSeenMap(stateDir), [workspace]: sequence }), {
    mode: 0o600,
  });
}
