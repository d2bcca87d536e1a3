import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '@ctxbus/client/files';

// What the live push remembers on disk, in one file under the plugin's state directory: the
// sessions that had a turn (the gateway reloads the plugin when its config changes, and a new
// plugin instance must still know where to push), what each was pushed (never twice, across
// reloads and restarts), and the newest sequence the push has handled (a reload resumes there).

/** A session the live push serves: the key OpenClaw's hooks gave, its agent, its last turn. */
export interface LiveSessionRecord {
  sessionKey: string;
  agentId: string;
  lastTurnAt: string;
}

export interface LiveState {
  sessions: LiveSessionRecord[];
  /** Pushed item ids per session key. */
  delivered: Record<string, string[]>;
  /** The newest sequence handled; a new plugin instance follows the stream from here. */
  cursor: number | null;
  /** When the cursor was saved: an old cursor is not resumed (see LIVE_RESUME_MS). */
  cursorAt: string | null;
}

/** Sessions kept: the most recent ones (a gateway serves a few at a time). */
export const LIVE_SESSIONS_KEPT = 16;
/** Pushed ids kept per session: far more than a session is pushed. */
export const LIVE_DELIVERED_KEPT = 500;
/** A session is pushed to while its last turn is this recent (a day). */
export const LIVE_SESSION_TTL_MS = 24 * 60 * 60 * 1000;
/**
 * A new plugin instance resumes the stream after the saved cursor when it is this recent (a
 * reload or a restart); after a longer pause it starts from now, so turning the push back on
 * does not replay days of items (those reach each session's next turn as team context).
 */
export const LIVE_RESUME_MS = 10 * 60 * 1000;

export const liveStateFile = (stateDir: string): string => join(stateDir, 'live-push.json');

const empty = (): LiveState => ({ sessions: [], delivered: {}, cursor: null, cursorAt: null });

function sessionRecord(value: unknown): LiveSessionRecord | null {
  const raw = value as Partial<LiveSessionRecord> | null;
  return raw &&
    typeof raw.sessionKey === 'string' &&
    typeof raw.agentId === 'string' &&
    typeof raw.lastTurnAt === 'string'
    ? { sessionKey: raw.sessionKey, agentId: raw.agentId, lastTurnAt: raw.lastTurnAt }
    : null;
}

/** The state on disk; an absent or unreadable file is an empty state (the push fails open). */
export function readLiveState(stateDir: string): LiveState {
  try {
    const raw = JSON.parse(readFileSync(liveStateFile(stateDir), 'utf8')) as Partial<LiveState>;
    const sessions = (Array.isArray(raw.sessions) ? raw.sessions : [])
      .map(sessionRecord)
      .filter((entry): entry is LiveSessionRecord => entry !== null);
    const delivered: Record<string, string[]> = {};
    for (const [key, ids] of Object.entries(raw.delivered ?? {})) {
      if (Array.isArray(ids)) delivered[key] = ids.filter((id) => typeof id === 'string');
    }
    const cursor = Number.isSafeInteger(raw.cursor) ? (raw.cursor as number) : null;
    const cursorAt = typeof raw.cursorAt === 'string' ? raw.cursorAt : null;
    return { sessions, delivered, cursor, cursorAt };
  } catch {
    return empty();
  }
}

export function writeLiveState(stateDir: string, state: LiveState): void {
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  writeFileAtomic(liveStateFile(stateDir), JSON.stringify(state), { mode: 0o600 });
}

/** The state with a session's turn recorded (most recent first, at most LIVE_SESSIONS_KEPT). */
export function withSessionTurn(
  state: LiveState,
  session: { sessionKey: string; agentId: string },
  at: Date,
): LiveState {
  const others = state.sessions.filter((entry) => entry.sessionKey !== session.sessionKey);
  const sessions = [{ ...session, lastTurnAt: at.toISOString() }, ...others].slice(
    0,
    LIVE_SESSIONS_KEPT,
  );
  return { ...state, sessions };
}

/** The sessions whose last turn is recent enough to push to. */
export function activeSessions(state: LiveState, now: Date): LiveSessionRecord[] {
  return state.sessions.filter(
    (entry) => now.getTime() - Date.parse(entry.lastTurnAt) <= LIVE_SESSION_TTL_MS,
  );
}

/** The state with an item pushed to a session. */
export function withDelivered(state: LiveState, sessionKey: string, itemId: string): LiveState {
  const ids = [...(state.delivered[sessionKey] ?? []), itemId].slice(-LIVE_DELIVERED_KEPT);
  return { ...state, delivered: { ...state.delivered, [sessionKey]: ids } };
}

/** Where a new plugin instance follows the stream from: a recent cursor, else now. */
export function resumeFrom(state: LiveState, now: Date): number | undefined {
  if (state.cursor === null || state.cursorAt === null) return undefined;
  return now.getTime() - Date.parse(state.cursorAt) <= LIVE_RESUME_MS ? state.cursor : undefined;
}

/** The state with the stream handled up to `seq`. */
export function withCursor(state: LiveState, seq: number, at: Date): LiveState {
  return { ...state, cursor: Math.max(state.cursor ?? 0, seq), cursorAt: at.toISOString() };
}
