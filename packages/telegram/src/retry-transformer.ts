import type { Logger } from '@ctxbus/core';
import { createBackoff } from '@ctxbus/core/light';
import type { Transformer } from 'grammy';
import { HttpError } from 'grammy';

// Telegram's rate limit answers 429 with `parameters.retry_after` (seconds): wait that long,
// then send again. A network error (Telegram or the Bot API server unreachable) is retried with
// exponential backoff. getUpdates is left alone: grammY's polling loop handles its own errors,
// and its long poll is aborted on purpose when the bot stops.

export interface RetryOptions {
  /** Attempts after the first (default 8). */
  maxRetries?: number;
  /** First backoff after a network error, doubled each time up to `maxBackoffMs`. */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** Longest retry_after honoured (default 1 h); a longer one fails the call. */
  maxRetryAfterMs?: number;
  logger: Logger;
  /** Waits `ms` (tests turn it; resolves early when `signal` aborts). */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/** grammY's own AbortSignal type (a polyfill's) as the platform's. */
const platformSignal = (signal: unknown) => signal as AbortSignal | undefined;

export const abortableSleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) {
      resolve();
      return;
    }
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done);
  });

export function retryTransformer(options: RetryOptions): Transformer {
  const {
    maxRetries = 8,
    initialBackoffMs = 500,
    maxBackoffMs = 30_000,
    maxRetryAfterMs = 3_600_000,
    logger,
    sleep = abortableSleep,
  } = options;
  return async (prev, method, payload, signal) => {
    if (method === 'getUpdates') return prev(method, payload, signal);
    const backoff = createBackoff({ initialMs: initialBackoffMs, maxMs: maxBackoffMs });
    for (let attempt = 0; ; attempt++) {
      try {
        const result = await prev(method, payload, signal);
        if (result.ok || result.error_code !== 429 || attempt >= maxRetries) return result;
        const waitMs = (result.parameters?.retry_after ?? 1) * 1000;
        if (waitMs > maxRetryAfterMs) return result;
        logger.warn({ method, retryAfterMs: waitMs, attempt }, 'telegram rate limit: waiting');
        await sleep(waitMs, platformSignal(signal));
      } catch (error) {
        if (!(error instanceof HttpError) || attempt >= maxRetries || signal?.aborted) throw error;
        const backoffMs = backoff.next();
        logger.warn(
          { method, backoffMs, attempt, error: error.message },
          'telegram unreachable: retrying',
        );
        await sleep(backoffMs, platformSignal(signal));
      }
      if (signal?.aborted) return prev(method, payload, signal);
    }
  };
}
