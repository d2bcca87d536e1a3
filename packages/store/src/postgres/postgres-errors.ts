import { CtxbusError } from '@ctxbus/core';

interface PgErrorFields {
  code?: unknown;
  message?: unknown;
}

/** The SQLSTATE of a server error, or the errno-style code of a network error. */
export function errorCode(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const code = (error as PgErrorFields).code;
  return typeof code === 'string' ? code : undefined;
}

/** SQLSTATE classes and network codes that mean "the server is not there right now". */
function isConnectionFailure(code: string | undefined, error: unknown): boolean {
  if (code === undefined) {
    const message = error instanceof Error ? error.message : '';
    return /Connection terminated|connection timeout|Client has encountered a connection error|Client was closed/i.test(
      message,
    );
  }
  return (
    /^(08|53|57P)/.test(code) ||
    [
      'ECONNREFUSED',
      'ECONNRESET',
      'ENOTFOUND',
      'ETIMEDOUT',
      'EHOSTUNREACH',
      'EAI_AGAIN',
      'EPIPE',
    ].includes(code) ||
    // Serialization failures and deadlocks: the same request may succeed when retried.
    code === '40001' ||
    code === '40P01'
  );
}

/**
 * Turns anything a query threw into the CtxbusError a caller can act on: `unavailable`
 * (retryable) when the server cannot be reached, `conflict` for a unique violation,
 * `validation_failed` for data PostgreSQL refuses, `internal` otherwise. `action` says what was
 * being done ("write items", "search").
 */
export function toStoreError(error: unknown, action: string, location: string): CtxbusError {
  if (CtxbusError.isInstance(error)) return error;
  const code = errorCode(error);
  const message = error instanceof Error ? error.message : String(error);
  if (isConnectionFailure(code, error)) {
    return new CtxbusError(
      'unavailable',
      `PostgreSQL at ${location} is unavailable (${action}): ${message}`,
      { cause: error, details: { sqlState: code ?? null } },
    );
  }
  if (code === '23505') {
    return new CtxbusError('conflict', `${action}: ${message}`, {
      cause: error,
      details: { sqlState: code },
    });
  }
  if (code !== undefined && /^(22|54)/.test(code)) {
    return new CtxbusError(
      'validation_failed',
      `PostgreSQL refused the data (${action}): ${message}`,
      {
        cause: error,
        details: { sqlState: code },
      },
    );
  }
  return new CtxbusError('internal', `PostgreSQL store failed to ${action}: ${message}`, {
    cause: error,
    details: { sqlState: code ?? null },
  });
}

/** Whether a failed statement left the connection usable (a server-side error, not I/O). */
export function isStatementError(error: unknown): boolean {
  const code = errorCode(error);
  return code !== undefined && /^[0-9A-Z]{5}$/.test(code) && !isConnectionFailure(code, error);
}
