import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '@ctxbus/client/files';

export interface SessionState {
  /** Sequence of the newest item this session has been shown. */
  lastSeenSeq: number;
  /** Files the session edited (from PostToolUse), newest last. */
  filesTouched: string[];
  /** Stop events so far; numbers the session's status updates. */
  turns: number;
  /** Whether the "hub unreachable" notice was already shown. */
  warnedUnreachable: boolean;
  /** UserPromptSubmit events so far; numbers the session's turn contexts. */
  prompts: number;
  /** The first line of the last reply (the session's latest checkpoint), if any. */
  lastReply: string;
  /** How the last turn or the session ended, if it did. */
  lastStatus: string;
}

function fileFor(stateDir: string, sessionId: string): string {
  return join(stateDir, 'sessions', `${sessionId.replace(/[^A-Za-z0-9._-]/g, '_')}.json`);
}

const count = (value: unknown): number =>
  Number.isInteger(value) && (value as number) >= 0 ? (value as number) : 0;

/** A session's state; a missing or damaged file starts fresh rather than failing the hook. */
export function readSessionState(stateDir: string, sessionId: string): SessionState {
  let raw: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(readFileSync(fileFor(stateDir, sessionId), 'utf8'));
    if (parsed !== null && typeof parsed === 'object') raw = parsed as Record<string, unknown>;
  } catch {
    // fresh state
  }
  return {
    lastSeenSeq: count(raw.lastSeenSeq),
    filesTouched: Array.isArray(raw.filesTouched)
      ? raw.filesTouched.filter((file) => typeof file === 'string')
      : [],
    turns: count(raw.turns),
    warnedUnreachable: raw.warnedUnreachable === true,
    prompts: count(raw.prompts),
    lastReply: typeof raw.lastReply === 'string' ? raw.lastReply : '',
    lastStatus: typeof raw.lastStatus === 'string' ? raw.lastStatus : '',
  };
}

/** Writes atomically (temp file + rename), so a killed hook never leaves half a file. */
export function writeSessionState(stateDir: string, sessionId: string, state: SessionState): void {
  const file = fileFor(stateDir, sessionId);
  mkdirSync(join(stateDir, 'sessions'), { recursive: true });
  writeFileAtomic(file, JSON.stringify(state), { mode: 0o600 });
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
