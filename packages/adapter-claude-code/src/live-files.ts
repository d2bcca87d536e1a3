import {
  appendFileSync,
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
} from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '@ctxbus/client/files';

// A session's live push on disk, beside the hooks' state (`<state>/live/`): the record that
// says which process serves the session (the SessionStart hook writes it, SessionEnd removes
// it, and the process ends once it no longer names it), what was delivered (so an item is
// pushed once, across restarts), and a one-line-per-event log. Read without zod: the hook
// that starts the push runs on every session start.

/** Which live push serves a session, and where its inbox is. */
export interface LiveRecord {
  /** Names the process that may serve the session; a new start writes a new one. */
  nonce: string;
  socket: string;
  /** The Claude Code process ($CLAUDE_PID): the push ends with it. */
  claudePid: number | null;
  /** The live push process (null until it is spawned). */
  pid: number | null;
  startedAt: string;
}

/** What the session received: sequences and ids, the newest last, bounded. */
export interface DeliveredLog {
  seqs: number[];
  ids: string[];
}

/** Delivered entries kept per session: far more than a session is pushed. */
export const DELIVERED_KEPT = 500;

function safe(sessionId: string): string {
  return sessionId.replace(/[^A-Za-z0-9._-]/g, '_');
}

export function liveDir(stateDir: string): string {
  return join(stateDir, 'live');
}

function file(stateDir: string, sessionId: string, suffix: string): string {
  return join(liveDir(stateDir), `${safe(sessionId)}${suffix}`);
}

function readJson(path: string): Record<string, unknown> | null {
  try {
    const parsed: unknown = JSON.parse(readFileSync(path, 'utf8'));
    return parsed !== null && typeof parsed === 'object'
      ? (parsed as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

const pidOrNull = (value: unknown): number | null =>
  Number.isInteger(value) && (value as number) > 0 ? (value as number) : null;

export function readLiveRecord(stateDir: string, sessionId: string): LiveRecord | null {
  const raw = readJson(file(stateDir, sessionId, '.json'));
  if (!raw || typeof raw.nonce !== 'string' || typeof raw.socket !== 'string') return null;
  return {
    nonce: raw.nonce,
    socket: raw.socket,
    claudePid: pidOrNull(raw.claudePid),
    pid: pidOrNull(raw.pid),
    startedAt: typeof raw.startedAt === 'string' ? raw.startedAt : '',
  };
}

export function writeLiveRecord(stateDir: string, sessionId: string, record: LiveRecord): void {
  mkdirSync(liveDir(stateDir), { recursive: true, mode: 0o700 });
  writeFileAtomic(file(stateDir, sessionId, '.json'), JSON.stringify(record), { mode: 0o600 });
}

/** Ends the session's live push: its process sees the record gone and exits. */
export function removeLiveRecord(stateDir: string, sessionId: string): void {
  rmSync(file(stateDir, sessionId, '.json'), { force: true });
}

const ints = (value: unknown): number[] =>
  Array.isArray(value) ? value.filter((entry): entry is number => Number.isInteger(entry)) : [];
const strings = (value: unknown): string[] =>
  Array.isArray(value) ? value.filter((entry): entry is string => typeof entry === 'string') : [];

export function readDelivered(stateDir: string, sessionId: string): DeliveredLog {
  const raw = readJson(file(stateDir, sessionId, '.delivered.json'));
  return { seqs: ints(raw?.seqs), ids: strings(raw?.ids) };
}

/** Records one delivery (durably: it is what keeps a restart from pushing the item again). */
export function rememberDelivered(
  stateDir: string,
  sessionId: string,
  delivered: DeliveredLog,
  item: { seq: number; id: string },
): DeliveredLog {
  const next = {
    seqs: [...delivered.seqs, item.seq].slice(-DELIVERED_KEPT),
    ids: [...delivered.ids, item.id].slice(-DELIVERED_KEPT),
  };
  mkdirSync(liveDir(stateDir), { recursive: true, mode: 0o700 });
  writeFileAtomic(file(stateDir, sessionId, '.delivered.json'), JSON.stringify(next), {
    mode: 0o600,
    durable: true,
  });
  return next;
}

/** One line of the session's live-push log (started, delivered, ended), fsynced. */
export function appendLiveLog(stateDir: string, sessionId: string, line: string): void {
  try {
    mkdirSync(liveDir(stateDir), { recursive: true, mode: 0o700 });
    const path = file(stateDir, sessionId, '.log');
    appendFileSync(path, `${new Date().toISOString()} ${line}\n`, { mode: 0o600 });
    const fd = openSync(path, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // a log that cannot be written costs nothing else
  }
}

/** The session's live-push log, for tests and `ctxbus doctor`-style reading. */
export function readLiveLog(stateDir: string, sessionId: string): string {
  try {
    return readFileSync(file(stateDir, sessionId, '.log'), 'utf8');
  } catch {
    return '';
  }
}
