// Where a hub listens by default and the limits its callers must know, in one place: the hub,
// the CLI, the MCP endpoint and the clients read them from here.

/** The address `ctxbus serve` binds by default (loopback). */
export const DEFAULT_HUB_HOST = '127.0.0.1';

/** The port `ctxbus serve` listens on by default. */
export const DEFAULT_HUB_PORT = 7420;

/** The URL of a hub started with the defaults. */
export const DEFAULT_HUB_URL = `http://${DEFAULT_HUB_HOST}:${DEFAULT_HUB_PORT}`;

/** The largest request body a hub accepts by default (1 MiB), the MCP endpoint's too. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

/**
 * Bytes of undelivered changes one live stream (SSE or WebSocket) may hold by default before
 * the hub ends it as a slow reader (1 MiB).
 */
export const DEFAULT_MAX_STREAM_PENDING_BYTES = 1024 * 1024;

/**
 * Live streams (SSE and WebSocket) one token may hold open at once by default, and the tokens
 * of one team together: past either, a new stream is refused with 429. With the per-stream
 * byte bound, they bound what one client, or one team, can make a hub hold.
 */
export const DEFAULT_MAX_STREAMS_PER_TOKEN = 100;
export const DEFAULT_MAX_STREAMS_PER_TEAM = 1_000;

/** The most items one write may carry (larger batches are split by the writer). */
export const MAX_BATCH_ITEMS = 500;
