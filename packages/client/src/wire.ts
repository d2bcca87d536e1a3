// `@ctxbus/client/wire`: the hub's API derived from core's wire table, for any runtime with
// fetch (browsers included): typed calls by operation id, the hub's errors as CtxbusError, and
// the one resumable live-stream reader. No ky, no Node import.
export type { CallOptions, HubCall, WireRequest, WireTransport } from './hub-call.js';
export { createHubCall, errorFromResponse, fetchTransport } from './hub-call.js';
export type { HubStreamOptions, StreamMessage, StreamState } from './hub-stream.js';
export { parseBlackboardStreamEvent, parseStreamEvent, readHubStream } from './hub-stream.js';
