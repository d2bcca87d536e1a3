import { CtxbusError } from '@ctxbus/core/contract';

/** What each code means to a model deciding whether to fix its call, retry, or give up. */
const PREFIX: Partial<Record<CtxbusError['code'], string>> = {
  validation_failed: 'invalid input',
  bad_json: 'invalid input',
  unauthorized: 'the ctxbus hub rejected the token (check CTXBUS_TOKEN)',
  forbidden: 'not allowed',
  not_found: 'not found',
  conflict: 'conflict',
  payload_too_large: 'too large',
  invalid_reference: 'invalid reference',
  unknown_runtime: 'unknown runtime',
  unavailable: 'the ctxbus hub is unavailable; try again later',
  internal: 'the ctxbus hub failed',
};

/** One line: tool results and logs stay readable when a message carries newlines. */
function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, '; ').trim();
}

/** A clear one-line message for any failure, naming the ctxbus error code when there is one. */
export function errorMessage(error: unknown): string {
  if (CtxbusError.isInstance(error)) {
    const prefix = PREFIX[error.code] ?? error.code;
    return oneLine(`${prefix}: ${error.message}`);
  }
  if (error instanceof Error) return oneLine(`unexpected error: ${error.message}`);
  return oneLine(`unexpected error: ${String(error)}`);
}
