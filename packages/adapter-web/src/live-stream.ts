import type { HubCall, StreamState } from '@ctxbus/client/wire';
import { parseStreamEvent, readHubStream } from '@ctxbus/client/wire';
import type { StreamEvent } from '@ctxbus/core/contract';
import { healthSeq } from '@ctxbus/core/contract';

export type { StreamState };

/** What the stream needs of a client: the hub's calls and its newest sequence. */
export interface StreamConnection extends Pick<HubCall, 'url' | 'open'> {
  health(): Promise<{ seq?: number | undefined }>;
}

/** The filters `GET /api/stream` understands (arrays become comma lists). */
export interface StreamFilter {
  scope?: string | string[];
  scopeKey?: string;
  type?: string | string[];
  tags?: string | string[];
  minUrgency?: string;
}

export interface StreamOptions extends StreamFilter {
  /**
   * Deliver the changes after this sequence first. Default: the hub's newest sequence when
   * the stream starts (read from `/health`), so that even a connection lost before its first
   * event resumes without a gap.
   */
  since?: number;
  /** Ends the stream (the generator returns). */
  signal?: AbortSignal;
  /** Waits between reconnections: from `initialMs` (250), doubling up to `maxMs` (5,000). */
  backoff?: { initialMs?: number; maxMs?: number };
  /** Each change of state, with the error that caused a reconnection. */
  onState?: (state: StreamState, cause?: unknown) => void;
}

/**
 * Reads `GET /api/stream` with the client's shared reader (`readHubStream`): after a dropped
 * connection or a `disconnect` (a slow reader) it reconnects after a jittered backoff with
 * `Last-Event-ID` = the last sequence delivered, so no change is missed or repeated. Errors
 * that a retry cannot fix (a wrong or revoked token, a bad filter) end it with a `CtxbusError`.
 */
export function openLiveStream(
  connection: StreamConnection,
  options: StreamOptions = {},
): AsyncGenerator<StreamEvent> {
  const { since, signal, backoff, onState, ...filter } = options;
  return readHubStream({
    hub: connection,
    query: filter,
    parse: parseStreamEvent,
    start: async () => healthSeq(await connection.health()),
    ...(since !== undefined && { since }),
    ...(signal && { signal }),
    ...(backoff && { backoff }),
    ...(onState && { onState }),
  });
}
