import type { Logger } from '@ctxbus/core/contract';
import { CtxbusError } from '@ctxbus/core/contract';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import {
  ErrorCode,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import type { ContextBackend } from '../context-backend.js';
import { errorMessage } from '../error-message.js';
import { RpcError } from '../rpc-error.js';
import type { ResourceSubscriptionsOptions } from './resource-subscriptions.js';
import { ResourceSubscriptions } from './resource-subscriptions.js';
import { isKnownResourceUri } from './resource-uris.js';

export type UpdateOptions = Pick<ResourceSubscriptionsOptions, 'intervalMs' | 'readyTimeoutMs'>;

/**
 * Handles resources/subscribe and resources/unsubscribe (McpServer leaves both to us) and sends
 * `notifications/resources/updated` from the backend's live stream. The stream stops when the
 * server closes: the hook chains onto `server.server.onclose`, so whoever sets it later must
 * chain too rather than replace it.
 */
export function registerSubscriptions(
  server: McpServer,
  context: { backend: ContextBackend; logger: Logger; updates?: UpdateOptions | undefined },
): void {
  const subscriptions = new ResourceSubscriptions({
    backend: context.backend,
    logger: context.logger,
    notify: (uri) => server.server.sendResourceUpdated({ uri }),
    ...context.updates,
  });
  server.server.setRequestHandler(SubscribeRequestSchema, async (request) => {
    const { uri } = request.params;
    if (!isKnownResourceUri(uri)) {
      throw new RpcError(ErrorCode.InvalidParams, `cannot subscribe to ${uri}: no such resource`);
    }
    try {
      await subscriptions.subscribe(uri);
    } catch (error) {
      const limit = CtxbusError.isInstance(error) && error.code === 'limit_reached';
      throw new RpcError(
        limit ? ErrorCode.InvalidRequest : ErrorCode.InternalError,
        `cannot subscribe to ${uri}: ${errorMessage(error)}`,
      );
    }
    return {};
  });
  server.server.setRequestHandler(UnsubscribeRequestSchema, (request) => {
    subscriptions.unsubscribe(request.params.uri);
    return {};
  });
  const previousOnClose = server.server.onclose;
  server.server.onclose = () => {
    subscriptions.close();
    previousOnClose?.();
  };
}
