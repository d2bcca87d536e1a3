import { CtxbusError } from '@ctxbus/core';
import { z } from 'zod';

// The JSON-RPC 2.0 envelope of A2A 1.0 and its error codes (the spec's, as @a2a-js/sdk maps
// them back to TaskNotFoundError and the rest).

export const A2A_ERROR_CODES = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
  taskNotFound: -32001,
  taskNotCancelable: -32002,
  pushNotificationNotSupported: -32003,
  unsupportedOperation: -32004,
  contentTypeNotSupported: -32005,
  versionNotSupported: -32009,
  /** JSON-RPC's implementation-defined server error: a refusal `data.ctxbusCode` names. */
  refused: -32000,
} as const;

export type A2aErrorName = keyof typeof A2A_ERROR_CODES;

/** An A2A error, answered as a JSON-RPC error object. */
export class A2aRpcError extends Error {
  readonly code: number;
  readonly data: unknown;

  constructor(name: A2aErrorName, message: string, data?: unknown) {
    super(message);
    this.name = 'A2aRpcError';
    this.code = A2A_ERROR_CODES[name];
    this.data = data;
  }
}

export type JsonRpcId = string | number | null;

/** The longest string id a request may have: a longer one is refused, never echoed. */
export const MAX_ID_CHARS = 200;

export const jsonRpcRequestSchema = z.object({
  jsonrpc: z.literal('2.0'),
  id: z.union([z.string().max(MAX_ID_CHARS), z.number(), z.null()]).optional(),
  method: z.string().min(1).max(100),
  params: z.unknown().optional(),
});

/** A success envelope. */
export function rpcResult(id: JsonRpcId, result: unknown) {
  return { jsonrpc: '2.0' as const, id, result };
}

/** An error envelope for anything thrown while serving a call. */
export function rpcError(id: JsonRpcId, error: unknown) {
  const { code, message, data } = toRpcError(error);
  return {
    jsonrpc: '2.0' as const,
    id,
    error: { code, message, ...(data !== undefined && { data }) },
  };
}

function toRpcError(error: unknown): { code: number; message: string; data?: unknown } {
  if (error instanceof A2aRpcError) {
    return { code: error.code, message: error.message, data: error.data };
  }
  if (CtxbusError.isInstance(error)) {
    const data = {
      ctxbusCode: error.code,
      ...(error.details !== undefined && { details: error.details }),
    };
    if (error.code === 'not_found') {
      return { code: A2A_ERROR_CODES.taskNotFound, message: error.message, data };
    }
    if (error.code === 'validation_failed' || error.code === 'unknown_runtime') {
      return { code: A2A_ERROR_CODES.invalidParams, message: error.message, data };
    }
    // Any other refusal (a limit, a permission) is no malformed request (-32600, which clients
    // take for a bug of theirs): an implementation-defined server error, with ctxbus's code.
    if (error.status < 500) return { code: A2A_ERROR_CODES.refused, message: error.message, data };
  }
  return { code: A2A_ERROR_CODES.internalError, message: 'internal error; see the hub log' };
}

/** Params parsed with a schema, or InvalidParams naming the first problem. */
export function parseParams<T extends z.ZodType>(
  schema: T,
  params: unknown,
  method: string,
): z.output<T> {
  const parsed = schema.safeParse(params ?? {});
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw new A2aRpcError(
    'invalidParams',
    `${method}: params.${issue?.path.join('.') || ''} ${issue?.message ?? 'is invalid'}`,
    { issues: parsed.error.issues.slice(0, 10) },
  );
}
