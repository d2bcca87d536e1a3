import type { ContextItem, NewContextItem, Viewer } from '@ctxbus/core';
import { CtxbusError, taskOutputKey, taskStatusOf } from '@ctxbus/core';
import type { HubServices } from '../hub-services.js';

// A task's status items and its output line are the hub's: followers (the clients' one
// follower, the Telegram bot, A2A, the claim waiters) take a status item's state as the task's.
// A runtime's own item shaped like one ("task X COMPLETED", tag `task`, `runtimeOptions.task`)
// would end a follower with a result that never was, or wake workers for nothing; one that
// supersedes a status item by name would hide the task's live line. Refused, 403
// `reserved_item`: a task changes through its routes (complete, fail, update, cancel).

function reservedBy(item: Pick<ContextItem, 'type' | 'relevanceTags' | 'runtimeOptions' | 'key'>) {
  if (taskStatusOf(item)) return 'a task status item (type status, tag task, runtimeOptions.task)';
  // The hub's output keys (`task-output:<id>`) hold a colon, which a client's key cannot.
  if (item.key?.startsWith(taskOutputKey(''))) return `a task's output line (key ${item.key})`;
  return null;
}

function refusal(what: string, field: string): CtxbusError {
  return new CtxbusError(
    'forbidden',
    `${field}: ${what} is written by the hub only; a task changes through its routes (POST /api/tasks/:id/complete, fail, update, cancel)`,
    { details: { reason: 'reserved_item', field } },
  );
}

export async function assertNoTaskStatusForgery(
  services: HubServices,
  viewer: Viewer,
  items: readonly NewContextItem[],
): Promise<void> {
  for (const [index, item] of items.entries()) {
    const field = items.length > 1 ? `body.items[${index}]` : 'body';
    const what = reservedBy(item);
    if (what) throw refusal(what, field);
    if (item.supersedes === null) continue;
    const target = await services.store.getItem(viewer, item.supersedes);
    const targetWhat = target ? reservedBy(target) : null;
    if (targetWhat) throw refusal(`superseding ${targetWhat}`, `${field}.supersedes`);
  }
}
