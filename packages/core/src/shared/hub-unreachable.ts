import { CtxbusError } from './errors.js';
import { DEFAULT_HUB_PORT } from './hub-limits.js';

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

/** The command that serves a hub at `url` here: `--port` when it is not the default one. */
export function serveCommand(url: string): string {
  // Plain HTTP on a loopback name: a hub this machine would serve (no URL class in core).
  const local = /^http:\/\/(?:127\.0\.0\.1|localhost|\[::1\])(?::(\d+))?(?:[/?#]|$)/i.exec(url);
  const port = local ? Number(local[1] ?? 80) : DEFAULT_HUB_PORT;
  return port === DEFAULT_HUB_PORT ? 'ctxbus serve' : `ctxbus serve --port ${port}`;
}

/** `unavailable` (exit 6, retryable): the hub at `url` could not be reached, and what to do. */
export function hubUnreachable(url: string, error: unknown): CtxbusError {
  return new CtxbusError(
    'unavailable',
    `cannot reach the ctxbus hub at ${url} (${reasonOf(error)}): is it running? Start one with \`${serveCommand(url)}\`, or give its address with --url or CTXBUS_URL`,
    { cause: error, retryable: true },
  );
}
