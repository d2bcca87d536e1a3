import type { Logger } from '@ctxbus/core/contract';
import { CtxbusError, ERROR_CODES } from '@ctxbus/core/contract';

/**
 * Logs a failed tool call, resource read or stream: the caller's mistake or the hub's refusal
 * (a 4xx: bad input, not found, a revoked token) is the caller's answer, one line at info, so
 * that no client can fill the log with stacks; anything else is ours to look at, with its
 * stack, at `level`.
 */
export function logFailure(
  logger: Logger,
  error: unknown,
  fields: Record<string, unknown>,
  message: { refused: string; failed: string },
  level: 'warn' | 'error' = 'warn',
): void {
  const status = CtxbusError.isInstance(error) ? ERROR_CODES[error.code] : 500;
  if (status < 500) logger.info({ ...fields, code: (error as CtxbusError).code }, message.refused);
  else logger[level]({ ...fields, err: error }, message.failed);
}
