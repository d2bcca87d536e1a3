// The wire contract without the tokenizer: schemas, errors, filters and validation. Clients
// that only talk to a hub import this entry and skip loading the o200k vocabulary (a test
// follows its chunks). Each name comes straight from its file: a folder's index would bring
// the folder's tokenizer-bound files into the bundle. The light entry's names are all here too.
export type { VerifyAuditResponse } from './audit/audit-api-schemas.js';
export { inertInline, inertMarkdown, markdownFormatter, plainLine } from './context/formatters.js';
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
export { turnContextRecordSchema } from './context/turn-context-schema.js';
export type { AnalyticsItem, AnalyticsResponse } from './items/analytics-api-schemas.js';
export type {
  CapabilitiesStatus,
  ChangeKind,
  ForgetKeyResponse,
  ListParams,
  ListQuery,
  ListResponse,
  SearchRequest,
  SearchResponse,
  SharedContextResponse,
  StreamEvent,
  TokenInfo,
  WriteResponse,
} from './items/api-schemas.js';
export {
  CHANGE_EVENT_NAMES,
  errorResponseSchema,
  healthSeq,
  isSequenceText,
  MAX_LIST_LIMIT,
  MAX_TOKEN_BUDGET,
  parseWriteRequest,
  streamDisconnectSchema,
  streamEventNames,
  streamEventSchema,
  streamQuerySchema,
} from './items/api-schemas.js';
export type { ConflictReport, ConflictView, ResolveConflictResponse } from './items/conflicts.js';
export {
  CONFLICT_TAG,
  CONFLICT_WRITER,
  conflictItemInput,
  conflictOf,
  conflictView,
  DEFAULT_CONFLICT_WINDOW_MS,
  isConflict,
  resolutionItemInput,
  sameValue,
} from './items/conflicts.js';
export type {
  ContextItem,
  ContextItemInput,
  ContextType,
  Scope,
  Urgency,
  Visibility,
} from './items/context-item.js';
export {
  contextItemInputSchema,
  contextItemSchema,
  contextTypeSchema,
  itemIdSchema,
  LIMITS,
  memoryKeySchema,
  runtimeNameSchema,
  scopeKeySchema,
  scopeSchema,
  tagSchema,
  teamIdSchema,
  URGENCY_RANK,
  urgencySchema,
  visibilitySchema,
} from './items/context-item.js';
export { extractDecisions, stableId } from './items/decision-capture.js';
export type { ItemRowColumns, StoredItemValues } from './items/item-columns.js';
export { itemFromColumns } from './items/item-columns.js';
export type { ItemFilter, ListOptions, Viewer } from './items/item-filter.js';
export { applyListOptions, itemMatches, scopeKindOf } from './items/item-filter.js';
export { CONTEXT_TYPES, SCOPES, URGENCIES, VISIBILITIES } from './items/item-kinds.js';
export { redactSecrets } from './items/redact-secrets.js';
export type {
  CreateSubscriptionRequest,
  DeadLetterInfo,
  DeliveryMode,
  PendingResponse,
  Subscription,
  SubscriptionEvent,
  SubscriptionFilter,
  WebhookPayload,
} from './items/subscription-schemas.js';
export { webhookPayloadSchema } from './items/subscription-schemas.js';
export type {
  BlackboardEntryKind,
  BlackboardEvent,
  BlackboardRef,
} from './layers/blackboard-contract.js';
export {
  BLACKBOARD_ENTRY_KINDS,
  BLACKBOARD_EVENT,
  BLACKBOARD_TAG,
  blackboardEntryKey,
  blackboardEntryNameSchema,
  blackboardEventOf,
  blackboardEventSchema,
  blackboardKeyPrefix,
  blackboardRefSchema,
  itemValue,
  parseBlackboardKey,
  REMOVED_TAG,
  RESOURCE_TAG,
  resourceKey,
  resourceNameSchema,
  TEXT_VALUE_TAG,
  valueContent,
} from './layers/blackboard-contract.js';
export type { ResourceType, ResourceView } from './layers/persistent-resource.js';
export {
  DEFAULT_RESOURCE_TYPE,
  RESOURCE_TYPES,
  resourceOf,
  resourceTypeSchema,
  resourceTypeTag,
  resourceViewSchema,
} from './layers/persistent-resource.js';
export type { JsonValue } from './layers/run-context.js';
export type { BoardListField, NotePriority, SwarmBlackboard } from './layers/swarm-blackboard.js';
export {
  BOARD_LIST_FIELD_NAMES,
  BOARD_LIST_FIELDS,
  boardListValueSchema,
  entryKindOf,
  listEntryName,
  notePrioritySchema,
  priorityTag,
  swarmBlackboardOf,
  swarmBlackboardSchema,
} from './layers/swarm-blackboard.js';
export type { CapabilitiesFile } from './routing/capabilities.js';
export {
  AGENT_RUNTIMES,
  agentApprovers,
  approversOf,
  CAPABILITY_MODES,
  capabilitiesFileSchema,
  capabilitiesJsonSchema,
  capabilityMode,
  capabilityNames,
  personRefusal,
} from './routing/capabilities.js';
export type {
  CapabilitiesResponse,
  CapabilitiesRuntime,
} from './routing/capabilities-api-schemas.js';
export { capabilitiesResponseSchema } from './routing/capabilities-api-schemas.js';
export type { PresenceInstance, PresenceKind, RuntimePresenceEntry } from './routing/presence.js';
export { defaultCapacity, summarizePresence } from './routing/presence.js';
export type {
  RouteRequest,
  RoutingDecision,
  RoutingKind,
  RuntimePresence,
} from './routing/routing.js';
export { routeRequestSchema, routeTask, routingDecisionSchema } from './routing/routing.js';
export { backoffDelay, createBackoff } from './shared/backoff.js';
export { bearer } from './shared/bearer.js';
export { hashValue, sha256Hex } from './shared/canonical-hash.js';
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
export { parseStrictJson, StrictJsonError } from './shared/strict-json.js';
export {
  MAX_JSON_DEPTH,
  parseOrThrow,
  shownIssues,
  tooDeep,
  validationError,
  wellFormed,
} from './shared/validation.js';
export { shownJson, visibleText } from './shared/visible-text.js';
export type { CommandIdentity } from './tasks/command-digest.js';
export { commandDigest } from './tasks/command-digest.js';
export type { PermissionRequestBody } from './tasks/permission-api-schemas.js';
export {
  MAX_PERMISSION_WAIT_SECONDS,
  MIN_PERMISSION_WAIT_SECONDS,
  PERMISSION_REQUEST_BECAUSE,
} from './tasks/permission-limits.js';
export type {
  ChannelRefusal,
  CreateTaskRequest,
  UpdateTaskRequest,
} from './tasks/task-api-schemas.js';
export {
  ACTIVE_TASK_STATES,
  createTaskRequestSchema,
  UPDATE_TASK_STATES,
  updateTaskRequestSchema,
} from './tasks/task-api-schemas.js';
export type { TaskState } from './tasks/task-states.js';
export { TASK_STATES } from './tasks/task-states.js';
export type { TaskStatusEvent, TaskStatusReport } from './tasks/task-status-item.js';
export {
  followTaskStatus,
  TASK_TAG,
  taskNeedsSomeone,
  taskOutputKey,
  taskOutputOf,
  taskScopeKey,
  taskStatusItem,
  taskStatusOf,
} from './tasks/task-status-item.js';
export type { NewTask, Task, TaskApproval, TaskError, TaskEvent } from './tasks/tasks.js';
export {
  assertTransition,
  capabilityNameSchema,
  DEFAULT_TASK_LEASE_MS,
  DEFAULT_TASK_MAX_ATTEMPTS,
  isTerminalTaskState,
  newTaskId,
  newTaskSchema,
  notLeaseHolderError,
  staleLeaseError,
  TASK_LIMITS,
  taskApprovalSchema,
  taskErrorSchema,
  taskIdSchema,
  taskNoteSchema,
  taskResultSchema,
  WAITING_TASK_STATES,
} from './tasks/tasks.js';
export { wireTarget } from './wire/wire-request.js';
export type { HttpMethod, RouteAuth, WireRoute } from './wire/wire-route.js';
export type { WireOperationId, WireRoutes } from './wire/wire-routes.js';
export { wireRoutes } from './wire/wire-routes.js';
export type { WireInput, WireOutput, WireQuery } from './wire/wire-types.js';
