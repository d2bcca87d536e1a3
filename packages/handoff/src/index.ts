// Seed 003's model-switch handoff, on files in the agent's workspace (`.context-bus/`).
export type { HandoffConfig } from './handoff-config.js';
export {
  DEFAULT_HANDOFF_CONFIG,
  handoffConfigPath,
  handoffConfigSchema,
  loadHandoffConfig,
  nextModel,
  parseHandoffConfig,
} from './handoff-config.js';
export type { LockOptions, UpdateOptions } from './handoff-file.js';
export {
  checksumOf,
  isStale,
  readHandoff,
  updateHandoff,
  withLock,
  writeFileAtomic,
} from './handoff-file.js';
export type { HistoryEntry } from './handoff-history.js';
export { readHistory } from './handoff-history.js';
export type { MonitorAction, MonitorOptions } from './handoff-monitor.js';
export { currentSince, monitorOnce, switchSafety } from './handoff-monitor.js';
export type {
  Clock,
  HeartbeatInput,
  HeartbeatOptions,
  HeartbeatRequest,
  RollingSummary,
  SwitchInput,
  SwitchResult,
} from './handoff-ops.js';
export {
  adoptHandoff,
  heartbeat,
  INIT_AUTHOR,
  RECENT_ACTIONS,
  startHandoff,
  summaryDue,
  summaryOf,
  switchModel,
  systemClock,
  writeRollingSummary,
} from './handoff-ops.js';
export type { HandoffPaths } from './handoff-paths.js';
export { handoffPaths } from './handoff-paths.js';
export type { Handoff, HandoffContent } from './handoff-schema.js';
export { HANDOFF_SCHEMA_VERSION, handoffSchema } from './handoff-schema.js';
export { resumeNote } from './resume-note.js';
export type { PendingResume } from './resume-pending.js';
export { pendingResume } from './resume-pending.js';
export type {
  ClaudeStatusLine,
  CurrentUsage,
  OpenClawStatus,
  UsageReport,
  UsageSource,
} from './runtime-usage.js';
export {
  claudeStatusLineSchema,
  currentUsage,
  openClawStatusSchema,
  parseClaudeStatusLine,
  parseOpenClawStatus,
  readUsageReports,
  recordUsage,
  USAGE_SOURCES,
  usageAt,
  usageFromClaudeStatusLine,
  usageFromOpenClawStatus,
  usageReportSchema,
  usageSince,
} from './runtime-usage.js';
