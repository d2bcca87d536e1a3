export type { MintedToken, MintTokenRequest } from './auth.js';
export { hashToken, mintToken, TOKEN_PREFIX, TokenVerifier } from './auth.js';
export type { Caller } from './caller.js';
export { ChangeFeed, FeedSubscriber } from './change-feed.js';
export type { Hub, HubExtension, HubOptions } from './create-hub.js';
export { createHub } from './create-hub.js';
export type {
  BackgroundEmbedderOptions,
  EmbedderStatus,
} from './embeddings/background-embedder.js';
export { BackgroundEmbedder, embeddingText } from './embeddings/background-embedder.js';
export type { EmbeddingProvider, EmbeddingsSettings } from './embeddings/embedding-provider.js';
export {
  EmbeddingError,
  embeddingsSettingsSchema,
  MAX_EMBEDDING_CHARS,
  openAiEmbeddings,
} from './embeddings/embedding-provider.js';
export type { EmbeddingsOptions } from './embeddings/hub-embeddings.js';
export { HubEmbeddings } from './embeddings/hub-embeddings.js';
export type { HubServices } from './hub-services.js';
export type { RetentionOptions } from './lifecycle-sweeper.js';
export { DEFAULT_RETENTION, LifecycleSweeper } from './lifecycle-sweeper.js';
export { buildOpenApiDocument } from './openapi-document.js';
export type { RouteAuth, RouteDefinition } from './route-definition.js';
export { tokenInfo } from './routes/admin-routes.js';
export { subscriptionView } from './routes/subscription-routes.js';
export { fuseRankings, RRF_K, searchContext } from './search/hybrid-search.js';
export type { RunningHub, StartHubOptions } from './start-hub.js';
export { startHub } from './start-hub.js';
export { checkEndpoint, isNonPublicAddress } from './webhooks/endpoint-guard.js';
export type { WebhookOptions } from './webhooks/push-dispatcher.js';
export {
  DEFAULT_WEBHOOK_OPTIONS,
  PushDispatcher,
  retryDelayMs,
} from './webhooks/push-dispatcher.js';
export { newWebhookSecret, signWebhook } from './webhooks/webhook-signature.js';
