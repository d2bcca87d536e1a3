// Context items: the item schema and its kinds, preparing a write (redaction, ids, summaries),
// filters and columns, conflicts, decisions captured from replies, and the item and subscription
// halves of the hub's API, and context analytics (what was injected, consumed, searched).
export type {
  AnalyticsItem,
  AnalyticsQuery,
  AnalyticsResponse,
  UsageCounts,
  UsageKind,
} from './analytics-api-schemas.js';
export {
  ANALYTICS_MAX_WINDOW_DAYS,
  analyticsQuerySchema,
  analyticsResponseSchema,
  daysBetween,
  injectionReportSchema,
  MAX_REPORTED_INJECTIONS,
  staleCutoff,
  staleRuleText,
  usageDay,
  windowDays,
} from './analytics-api-schemas.js';
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
} from './api-schemas.js';
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
} from './api-schemas.js';
export type { ConflictReport, ConflictView, ResolveConflictResponse } from './conflicts.js';
export {
  CONFLICT_TAG,
  CONFLICT_WRITER,
  conflictItemInput,
  conflictOf,
  conflictView,
  DEFAULT_CONFLICT_WINDOW_MS,
  isConflict,
  isConflictKey,
  resolutionItemInput,
  sameValue,
} from './conflicts.js';
export type {
  ContextItem,
  ContextItemInput,
  ContextType,
  Scope,
  Urgency,
  Visibility,
} from './context-item.js';
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
} from './context-item.js';
export { extractDecisions, stableId } from './decision-capture.js';
export type { ItemRowColumns, StoredItemValues } from './item-columns.js';
export { itemFromColumns } from './item-columns.js';
export type { ItemFilter, ListOptions, Viewer } from './item-filter.js';
export { applyListOptions, itemMatches, scopeKindOf } from './item-filter.js';
export { CONTEXT_TYPES, SCOPES, URGENCIES, VISIBILITIES } from './item-kinds.js';
export type { NewContextItem } from './prepare-item.js';
export { newItemId, prepareItem, prepareParsedItem } from './prepare-item.js';
export {
  assertNoSecret,
  assertNoSecretInJson,
  redactJson,
  redactSecrets,
} from './redact-secrets.js';
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
export { webhookPayloadSchema } from './subscription-schemas.js';
