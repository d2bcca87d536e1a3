import type { ContextItem } from '@ctxbus/core';

// How much text one page of a list answers with. A page of 500 items of 100,000 characters
// each was ~100 MB of JSON held by the hub until the client read it; twenty such requests left
// unread held gigabytes. A page now ends at the item that reaches this budget (it always holds
// its first item), and its `nextBefore` continues from there: a client that pages, as the
// clients do, gets every item, a few pages more.

/** The text (title, summary, content, tags, runtime options) a page holds at most, in characters. */
export const MAX_PAGE_CHARS = 4 * 1024 * 1024;

/** What an item's JSON costs beyond its text (ids, dates, scope, source): a generous bound. */
const ITEM_OVERHEAD_CHARS = 1_024;

/** An item's share of a page: its text and its other fields. */
export function itemPageChars(item: ContextItem): number {
  let chars = ITEM_OVERHEAD_CHARS + item.title.length + item.summary.length + item.content.length;
  for (const tag of item.relevanceTags) chars += tag.length + 3;
  return chars + JSON.stringify(item.runtimeOptions).length;
}

/**
 * The first items of `items` whose text fits in `maxChars` (at least one), and whether any
 * were left out (then the page's cursor continues after the last one kept).
 */
export function withinPageBudget<T>(
  items: readonly T[],
  charsOf: (item: T) => number,
  maxChars = MAX_PAGE_CHARS,
): { page: T[]; cut: boolean } {
  let total = 0;
  for (let index = 0; index < items.length; index += 1) {
    total += charsOf(items[index] as T);
    if (total > maxChars && index > 0) return { page: items.slice(0, index), cut: true };
  }
  return { page: [...items], cut: false };
}
