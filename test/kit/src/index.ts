export type {
  EmbeddingsRequestRecord,
  EmbeddingsServer,
  EmbeddingsServerOptions,
} from './embeddings-server.ts';
export { DEFAULT_CONCEPTS, startEmbeddingsServer } from './embeddings-server.ts';
export { freePort } from './free-port.ts';
export type { ApiResponse, RequestOptions, SseConnection, SseEvent } from './http.ts';
export { call, openStream, openWebSocketStream, runtimeToken } from './http.ts';
export type { HubFixture, HubFixtureOptions } from './hub-fixture.ts';
export { useHub, useHubProcess } from './hub-fixture.ts';
export type { CliResult, CliRun, HubProcess, StartOptions, TestHub } from './hub-process.ts';
export {
  CLI,
  hubEnvironment,
  removeDir,
  runCli,
  runCliInTerminal,
  spawnCli,
  startHubProcess,
  tempDir,
} from './hub-process.ts';
export type { WaitOptions } from './wait-until.ts';
export { TEST_WAIT_MS, waitFor, waitUntil } from './wait-until.ts';
export type { ReceivedWebhook, WebhookReceiver } from './webhook-receiver.ts';
export { startWebhookReceiver } from './webhook-receiver.ts';
export { TASK_HUB_CAPABILITIES, workerPolicy } from './worker-policy.ts';
