import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import {
  ClientRequestSchema,
  ErrorCode,
  isJSONRPCRequest,
} from '@modelcontextprotocol/sdk/types.js';

// The SDK checks a request's params against its schema inside the server, and answers a
// mismatch (a tools/call without a name, `arguments` that is not an object) as -32603 Internal
// error with zod's issues as pretty-printed JSON. A client (often a model) reads that as the
// server's fault. This answers them first: -32602 Invalid params, one line naming each field.

/** The schema of each request method a client may send, by method name. */
const SCHEMAS = new Map(
  ClientRequestSchema.options.map((schema) => [schema.shape.method.value as string, schema]),
);

/** Why `request`'s params do not fit its method, in one line; null when they do (or unknown). */
export function invalidParams(request: JSONRPCRequest): string | null {
  const schema = SCHEMAS.get(request.method);
  if (!schema) return null;
  const parsed = schema.safeParse(request);
  if (parsed.success) return null;
  const issues = parsed.error.issues.slice(0, 5).map((issue) => {
    const path = issue.path.map(String).join('.') || 'params';
    return `${path}: ${issue.message}`;
  });
  return `invalid params for ${request.method}: ${issues.join('; ')}`;
}

/**
 * Chains ahead of the server's handler on a connected transport (call it after
 * `server.connect(transport)`): a request whose params its method's schema refuses gets
 * -32602 with invalidParams' line, and never reaches the server.
 */
export function refuseInvalidParams(transport: Transport): void {
  const deliver = transport.onmessage;
  if (!deliver) return;
  transport.onmessage = (message, extra) => {
    const reason = isJSONRPCRequest(message) ? invalidParams(message) : null;
    if (reason === null) {
      deliver.call(transport, message, extra);
      return;
    }
    const id = (message as JSONRPCRequest).id;
    transport
      .send(
        { jsonrpc: '2.0', id, error: { code: ErrorCode.InvalidParams, message: reason } },
        { relatedRequestId: id },
      )
      .catch((error: unknown) => transport.onerror?.(error as Error));
  };
}
