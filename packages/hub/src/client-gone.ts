/** Errors of a client that went away mid-request (a body cut short): its doing, not a fault. */
const CLIENT_GONE = new Set(['ECONNRESET', 'ECONNABORTED', 'ERR_STREAM_PREMATURE_CLOSE']);

/** Whether `error` (or one of its causes) says the client closed the connection. */
export function clientGone(error: unknown): boolean {
  for (let at: unknown = error, depth = 0; at instanceof Error && depth < 4; depth += 1) {
    if (CLIENT_GONE.has((at as NodeJS.ErrnoException).code ?? '')) return true;
    at = at.cause;
  }
  return false;
}
