import { CtxbusError } from './errors.js';

// One wording for "the hub did not answer", whichever client met it (the fetch client, the
// hooks' bare socket, the worker): what went wrong in a word, and what to do about it.

/** Network error codes, in a person's words. */
const REASONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'no such host',
  EAI_AGAIN: 'name lookup failed',
  ETIMEDOUT: 'timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  UND_ERR_CONNECT_TIMEOUT: 'timed out',
  UND_ERR_SOCKET: 'connection closed',
};

/** The first network error code in `error`'s cause chain, in words; else its own message. */
function reasonOf(error: unknown): string {
  let message: string | null = null;
  for (let at: unknown = error, depth = 0; at instanceof Error && depth < 6; depth += 1) {
    const code = (at as { code?: unknown }).code;
    if (typeof code === 'string' && REASONS[code]) return REASONS[code];
    message ??= at.message;
    at = at.cause;
  }
  return message ?? String(error);
}

/** `unavailable` (exit 6, retryable): the hub at `url` could not be reached, and what to do. */
export function hubUnreachable(url: string, error: unknown): CtxbusError {
  return new CtxbusError(
    'unavailable',
    `cannot reach the ctxbus hub at ${url} (${reasonOf(error)}): is it running? Start one with \`ctxbus serve\`, or give its address with --url or CTXBUS_URL`,
    { cause: error, retryable: true },
  );
}
