export type {
  BlackboardEntry,
  BlackboardSettings,
  PersistentResourcesSettings,
} from './blackboard.js';
export { Blackboard, PersistentResources } from './blackboard.js';
export type {
  CtxbusClientSettings,
  ListParams,
  StreamOptions,
  StreamParams,
} from './ctxbus-client.js';
export { CtxbusClient, createClient } from './ctxbus-client.js';
export type { VerifyWebhookOptions } from './verify-webhook.js';
export { verifyWebhook } from './verify-webhook.js';
