import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { sleepSync, writeFileAtomic } from './atomic-file.js';
import { pruneFiles } from './prune-files.js';

/** What the session kernel remembers per runtime session between turns (and processes). */
export interface SessionState {
  /** Sequence of the newest item this session has been shown. */
  lastSeenSeq: number;
  /** Turns ended so far (`afterTurn`); numbers the session's status updates. */
  turns: number;
  /** Turns started so far (`beforeTurn` with a prompt); numbers turn contexts without a turn id. */
  prompts: number;
  /** Whether the "hub unreachable" notice was given since the hub last answered. */
  warnedUnreachable: boolean;
  /** Sequence of the last model switch (seed 003 handoff) this session was told about. */
  handoffSwitchSeen: number;
  /** The first line of the last reply (the session's latest checkpoint), if any. */
  lastReply: string;
  /** How the last turn or the session ended, if it did. */
  lastOutcome: string;
  /** Files the session edited, newest last. */
  filesTouched: string[];
  /** The session whose chat and tool results these are (a state file may outlive a session). */
  chatSession: string;
  /** The session's own chat, oldest first: its prompts (inbound) and replies (outbound). */
  chat: ChatEntry[];
  /** The session's recent tool results, oldest first. */
  tools: ToolEntry[];
  /**
   * Items turn contexts took from the bus that the hub has not been told about yet (the
   * analytics' injections, `POST /api/analytics/injections`), oldest first.
   */
  injected: string[];
}

export interface ChatEntry {
  id: string;
  direction: 'inbound' | 'outbound';
  text: string;
}

export interface ToolEntry {
  id: string;
  tool: string;
  output: string;
  summary: string;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object';

function chatEntries(value: unknown): ChatEntry[] {
  if (!Array.isArray(value)) return [];
  return value.filter(
    (entry): entry is ChatEntry =>
      isObject(entry) &&
      typeof entry.id === 'string' &&
      (entry.direction === 'inbound' || entry.direction === 'outbound') &&
      typeof entry.text === 'string',
  );
}

function toolEntries(value: unknown): ToolEntry[] {
  if (!Array.isArray(value)) return [];
  return value.filter(
    (entry): entry is ToolEntry =>
      isObject(entry) &&
      typeof entry.id === 'string' &&
      typeof entry.tool === 'string' &&
      typeof entry.output === 'string' &&
      typeof entry.summary === 'string',
  );
}

const count = (value: unknown): number =>
  Number.isInteger(value) && (value as number) >= 0 ? (value as number) : 0;
const text = (value: unknown): string => (typeof value === 'string' ? value : '');

/** A session's state; a missing or damaged file starts fresh rather than failing the turn. */
export function readSessionState(file: string): SessionState {
  let raw: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(readFileSync(file, 'utf8'));
    if (parsed !== null && typeof parsed === 'object') raw = parsed as Record<string, unknown>;
  } catch {
    // fresh state
  }
  return {
    lastSeenSeq: count(raw.lastSeenSeq),
    turns: count(raw.turns),
    prompts: count(raw.prompts),
    warnedUnreachable: raw.warnedUnreachable === true,
    handoffSwitchSeen: count(raw.handoffSwitchSeen),
    lastReply: text(raw.lastReply),
    // Files written before the kernel named it lastStatus (Claude Code's hook).
    lastOutcome: text(raw.lastOutcome) || text(raw.lastStatus),
    filesTouched: Array.isArray(raw.filesTouched)
      ? raw.filesTouched.filter((file): file is string => typeof file === 'string')
      : [],
    chatSession: text(raw.chatSession),
    chat: chatEntries(raw.chat),
    tools: toolEntries(raw.tools),
    injected: Array.isArray(raw.injected)
      ? raw.injected.filter((id): id is string => typeof id === 'string')
      : [],
  };
}

/** How long a hook waits for another of its session to finish changing the state. */
const LOCK_WAIT_MS = 1_000;
/** A lock older than this is a killed hook's: taken over. */
const STALE_LOCK_MS = 5_000;

/** Takes `<file>.lock`, waiting for another holder: true when taken, false past the wait. */
function lock(path: string): boolean {
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (let wait = 1; ; wait = Math.min(wait * 2, 20)) {
    try {
      closeSync(openSync(path, 'wx', 0o600));
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') return false;
    }
    try {
      if (Date.now() - statSync(path).mtimeMs > STALE_LOCK_MS) rmSync(path, { force: true });
    } catch {
      // released meanwhile
    }
    if (Date.now() >= deadline) return false;
    sleepSync(wait);
  }
}

/**
 * Reads the session's state, changes it and writes it back under a lock beside the file, so
 * that hooks of one session running at once (Claude Code runs the PostToolUse hooks of
 * parallel tool calls together) do not overwrite each other's changes. Past LOCK_WAIT_MS it
 * changes the state unlocked rather than hold up the runtime.
 */
export function updateSessionState(file: string, change: (state: SessionState) => void): void {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const path = `${file}.lock`;
  const locked = lock(path);
  try {
    const state = readSessionState(file);
    change(state);
    writeSessionState(file, state);
  } finally {
    if (locked) rmSync(path, { force: true });
  }
}

/**
 * Session files a directory keeps: the most recently written, none unwritten for
 * SESSION_MAX_AGE_MS. A new session's first write removes the rest, so a directory stays
 * bounded however many sessions (a chat per user, a run per cron job) come and go.
 */
export const SESSIONS_KEPT = 200;
export const SESSION_MAX_AGE_MS = 30 * 24 * 60 * 60 * 1000;

/** Writes atomically (temp file + rename), so a killed process never leaves half a file. */
export function writeSessionState(file: string, state: SessionState): void {
  writeSessionFile(file, JSON.stringify(state));
}

/**
 * Writes one session's file atomically, owner-only; a new session's first write keeps its
 * directory bounded (SESSIONS_KEPT, SESSION_MAX_AGE_MS).
 */
export function writeSessionFile(file: string, text: string): void {
  const fresh = !existsSync(file);
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  writeFileAtomic(file, text, { mode: 0o600 });
  if (fresh) {
    pruneFiles(dirname(file), {
      extension: '.json',
      keep: SESSIONS_KEPT,
      maxAgeMs: SESSION_MAX_AGE_MS,
      spare: file,
    });
  }
}

/**
 * The newest model switch (its handoff sequence) announced per workspace, shared by every
 * session of a runtime on this machine (`<stateDir>/handoff-seen.json`): a switch is told once,
 * to whichever session looks first. For `ResumeSource.seen`.
 */
export function workspaceResumeSeen(
  stateDir: string,
  workspace: string,
): { read(): number; write(sequence: number): void } {
  const file = join(stateDir, 'handoff-seen.json');
  const readMap = (): Record<string, number> => {
    try {
      const parsed: unknown = JSON.parse(readFileSync(file, 'utf8'));
      return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)
        ? (parsed as Record<string, number>)
        : {};
    } catch {
      return {};
    }
  };
  return {
    read: () => {
      const seen = readMap()[workspace];
      return Number.isInteger(seen) && (seen as number) >= 0 ? (seen as number) : 0;
    },
    write: (sequence) => {
      mkdirSync(stateDir, { recursive: true, mode: 0o700 });
      writeFileAtomic(file, JSON.stringify({ ...readMap(), [workspace]: sequence }), {
        mode: 0o600,
      });
    },
  };
}
