import type { ContextItem } from '@ctxbus/core/contract';
import type { ContextBackend } from '../context-backend.js';

/**
 * Tags that close a task. The same set as `DONE_TAGS` in @ctxbus/core's shared context (a test
 * keeps them equal): importing it would load core's main entry and its tokenizer.
 */
export const TASK_DONE_TAGS: ReadonlySet<string> = new Set([
  'done',
  'closed',
  'cancelled',
  'completed',
]);

/** How many recent task status items are scanned for the newest one per task. */
export const ACTIVE_TASK_SCAN = 500;

/**
 * Active tasks as the shared bundle defines them: the newest status item per `task:` scope key
 * (knowledge items aside), unless that status is tagged done. Scans the newest
 * `ACTIVE_TASK_SCAN` status items, so a task silent for longer than that is left out.
 */
export async function activeTasks(backend: ContextBackend): Promise<ContextItem[]> {
  const { items } = await backend.list({
    type: 'status',
    scopeKeyPrefix: 'task:',
    limit: ACTIVE_TASK_SCAN,
  });
  const newest = new Map<string, ContextItem>();
  for (const item of items) {
    if (item.key !== null || item.scopeKey === null || newest.has(item.scopeKey)) continue;
    newest.set(item.scopeKey, item);
  }
  return [...newest.values()].filter(
    (item) => !item.relevanceTags.some((tag) => TASK_DONE_TAGS.has(tag.toLowerCase())),
  );
}
