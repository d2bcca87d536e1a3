import { readFileSync } from 'node:fs';
import { canonicalJson } from '@ctxbus/core/light';
import { readHistory } from './handoff-history.js';
import { handoffPaths } from './handoff-paths.js';
import type { Handoff } from './handoff-schema.js';
import { resumeNote } from './resume-note.js';

// For the adapters' hooks, which run once per prompt and must not load zod: the resume note of
// a switch the agent has not been told about yet. The file is checked by its checksum (which
// only ctxbus writes, after validating the document) and its shape, by hand.

export type PendingResume =
  | { note: string; switchSequence: number }
  | { problem: string; switchSequence: number };

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

function readChecked(path: string): Handoff | string {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    return `${path} is unreadable: ${(error as Error).message}`;
  }
  if (
    !isObject(raw) ||
    raw.schema_version !== 2 ||
    !isObject(raw.model) ||
    !isObject(raw.task) ||
    !isObject(raw.context)
  ) {
    return `${path} is not a v2 handoff`;
  }
  const { checksum, ...rest } = raw;
  // node:crypto only here, when a handoff exists: loading it costs every hook run ~5 ms.
  const { createHash } = process.getBuiltinModule('node:crypto');
  const expected = `sha256:${createHash('sha256').update(canonicalJson(rest)).digest('hex')}`;
  if (checksum !== expected) return `${path} fails its checksum`;
  return raw as unknown as Handoff;
}

/**
 * The note for the newest switch in `workspace` whose sequence is above `seenSequence`, or
 * null when there is none (no handoff, no switch, or already told). A damaged handoff gives a
 * `problem` instead, with the sequence, so a caller reports it once and moves on.
 */
export function pendingResume(workspace: string, seenSequence: number): PendingResume | null {
  const paths = handoffPaths(workspace);
  const history = readHistory(paths);
  const switched =
    history.filter((entry) => entry.event.startsWith('switch')).at(-1)?.sequence ??
    switchWithoutHistory(paths.handoff, history);
  if (switched === null || switched <= seenSequence) return null;
  const handoff = readChecked(paths.handoff);
  if (typeof handoff === 'string') return { problem: handoff, switchSequence: switched };
  const note = resumeNote(handoff);
  return note ? { note, switchSequence: switched } : null;
}

/**
 * A switch ctxbus did not record (seed 003's own scripts switched, writing no ctxbus history):
 * as the seed's session start checks, a `model.previous` says one happened. Its sequence is the
 * first one ctxbus recorded after it, else the file's own, so the note is given once.
 */
function switchWithoutHistory(
  path: string,
  history: readonly { sequence: number }[],
): number | null {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    return null;
  }
  if (!isObject(raw) || !isObject(raw.model) || typeof raw.model.previous !== 'string') return null;
  const sequence = history[0]?.sequence ?? raw.sequence;
  return typeof sequence === 'number' && Number.isInteger(sequence) ? sequence : null;
}
