// What hooks and light clients need, without zod or the tokenizer: they run once per hook
// call, so every module they load is paid at each start. Each name comes straight from its
// file, never through a folder's index. The contract entry re-exports it all.

export { inertInline, inertMarkdown } from './context/formatters.js';
export type {
  BuiltTurnContext,
  ContextBuildFailure,
  TokenCounter,
  TurnBuildResult,
  TurnContextInput,
  TurnContextRecord,
  TurnMemoryPointer,
  TurnSnapshot,
} from './context/turn-context.js';
export {
  buildTurnContext,
  DEFAULT_TURN_BUDGETS,
  estimateTokenCounter,
  tryBuildTurnContext,
  turnContextRecord,
  utf8EstimateTokenCounter,
} from './context/turn-context.js';
export { extractDecisions, stableId } from './items/decision-capture.js';
export { CONTEXT_TYPES, SCOPES, URGENCIES, VISIBILITIES } from './items/item-kinds.js';
export { backoffDelay, createBackoff } from './shared/backoff.js';
export { bearer } from './shared/bearer.js';
export { sha256Hex } from './shared/canonical-hash.js';
export { canonicalJson } from './shared/canonical-json.js';
export type { ErrorCode } from './shared/errors.js';
export { CtxbusError, ERROR_CODES } from './shared/errors.js';
export {
  DEFAULT_HUB_HOST,
  DEFAULT_HUB_PORT,
  DEFAULT_HUB_URL,
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_MAX_STREAM_PENDING_BYTES,
  DEFAULT_MAX_STREAMS_PER_TEAM,
  DEFAULT_MAX_STREAMS_PER_TOKEN,
  MAX_BATCH_ITEMS,
} from './shared/hub-limits.js';
export { hubUnreachable, serveCommand } from './shared/hub-unreachable.js';
export type { Logger } from './shared/logger.js';
export { silentLogger } from './shared/logger.js';
export { sliceText } from './shared/slice-text.js';
export { shownJson, visibleText } from './shared/visible-text.js';
export type { CommandIdentity } from './tasks/command-digest.js';
export { commandDigest } from './tasks/command-digest.js';
export {
  MAX_PERMISSION_WAIT_SECONDS,
  MIN_PERMISSION_WAIT_SECONDS,
  PERMISSION_REQUEST_BECAUSE,
} from './tasks/permission-limits.js';
export type { TaskState } from './tasks/task-states.js';
export { TASK_STATES } from './tasks/task-states.js';
