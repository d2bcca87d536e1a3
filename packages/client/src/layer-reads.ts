import type { ContextItem } from '@ctxbus/core/contract';
import { CtxbusError } from '@ctxbus/core/contract';
import type { CtxbusClient } from './ctxbus-client.js';

// What the blackboard and the persistent resources both do on the bus: read every item of a
// keyed listing, and remove a key's value when there is one.

const PAGE = 500;

/** All items of a keyed listing, oldest first (the hub lists newest first, a page at a time). */
export async function listAll(
  client: Pick<CtxbusClient, 'list'>,
  params: { keyPrefix?: string; key?: string; tags: string },
): Promise<ContextItem[]> {
  const items: ContextItem[] = [];
  let before: number | undefined;
  for (;;) {
    const page = await client.list({
      ...params,
      limit: PAGE,
      ...(before !== undefined && { before }),
    });
    items.push(...page.items);
    if (page.nextBefore === null) break;
    before = page.nextBefore;
  }
  return items.sort((a, b) => a.seq - b.seq);
}

/** Removes a key's value and history; false when the caller sees no live value of it. */
export async function forgetIfPresent(
  client: Pick<CtxbusClient, 'forget'>,
  key: string,
): Promise<boolean> {
  try {
    return (await client.forget(key)).seq !== null;
  } catch (error) {
    if (CtxbusError.isInstance(error) && error.code === 'not_found') return false;
    throw error;
  }
}
