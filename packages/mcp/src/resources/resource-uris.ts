import type { StreamEvent } from '@ctxbus/core/contract';
import { itemIdSchema } from '@ctxbus/core/contract';

export const TEAM_CONTEXT_URI = 'team-context://current';
export const ACTIVE_TASKS_URI = 'task://active';
export const RECENT_DECISIONS_URI = 'decisions://recent';
export const ITEM_URI_TEMPLATE = 'context://items/{id}';

const ITEM_URI_PREFIX = 'context://items/';

export function itemUri(id: string): string {
  return `${ITEM_URI_PREFIX}${id}`;
}

/** The item id of a `context://items/{id}` URI, or undefined for any other URI. */
export function itemIdOfUri(uri: string): string | undefined {
  if (!uri.startsWith(ITEM_URI_PREFIX)) return undefined;
  const id = uri.slice(ITEM_URI_PREFIX.length);
  return itemIdSchema.safeParse(id).success ? id : undefined;
}

export function isKnownResourceUri(uri: string): boolean {
  return (
    uri === TEAM_CONTEXT_URI ||
    uri === ACTIVE_TASKS_URI ||
    uri === RECENT_DECISIONS_URI ||
    itemIdOfUri(uri) !== undefined
  );
}

/**
 * Whether a change can alter what a resource reads. Generous where exactness would need the
 * resource's own query: any change may move the shared bundle, so it always counts.
 */
export function changeAffects(uri: string, change: StreamEvent): boolean {
  const { item } = change;
  switch (uri) {
    case TEAM_CONTEXT_URI:
      return true;
    case ACTIVE_TASKS_URI:
      return item.type === 'status' && (item.scopeKey?.startsWith('task:') ?? false);
    case RECENT_DECISIONS_URI:
      return item.type === 'decision';
    default:
      return itemIdOfUri(uri) === item.id;
  }
}
