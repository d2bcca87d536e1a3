import type { ErrorCode } from '@ctxbus/core/contract';
import { CtxbusError, ERROR_CODES, errorResponseSchema } from '@ctxbus/core/contract';

/** Query parameters of a hub request: arrays become comma lists, absent values are left out. */
export function toSearchParams(params: object): URLSearchParams {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value === undefined || value === null) continue;
    search.set(name, Array.isArray(value) ? value.join(',') : String(value));
  }
  return search;
}

/** The hub's `{error: {code, message, details}}` as a `CtxbusError` with the same code. */
export async function errorFromResponse(response: Response): Promise<CtxbusError> {
  const text = await response.text().catch(() => '');
  let parsed: ReturnType<typeof errorResponseSchema.parse> | undefined;
  try {
    parsed = errorResponseSchema.parse(JSON.parse(text));
  } catch {
    parsed = undefined;
  }
  const code: ErrorCode =
    parsed && parsed.error.code in ERROR_CODES
      ? (parsed.error.code as ErrorCode)
      : response.status >= 500
        ? 'unavailable'
        : 'internal';
  return new CtxbusError(
    code,
    parsed?.error.message ?? `the hub answered ${response.status} ${response.statusText}`,
    {
      details: {
        status: response.status,
        ...(parsed?.error.details !== undefined && { details: parsed.error.details }),
      },
      retryable: response.status >= 500 || response.status === 429,
    },
  );
}
