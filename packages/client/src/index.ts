export type {
  BlackboardEntry,
  BlackboardSettings,
  BoardClient,
  EntryOptions,
  NoteInput,
} from './blackboard.js';
export { Blackboard } from './blackboard.js';
export type {
  CtxbusClientSettings,
  ListParams,
  StreamOptions,
  StreamParams,
} from './ctxbus-client.js';
export { CtxbusClient, createClient } from './ctxbus-client.js';
export type { CallOptions, HubCall } from './hub-call.js';
export type { StreamState } from './hub-stream.js';
export type { LiveSession } from './live-push.js';
export {
  isApprovalRequest,
  LIVE_DATA_NOTICE,
  LIVE_TEXT_CHARS,
  liveItemBlock,
  liveText,
  shouldPush,
} from './live-push.js';
export type {
  ListResourcesOptions,
  PersistentResourcesSettings,
  PutResourceOptions,
  ResourceClient,
} from './persistent-resources.js';
export { PersistentResources } from './persistent-resources.js';
export type { VerifyWebhookOptions } from './verify-webhook.js';
export { verifyWebhook } from './verify-webhook.js';
