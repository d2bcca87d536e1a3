// What hooks need from the handoff, without zod or YAML: they run once per prompt.
export type { HistoryEntry } from './handoff-history.js';
export { readHistory } from './handoff-history.js';
export type { HandoffPaths } from './handoff-paths.js';
export { handoffPaths } from './handoff-paths.js';
export type { Handoff } from './handoff-schema.js';
export { resumeNote } from './resume-note.js';
export type { PendingResume } from './resume-pending.js';
export { pendingResume } from './resume-pending.js';
