const brand = Symbol.for('ctxbus.error');

/**
 * Machine-readable error codes shared by every ctxbus package. The hub maps each to an HTTP
 * status (see `errorStatus`); the CLI maps them to exit codes.
 */
export const ERROR_CODES = {
  bad_json: 400,
  validation_failed: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  headers_too_large: 431,
  invalid_reference: 422,
  endpoint_not_allowed: 422,
  unknown_runtime: 422,
  limit_reached: 429,
  unavailable: 503,
  schema_too_new: 500,
  internal: 500,
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface CtxbusErrorOptions {
  details?: unknown;
  cause?: unknown;
  retryable?: boolean;
}

/**
 * The one error type of ctxbus. Recognised across package copies through a global symbol
 * brand (`CtxbusError.isInstance`), serialised with `toJSON()` into the API's error body.
 */
export class CtxbusError extends Error {
  readonly [brand] = true;
  readonly code: ErrorCode;
  readonly details: unknown;
  readonly retryable: boolean;

  constructor(code: ErrorCode, message: string, options: CtxbusErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'CtxbusError';
    this.code = code;
    this.details = options.details;
    this.retryable = options.retryable ?? (code === 'unavailable' || code === 'internal');
  }

  static isInstance(value: unknown): value is CtxbusError {
    return typeof value === 'object' && value !== null && brand in value;
  }

  get status(): number {
    return ERROR_CODES[this.code];
  }

  toJSON(): { error: { code: ErrorCode; message: string; details?: unknown } } {
    return {
      error: {
        code: this.code,
        message: this.message,
        ...(this.details === undefined ? {} : { details: this.details }),
      },
    };
  }
}

export function errorStatus(code: ErrorCode): number {
  return ERROR_CODES[code];
}
