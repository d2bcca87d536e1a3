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
  // A refusal for now (too many sessions, a hub shutting down) says when to come back, as the
  // REST API's do.
  const later = status === 429 || status === 503 ? { 'retry-after': '1' } : {};
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json', ...later, ...options.headers },
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
 *
 * With `maxUnreadBytes` (a long-lived event stream), the body is read as it is produced and
 * what the client has not read yet is counted: past the bound, the stream is ended (the
 * source cancelled, its queue dropped, `onOverflow` told). The SDK queues every notification
 * without waiting for its reader, so a client that stops reading would otherwise hold memory
 * that grows for as long as the session lives.
 */
export function watchBody(
  response: Response,
  onEnd: () => void,
  bound?: { maxUnreadBytes: number; onOverflow: () => void },
): Response {
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
  const source = bound
    ? {
        start(controller: ReadableStreamDefaultController<Uint8Array>) {
          void pump(reader, controller, bound, end);
        },
        async cancel(reason: unknown) {
          end();
          await reader.cancel(reason);
        },
      }
    : {
        async pull(controller: ReadableStreamDefaultController<Uint8Array>) {
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
        async cancel(reason: unknown) {
          end();
          await reader.cancel(reason);
        },
      };
  const body = new ReadableStream<Uint8Array>(
    source,
    bound ? new ByteLengthQueuingStrategy({ highWaterMark: bound.maxUnreadBytes }) : undefined,
  );
  return new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}

/** Moves chunks from `reader` to `controller` as they come, until the unread bytes pass the bound. */
async function pump(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  controller: ReadableStreamDefaultController<Uint8Array>,
  bound: { maxUnreadBytes: number; onOverflow: () => void },
  end: () => void,
): Promise<void> {
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) {
        end();
        controller.close();
        return;
      }
      controller.enqueue(value);
      // desiredSize: the bound less what is queued and not yet read by the client.
      if ((controller.desiredSize ?? 0) < 0) {
        end();
        bound.onOverflow();
        controller.error(new Error(`the reader left over ${bound.maxUnreadBytes} bytes unread`));
        await reader.cancel('unread bytes past the bound').catch(() => {});
        return;
      }
    }
  } catch (error) {
    end();
    try {
      controller.error(error);
    } catch {
      // The client went away first.
    }
  }
}
