// The wire contract without the tokenizer: schemas, errors, filters and validation. Clients
// that only talk to a hub import this entry and skip loading the o200k vocabulary.
export type {
  AnalyticsItem,
  AnalyticsQuery,
  AnalyticsResponse,
  UsageCounts,
  UsageKind,
} from './analytics-api-schemas.js';
export {
  ANALYTICS_MAX_WINDOW_DAYS,
  analyticsItemSchema,
  analyticsQuerySchema,
  analyticsResponseSchema,
  DEFAULT_STALE_DAYS,
  daysBetween,
  staleCutoff,
  staleRuleText,
  USAGE_KINDS,
  usageCountsSchema,
  usageDay,
  windowDays,
} from './analytics-api-schemas.js';
export type {
  ArchiveResponse,
  CapabilitiesStatus,
  ChangeEventName,
  ChangeKind,
  ForgetKeyResponse,
  ListParams,
  ListQuery,
  ListResponse,
  SearchRequest,
  SearchResponse,
  SharedContextResponse,
  StreamDisconnect,
  StreamEvent,
  TokenInfo,
  WriteResponse,
} from './api-schemas.js';
export {
  archivedItemSchema,
  archiveQuerySchema,
  archiveResponseSchema,
  CHANGE_EVENT_NAMES,
  capabilitiesStatusSchema,
  createTokenRequestSchema,
  createTokenResponseSchema,
  errorResponseSchema,
  forgetKeyQuerySchema,
  forgetKeyResponseSchema,
  healthResponseSchema,
  isSequenceText,
  itemIdParamsSchema,
  itemResponseSchema,
  listQuerySchema,
  listResponseSchema,
  listTokensQuerySchema,
  MAX_FILTER_VALUES,
  MAX_LIST_LIMIT,
  MAX_TOKEN_BUDGET,
  parseWriteRequest,
  resolveItemQuerySchema,
  resolveItemResponseSchema,
  searchRequestSchema,
  searchResponseSchema,
  searchResultSchema,
  sequenceTextSchema,
  sharedQuerySchema,
  sharedResponseSchema,
  streamDisconnectSchema,
  streamEventNames,
  streamEventSchema,
  streamQuerySchema,
  tokenIdParamsSchema,
  tokenInfoSchema,
  tokenRoleSchema,
  writeRequestSchema,
  writeResponseSchema,
  writeResultSchema,
} from './api-schemas.js';
export type { ListAuditResponse, VerifyAuditResponse } from './audit-api-schemas.js';
export {
  auditRecordSchema,
  listAuditQuerySchema,
  listAuditResponseSchema,
  MAX_AUDIT_PAGE,
  verifyAuditQuerySchema,
  verifyAuditResponseSchema,
} from './audit-api-schemas.js';
export type {
  BlackboardEntryKind,
  BlackboardEvent,
  BlackboardRef,
  BlackboardScope,
} from './blackboard-contract.js';
export {
  BLACKBOARD_ENTRY_KINDS,
  BLACKBOARD_EVENT,
  BLACKBOARD_SCOPES,
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
} from './blackboard-contract.js';
// Canonical JSON and its SHA-256 (no tokenizer): content hashes and file checksums.
export { hashValue, sha256Hex } from './canonical-hash.js';
export type { CapabilitiesFile, Capability, CapabilityMode } from './capabilities.js';
export {
  approversOf,
  CAPABILITY_MODES,
  capabilitiesFileSchema,
  capabilitiesJsonSchema,
  capabilityMode,
  capabilityNames,
  DEFAULT_APPROVERS,
  matrixNameSchema,
  personRefusal,
  TRUST_LEVELS,
  WELL_KNOWN_CAPABILITIES,
} from './capabilities.js';
export type { CapabilitiesResponse, CapabilitiesRuntime } from './capabilities-api-schemas.js';
export {
  capabilitiesQuerySchema,
  capabilitiesResponseSchema,
  capabilitiesRuntimeSchema,
  runtimePresenceViewSchema,
} from './capabilities-api-schemas.js';
export type {
  ConflictCandidate,
  ConflictReport,
  ConflictResolution,
  ConflictValue,
  ConflictView,
  ListConflictsResponse,
  ResolveConflictBody,
  ResolveConflictResponse,
} from './conflicts.js';
export {
  CONFLICT_TAG,
  CONFLICT_WRITER,
  conflictItemInput,
  conflictKey,
  conflictOf,
  conflictReportSchema,
  conflictView,
  conflictViewSchema,
  DEFAULT_CONFLICT_WINDOW_MS,
  isConflict,
  listConflictsQuerySchema,
  listConflictsResponseSchema,
  resolutionItemInput,
  resolveConflictBodySchema,
  resolveConflictResponseSchema,
  sameValue,
} from './conflicts.js';
export type {
  ContextItem,
  ContextItemInput,
  ContextType,
  Redaction,
  Scope,
  Urgency,
  Visibility,
} from './context-item.js';
export {
  CONTEXT_TYPES,
  contextItemInputSchema,
  contextItemSchema,
  contextTypeSchema,
  itemIdSchema,
  LIMITS,
  memoryKeySchema,
  runtimeNameSchema,
  SCOPES,
  scopeKeySchema,
  scopeSchema,
  sourceOf,
  tagSchema,
  teamIdSchema,
  URGENCIES,
  URGENCY_RANK,
  urgencyAtLeast,
  urgencySchema,
  VISIBILITIES,
  visibilitySchema,
} from './context-item.js';
export type { CtxbusErrorOptions, ErrorCode } from './errors.js';
export { CtxbusError, ERROR_CODES, errorStatus } from './errors.js';
// Pure text formatting (no tokenizer): clients render with the hub's formatters.
export { markdownFormatter, plainLine, plainTextFormatter } from './formatters.js';
export type { ItemRowColumns, StoredItemValues } from './item-columns.js';
export { itemFromColumns } from './item-columns.js';
export type { ItemFilter, ListOptions, ScopeKind, Viewer } from './item-filter.js';
export { applyListOptions, itemMatches, SCOPE_KINDS, scopeKindOf } from './item-filter.js';
// The light entry's own list is the reviewed one; the contract carries all of it.
export * from './light.js';
export type { PermissionRequestBody } from './permission-api-schemas.js';
export {
  permissionRequestBodySchema,
  permissionRequestResponseSchema,
} from './permission-api-schemas.js';
export type { ResourceType, ResourceView } from './persistent-resource.js';
export {
  DEFAULT_RESOURCE_TYPE,
  RESOURCE_TYPES,
  resourceNameOf,
  resourceOf,
  resourceTypeOf,
  resourceTypeSchema,
  resourceTypeTag,
  resourceViewSchema,
} from './persistent-resource.js';
export type {
  PresenceAnnounceRequest,
  PresenceInstance,
  PresenceKind,
  RuntimePresenceEntry,
} from './presence.js';
export {
  DEFAULT_PRESENCE_TTL_SECONDS,
  defaultCapacity,
  MAX_PRESENCE_CAPABILITIES,
  MAX_PRESENCE_CAPACITY,
  MAX_PRESENCE_TTL_SECONDS,
  MIN_PRESENCE_TTL_SECONDS,
  PRESENCE_KINDS,
  presenceAnnounceRequestSchema,
  presenceAnnounceResponseSchema,
  presenceInstanceIdSchema,
  presenceInstanceParamsSchema,
  presenceInstanceSchema,
  summarizePresence,
} from './presence.js';
export type { RedactionResult } from './redact-secrets.js';
export { redactJson, redactSecrets } from './redact-secrets.js';
export type {
  RouteRequest,
  RoutingCandidate,
  RoutingDecision,
  RoutingKind,
  RuntimePresence,
} from './routing.js';
export {
  ROUTING_KINDS,
  routeRequestSchema,
  routeTask,
  routingCandidateSchema,
  routingDecisionSchema,
  runtimePresenceSchema,
} from './routing.js';
// A type only: the run context itself (and its id maker) stays out of this entry.
export type { JsonValue } from './run-context.js';
export type {
  CreateSubscriptionRequest,
  DeadLetterInfo,
  DeliveryMode,
  PendingResponse,
  Subscription,
  SubscriptionEvent,
  SubscriptionFilter,
  WebhookPayload,
} from './subscription-schemas.js';
export {
  ackRequestSchema,
  createSubscriptionRequestSchema,
  createSubscriptionResponseSchema,
  deadLetterSchema,
  deadLettersResponseSchema,
  deliveryModeSchema,
  listSubscriptionsResponseSchema,
  MAX_ENDPOINT_LENGTH,
  pendingQuerySchema,
  pendingResponseSchema,
  subscriptionEventSchema,
  subscriptionFilterSchema,
  subscriptionIdParamsSchema,
  subscriptionResponseSchema,
  subscriptionSchema,
  webhookPayloadSchema,
} from './subscription-schemas.js';
export type {
  BlackboardNote,
  BoardListField,
  NotePriority,
  SwarmBlackboard,
} from './swarm-blackboard.js';
export {
  BOARD_LIST_FIELD_NAMES,
  BOARD_LIST_FIELDS,
  blackboardNoteSchema,
  boardListValueSchema,
  entryKindOf,
  listEntryName,
  NOTE_PRIORITIES,
  notePrioritySchema,
  priorityTag,
  swarmBlackboardOf,
  swarmBlackboardSchema,
  writerOf,
} from './swarm-blackboard.js';
export type { CreateTaskRequest, UpdateTaskRequest } from './task-api-schemas.js';
export {
  ACTIVE_TASK_STATES,
  approvalDecisionBodySchema,
  approvalKeyResponseSchema,
  approvalRequestBodySchema,
  cancelTaskRequestSchema,
  claimTaskRequestSchema,
  claimTaskResponseSchema,
  completeTaskRequestSchema,
  createTaskRequestSchema,
  createTaskResponseSchema,
  failTaskRequestSchema,
  listTasksQuerySchema,
  listTasksResponseSchema,
  renewTaskRequestSchema,
  startTaskRequestSchema,
  taskIdParamsSchema,
  taskProgressRequestSchema,
  taskResponseSchema,
  taskWithHistoryResponseSchema,
  UPDATE_TASK_STATES,
  updateTaskRequestSchema,
} from './task-api-schemas.js';
export type {
  TaskStatusEvent,
  TaskStatusReport,
  TaskStreamEvent,
} from './task-status-item.js';
export {
  followTaskStatus,
  NEEDS_SOMEONE_TASK_STATES,
  TASK_TAG,
  taskNeedsSomeone,
  taskScopeKey,
  taskStatusItem,
  taskStatusOf,
} from './task-status-item.js';
export type {
  JsonObject,
  NewTask,
  ParsedNewTask,
  Task,
  TaskApproval,
  TaskError,
  TaskEvent,
  TaskLease,
  TaskState,
} from './tasks.js';
export {
  assertTransition,
  boundedJsonObject,
  canTransition,
  capabilityNameSchema,
  DEFAULT_TASK_LEASE_MS,
  DEFAULT_TASK_MAX_ATTEMPTS,
  INITIAL_TASK_STATES,
  isTerminalTaskState,
  newTaskId,
  newTaskSchema,
  notLeaseHolderError,
  staleLeaseError,
  TASK_APPROVAL_STATUSES,
  TASK_LIMITS,
  TASK_STATES,
  TASK_TRANSITIONS,
  TERMINAL_TASK_STATES,
  taskApprovalSchema,
  taskErrorSchema,
  taskEventSchema,
  taskIdSchema,
  taskLeaseSchema,
  taskNoteSchema,
  taskResultSchema,
  taskSchema,
  taskStateSchema,
  WAITING_TASK_STATES,
} from './tasks.js';
export {
  contextBuildFailureSchema,
  turnContextInputSchema,
  turnContextRecordSchema,
  turnSnapshotSchema,
} from './turn-context-schema.js';
export type { ValidationIssue } from './validation.js';
export {
  assertJsonDepth,
  firstNul,
  MAX_JSON_DEPTH,
  parseOrThrow,
  tooDeep,
  validationError,
  wellFormed,
} from './validation.js';
export type {
  HttpMethod,
  QueryValue,
  RouteAuth,
  WireBody,
  WireInput,
  WireOperationId,
  WireOutput,
  WireParams,
  WireQuery,
  WireRoute,
  WireRoutes,
  WireTable,
} from './wire/index.js';
export {
  agentCardSchema,
  deadLettersQuerySchema,
  defineWireTable,
  deleteSubscriptionResponseSchema,
  jsonRpcResponseSchema,
  leavePresenceResponseSchema,
  listTokensResponseSchema,
  openApiDocumentSchema,
  revokeTokenResponseSchema,
  runtimeParamsSchema,
  streamStatsSchema,
  taskStatsSchema,
  wirePath,
  wireQueryString,
  wireRoutes,
  wireTarget,
} from './wire/index.js';
