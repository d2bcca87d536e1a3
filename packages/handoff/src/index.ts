// Seed 003's model-switch handoff, on files in the agent's workspace (`.context-bus/`).
export type { HandoffPaths, HistoryEntry, LockOptions, UpdateOptions } from './handoff-file.js';
export {
  checksumOf,
  handoffPaths,
  isStale,
  readHandoff,
  readHistory,
  updateHandoff,
  withLock,
  writeFileAtomic,
} from './handoff-file.js';
export type {
  HeartbeatInput,
  RollingSummary,
  SwitchInput,
  SwitchResult,
} from './handoff-ops.js';
export {
  heartbeat,
  RECENT_ACTIONS,
  resumeNote,
  switchModel,
  writeRollingSummary,
} from './handoff-ops.js';
export type { Handoff, HandoffContent } from './handoff-schema.js';
export { HANDOFF_SCHEMA_VERSION, handoffSchema } from './handoff-schema.js';
