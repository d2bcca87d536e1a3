// The wire contract without the tokenizer: schemas, errors, filters and validation. Clients
// that only talk to a hub import this entry and skip loading the o200k vocabulary.
export type {
  ArchiveResponse,
  ChangeEventName,
  ChangeKind,
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
  createTokenRequestSchema,
  createTokenResponseSchema,
  errorResponseSchema,
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
export type { ItemFilter, ListOptions, ScopeKind, Viewer } from './item-filter.js';
export { applyListOptions, itemMatches, SCOPE_KINDS, scopeKindOf } from './item-filter.js';
// The light entry's own list is the reviewed one; the contract carries all of it.
export * from './light.js';
export type { RedactionResult } from './redact-secrets.js';
export { redactJson, redactSecrets } from './redact-secrets.js';
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
