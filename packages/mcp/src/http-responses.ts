import type { Logger } from '@ctxbus/core/contract';
import { CtxbusError } from '@ctxbus/core/contract';
import { errorMessage } from './error-message.js';

export const WWW_AUTHENTICATE = { 'www-authenticate': 'Bearer realm="ctxbus"' };

/** A JSON-RPC error body, the shape MCP clients expect from a Streamable HTTP endpoint. */
export function jsonRpcErrorResponse(
  status: number,
  message: string,
  options: { code?: number; ctxbusCode?: string; headers?: Record<string, string> } = {},
): Response {
  const body = {
    jsonrpc: '2.0',
    id: null,
    error: {
      code: options.code ?? -32000,
      message,
      ...(options.ctxbusCode !== undefined && { data: { code: options.ctxbusCode } }),
    },
  };
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json', ...options.headers },
  });
}

/** An error from token checks or backend creation, as the HTTP answer it deserves. */
export function refusal(error: unknown, logger: Logger): Response {
  const message = errorMessage(error);
  if (CtxbusError.isInstance(error)) {
    if (error.code === 'unauthorized') {
      return jsonRpcErrorResponse(401, message, {
        ctxbusCode: error.code,
        headers: WWW_AUTHENTICATE,
      });
    }
    if (error.code === 'forbidden') {
      return jsonRpcErrorResponse(403, message, { ctxbusCode: error.code });
    }
    if (error.code === 'unavailable') {
      return jsonRpcErrorResponse(503, message, { ctxbusCode: error.code });
    }
  }
  logger.error({ err: error }, `MCP request failed: ${message}`);
  return jsonRpcErrorResponse(500, message, { code: -32603, ctxbusCode: 'internal' });
}

/**
 * Passes a response's body through, calling `onEnd` once when it finishes or the client goes
 * away: how the handler knows a session still has a live event stream.
 */
export function watchBody(response: Response, onEnd: () => void): Response {
  if (!response.body) {
    onEnd();
    return response;
  }
  const reader = response.body.getReader();
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    onEnd();
  };
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { value, done } = await reader.read();
        if (done) {
          end();
          controller.close();
        } else {
          controller.enqueue(value);
        }
      } catch (error) {
        end();
        controller.error(error);
      }
    },
    async cancel(reason) {
      end();
      await reader.cancel(reason);
    },
  });
  return new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}
