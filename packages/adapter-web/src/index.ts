// The hub's errors arrive as CtxbusError (`error.code`: unauthorized, not_found, ...).
export { errorFromResponse } from '@ctxbus/client/wire';
export type {
  CapabilitiesResponse,
  CapabilitiesRuntime,
  ContextItem,
  DeadLetterInfo,
  ErrorCode,
  RoutingDecision,
  SharedContextResponse,
  StreamEvent,
  Subscription,
  Task,
  TaskEvent,
} from '@ctxbus/core/contract';
export { CtxbusError } from '@ctxbus/core/contract';
export type { MarkdownBundle, SidebarBundle, SidebarEntry, SidebarSection } from './bundles.js';
export { DEFAULT_MARKDOWN_BUDGET, toMarkdownBundle, toSidebarBundle } from './bundles.js';
export type {
  CapabilityRequest,
  CapabilityRequestHandle,
  TaskStatusUpdate,
} from './capability-request.js';
export {
  isTerminalState,
  requestCapability,
  routingLine,
  TASK_TAG,
  taskScopeKey,
  taskStatusOf,
} from './capability-request.js';
export type { CacheFilter, ItemCacheOptions } from './item-cache.js';
export { ItemCache } from './item-cache.js';
export type { LiveCache, LiveCacheOptions } from './live-cache.js';
export { connectCache } from './live-cache.js';
export type {
  StreamConnection,
  StreamFilter,
  StreamOptions,
  StreamState,
} from './live-stream.js';
export { openLiveStream } from './live-stream.js';
export type { WebClientSettings, WebListParams, WebTaskListParams } from './web-client.js';
export { createWebClient, WebClient } from './web-client.js';
