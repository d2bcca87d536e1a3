// The shared-context directory of seed 001, backed by ctxbus. Named exports only: the README
// documents each of them as the contract the OpenClaw plugin builds on.

export type { BootstrapResult } from './bootstrap.js';
export {
  AUTOMATED_HEADING,
  bootstrapSharedContext,
  CANONICAL_HEADING,
  PRIORITIES_INBOX_TEMPLATE,
  PRIORITIES_TEMPLATE,
  SHARED_CONTEXT_DIRS,
} from './bootstrap.js';
export type {
  BridgeState,
  SharedContextBridge,
  SharedContextBridgeOptions,
  SyncReport,
} from './bridge.js';
export {
  createSharedContextBridge,
  itemForFile,
  relPathOfItem,
  SHARED_CONTEXT_FILE_TAG,
  SHARED_CONTEXT_KEY_PREFIX,
} from './bridge.js';
export type {
  CrossSignal,
  CrossSignalOptions,
  CrossSignalsReport,
  SignalSource,
} from './cross-signals.js';
export { detectCrossSignals, ENHANCER_MAX_TERMS } from './cross-signals.js';
export type { CurateOptions, CurateResult } from './curator.js';
export { curateDaily, recentFeedback } from './curator.js';
export type { FeedbackEntry } from './feedback.js';
export { feedbackEntrySchema, parseFeedbackEntry, readFeedbackFile } from './feedback.js';
export { parseDocument, renderFrontMatter } from './front-matter.js';
export type { LlmCompleter, LlmOption, LlmSettings } from './llm.js';
export { chatCompletion, completeWith } from './llm.js';
export type { AgentOutput } from './outputs.js';
export { listAgentOutputs, normaliseTerm, readAgentOutput } from './outputs.js';
export type { SharedContextPathOptions, SharedContextPaths } from './paths.js';
export {
  AGENT_ID_PATTERN,
  assertAgentId,
  DEFAULT_SHARED_CONTEXT_SUBDIR,
  isoDate,
  isoWeek,
  sharedContextPaths,
} from './paths.js';
export type { PathRule, PolicyViolation, WriteMode, WriteRequest } from './policy.js';
export { assertWriteAllowed, ruleFor } from './policy.js';
export type { InboxEntry } from './priorities.js';
export { parseInbox, splitPriorities } from './priorities.js';
export type { InjectionOptions } from './read.js';
export { readSharedContextInjection } from './read.js';
export type { WeeklyOptions, WeeklyResult } from './weekly.js';
export { weeklyCompound } from './weekly.js';
export type {
  AgentOutputInput,
  AppendFeedbackOptions,
  PrioritiesInboxInput,
  StagedInput,
  WrittenFile,
} from './writers.js';
export {
  appendFeedback,
  appendPrioritiesInbox,
  slugify,
  stageForCurator,
  writeAgentOutput,
  writeKpiSnapshot,
} from './writers.js';
