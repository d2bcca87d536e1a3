import type { ContextItem, Task } from '@ctxbus/core/contract';
import { ACTIVE_TASK_STATES } from '@ctxbus/core/contract';
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

/** Most tasks task://active lists (the newest created). */
export const ACTIVE_TASK_LIMIT = 50;

/** How many recent task status items are scanned for agents' own task threads. */
export const ACTIVE_TASK_SCAN = 500;

/** A scope key naming a task of the hub's task store (`task:task_<uuid>`). */
const HUB_TASK_SCOPE_KEY =
  /^task:task_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export interface ActiveTasks {
  /** The team's non-terminal tasks from the task store, newest first. */
  tasks: Task[];
  /**
   * Status threads agents keep about tasks the store does not hold (scope key `task:T-42`):
   * the newest status item per scope key, unless tagged done.
   */
  otherStatus: ContextItem[];
}

/**
 * What task://active shows: the task store's open tasks (SUBMITTED, WORKING, INPUT_REQUIRED,
 * AUTH_REQUIRED; finished ones never linger), then agents' own task status threads. The
 * threads come from the newest `ACTIVE_TASK_SCAN` status items, so a thread silent for longer
 * than that is left out.
 */
export async function activeTasks(backend: ContextBackend): Promise<ActiveTasks> {
  const [{ tasks }, { items }] = await Promise.all([
    backend.tasks({ state: [...ACTIVE_TASK_STATES], order: 'newest', limit: ACTIVE_TASK_LIMIT }),
    backend.list({ type: 'status', scopeKeyPrefix: 'task:', limit: ACTIVE_TASK_SCAN }),
  ]);
  const newest = new Map<string, ContextItem>();
  for (const item of items) {
    if (item.key !== null || item.scopeKey === null || newest.has(item.scopeKey)) continue;
    newest.set(item.scopeKey, item);
  }
  const otherStatus = [...newest.values()].filter(
    (item) =>
      !HUB_TASK_SCOPE_KEY.test(item.scopeKey ?? '') &&
      !item.relevanceTags.some((tag) => TASK_DONE_TAGS.has(tag.toLowerCase())),
  );
  return { tasks, otherStatus };
}
