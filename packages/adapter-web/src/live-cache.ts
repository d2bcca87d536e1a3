import { CtxbusError, healthSeq } from '@ctxbus/core/contract';
import type { ItemCache } from './item-cache.js';
import type { StreamFilter, StreamOptions, StreamState } from './live-stream.js';
import type { WebClient } from './web-client.js';

export interface LiveCacheOptions extends StreamFilter {
  /** Items listed into the cache before the stream starts (default: the cache's `maxItems`, at most 500). */
  initialLimit?: number;
  signal?: AbortSignal;
  backoff?: StreamOptions['backoff'];
  onState?: (state: StreamState, cause?: unknown) => void;
  /** An error that ends the stream for good (a revoked token, say). */
  onError?: (error: CtxbusError) => void;
}

export interface LiveCache {
  /** Resolves once the first listing is in the cache and the stream is opening. */
  readonly loaded: Promise<void>;
  /** Resolves when the stream has ended (aborted, or a final error: see `onError`). */
  readonly done: Promise<void>;
  stop(): void;
}

/**
 * Keeps `cache` current: lists the newest matching items, then applies every change after the
 * hub's sequence at that moment from the live stream (which resumes by itself). A cache that
 * already holds changes resumes after its `lastSeq` instead of listing again.
 */
export function connectCache(
  client: WebClient,
  cache: ItemCache,
  options: LiveCacheOptions = {},
): LiveCache {
  const { initialLimit, signal, backoff, onState, onError, ...filter } = options;
  const controller = new AbortController();
  const stop = () => controller.abort();
  if (signal?.aborted) stop();
  signal?.addEventListener('abort', stop, { once: true });
  let markLoaded: () => void = () => {};
  let failLoad: (error: unknown) => void = () => {};
  const loaded = new Promise<void>((resolve, reject) => {
    markLoaded = resolve;
    failLoad = reject;
  });
  loaded.catch(() => {});
  const run = async () => {
    try {
      let since = cache.lastSeq;
      if (since === 0) {
        // The sequence first, then the listing: a change between the two arrives on the stream
        // as well, and the cache keeps one copy.
        since = healthSeq(await client.health());
        const { items } = await client.list({
          ...filter,
          limit: initialLimit ?? Math.min(cache.maxItems, 500),
        });
        cache.load(items);
      }
      markLoaded();
      for await (const event of client.stream({
        ...filter,
        since,
        signal: controller.signal,
        ...(backoff && { backoff }),
        ...(onState && { onState }),
      })) {
        cache.apply(event);
      }
    } catch (error) {
      failLoad(error);
      if (controller.signal.aborted) return;
      const final = CtxbusError.isInstance(error)
        ? error
        : new CtxbusError('internal', `the live cache stopped: ${(error as Error).message}`, {
            cause: error,
          });
      onError?.(final);
    } finally {
      signal?.removeEventListener('abort', stop);
    }
  };
  const done = run();
  return { loaded, done, stop };
}
