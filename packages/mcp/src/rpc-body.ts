import { parseStrictJson, StrictJsonError } from '@ctxbus/core/contract';
import { jsonRpcErrorResponse } from './http-responses.js';

// A POST's body checked before the SDK's transport reads it. The transport decodes it leniently
// (bytes that are not UTF-8 became U+FFFD in a stored title, a key given twice kept its last
// value) and answers -32700 Parse error to JSON that parses but is no JSON-RPC message, which
// JSON-RPC 2.0 calls an Invalid Request (-32600).

const JSON_TYPE = /^application\/([\w.+-]*\+)?json\b/i;

/** A JSON-RPC 2.0 request, notification or response, by its envelope. */
function isJsonRpcMessage(value: unknown): boolean {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const message = value as Record<string, unknown>;
  if (message.jsonrpc !== '2.0') return false;
  const id = message.id;
  const idOk = id === undefined || typeof id === 'string' || Number.isInteger(id);
  if (typeof message.method === 'string') return idOk;
  return id !== undefined && idOk && ('result' in message || 'error' in message);
}

/**
 * Whether a body may be a batch: MCP 2025-03-26 has them (the version a request without
 * MCP-Protocol-Version is taken to speak), 2025-06-18 removed them, and so later versions.
 */
function batchesAllowed(version: string | null): boolean {
  return version === null || !/^\d{4}-\d{2}-\d{2}$/.test(version) || version < '2025-06-18';
}

/**
 * The request again, its body checked (same bytes), or the answer refusing it: 400 with -32700
 * when it is not strict JSON, -32600 when it is JSON but no JSON-RPC message (or a batch of
 * them, where the protocol version has batches). A body that is not declared JSON is left to the transport (415).
 */
export async function checkedRpcRequest(
  request: Request,
  maxBytes: number,
): Promise<Request | Response> {
  if (request.method !== 'POST' || !JSON_TYPE.test(request.headers.get('content-type') ?? '')) {
    return request;
  }
  const tooLarge = () =>
    jsonRpcErrorResponse(413, `the request body is larger than ${maxBytes} bytes`, {
      ctxbusCode: 'payload_too_large',
    });
  if (Number(request.headers.get('content-length') ?? 0) > maxBytes) return tooLarge();
  const bytes = new Uint8Array(await request.arrayBuffer());
  if (bytes.length > maxBytes) return tooLarge();
  let value: unknown;
  try {
    value = parseStrictJson(bytes);
  } catch (error) {
    if (!(error instanceof StrictJsonError)) throw error;
    return jsonRpcErrorResponse(400, `Parse error: ${error.message}`, { code: -32700 });
  }
  if (Array.isArray(value) && !batchesAllowed(request.headers.get('mcp-protocol-version'))) {
    return jsonRpcErrorResponse(
      400,
      `Invalid Request: MCP ${request.headers.get('mcp-protocol-version')} has no batches (JSON-RPC batching ended with 2025-03-26): send one message per request`,
      { code: -32600 },
    );
  }
  const messages = Array.isArray(value) ? value : [value];
  if (messages.length === 0 || !messages.every(isJsonRpcMessage)) {
    return jsonRpcErrorResponse(
      400,
      'Invalid Request: the body is JSON but not a JSON-RPC 2.0 message ({"jsonrpc": "2.0", "method": ..., "id": ...}) or a list of them',
      { code: -32600 },
    );
  }
  return new Request(request.url, { method: 'POST', headers: request.headers, body: bytes });
}
