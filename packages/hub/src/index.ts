// What other packages use: building or starting a hub, and minting tokens (the CLI mints the
// first admin token before any hub runs). The hub's own tests import the rest by path.
export { normalizePublicUrl } from './a2a/a2a-base-url.js';
export type { MintedToken, MintTokenRequest } from './auth.js';
export { mintToken, tokenInfo } from './auth.js';
export type { CapabilitiesOptions } from './capabilities/capabilities-source.js';
export { CapabilitiesSource } from './capabilities/capabilities-source.js';
export type { PresenceOptions } from './capabilities/presence-registry.js';
export { PresenceRegistry } from './capabilities/presence-registry.js';
export type { Hub, HubExtension, HubOptions } from './create-hub.js';
export { createHub } from './create-hub.js';
export type { EmbeddingProvider } from './embeddings/embedding-provider.js';
export { openAiEmbeddings } from './embeddings/embedding-provider.js';
export type { EmbeddingsOptions } from './embeddings/hub-embeddings.js';
export type { HubServices } from './hub-services.js';
export type { RetentionOptions } from './lifecycle-sweeper.js';
export type { RunningHub, StartHubOptions } from './start-hub.js';
export { startHub } from './start-hub.js';
export type { ApprovalKey, KeyPlace } from './tasks/approval-key.js';
export { DEFAULT_APPROVAL_TTL_MS, loadApprovalKey, moveApprovalKey } from './tasks/approval-key.js';
export type { TaskRelayReport } from './tasks/task-relay-report.js';
export { taskRelayReport } from './tasks/task-relay-report.js';
export type { WebhookOptions } from './webhooks/push-dispatcher.js';
