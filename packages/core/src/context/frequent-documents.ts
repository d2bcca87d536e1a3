import type { UsageKind } from '../items/analytics-api-schemas.js';
import { usageDay } from '../items/analytics-api-schemas.js';
import type { ContextItem, ContextType } from '../items/context-item.js';
import { CONTEXT_TYPES } from '../items/context-item.js';
import type { ItemFilter, Viewer } from '../items/item-filter.js';
import { itemMatches } from '../items/item-filter.js';

/**
 * Seed 000's knowledge layer ends with `frequently_accessed_docs (pinned references)`: the
 * team's documents its runtimes used most, from the context analytics. The rules live here
 * once, for the hub, the stores' reference and the tests:
 *
 * - A document is a live, current item that is not a decision (a decision, keyed or not, is a
 *   recent decision) and is keyed under one of `DOCUMENT_KEY_ROOTS` (`docs/…` pinned
 *   references, `resource/…` persistent resources, …) or carries one of `DOCUMENT_TAGS`.
 * - Its uses are searches that returned it and consumptions, by every runtime of the team, of
 *   any version of it the viewer may read (a rewritten document keeps its standing). Not
 *   injections: the bundle injects its own entries, so counting them would keep a document
 *   listed for ever.
 * - The window is the `FREQUENT_DOCS_WINDOW_DAYS` whole UTC days before today: today's uses
 *   count from tomorrow, so the list (and the prompt it sits in) changes at most once a day,
 *   unless a listed document changes, expires or is replaced.
 * - The most used come first, ties by item id; the section shows them by label (key or title)
 *   so that a change of rank among the same documents does not reorder the prompt.
 */

export const DOCUMENT_KEY_ROOTS = ['docs', 'references', 'resource', 'files'] as const;
export const DOCUMENT_TAGS = ['doc', 'document', 'reference', 'file', 'resource'] as const;
export const FREQUENT_DOCS_WINDOW_DAYS = 14;
export const FREQUENT_DOC_USES: readonly UsageKind[] = ['consumed', 'searched'];
/** Cap on a listed document's summary, in tokens: the section points, it does not quote. */
export const FREQUENT_DOC_ENTRY_TOKENS = 60;

const DOCUMENT_TYPES: readonly ContextType[] = CONTEXT_TYPES.filter((type) => type !== 'decision');

/** The filters a document matches (any of them), as every store backend understands them. */
export function documentFilters(): ItemFilter[] {
  return [
    ...DOCUMENT_KEY_ROOTS.map((root) => ({ keyPrefix: root, types: DOCUMENT_TYPES })),
    { tags: [...DOCUMENT_TAGS], types: DOCUMENT_TYPES },
  ];
}

/** Whether a viewer may read the item at `now` and it is a document. */
export function isDocument(item: ContextItem, viewer: Viewer, now: Date): boolean {
  return documentFilters().some((filter) => itemMatches(item, viewer, filter, now));
}

const DAY_MS = 86_400_000;

/** The days whose uses rank documents at `now`: the whole UTC days before today. */
export function frequentDocsWindow(now: Date): { fromDay: string; toDay: string } {
  const today = Date.parse(`${usageDay(now)}T00:00:00.000Z`);
  return {
    fromDay: usageDay(today - FREQUENT_DOCS_WINDOW_DAYS * DAY_MS),
    toDay: usageDay(today - DAY_MS),
  };
}

/** One item's uses of each kind in the window, by every runtime (the reference's input). */
export interface ItemUses {
  itemId: string;
  uses: number;
}

/** An item with the uses that rank it. */
export interface UsedItem {
  item: ContextItem;
  uses: number;
}

/**
 * The reference ranking in memory (what `Store.mostUsedItems` must return for the document
 * filters): `items` holds every version the store keeps (superseded ones too), `uses` the
 * window's uses per item id. Most used first, ties by id; unused documents are left out.
 */
export function rankDocuments(
  items: readonly ContextItem[],
  uses: readonly ItemUses[],
  viewer: Viewer,
  now: Date,
  limit: number,
): UsedItem[] {
  const readable = (item: ContextItem) =>
    item.teamId === viewer.teamId &&
    (item.visibility === 'team' || item.source.runtime === viewer.runtime);
  const byId = new Map(items.filter(readable).map((item) => [item.id, item]));
  const byDocument = new Map<string, number>();
  for (const { itemId, uses: count } of uses) {
    const version = byId.get(itemId);
    if (!version || count <= 0) continue;
    const document = version.key === null ? `id:${version.id}` : `key:${version.key}`;
    byDocument.set(document, (byDocument.get(document) ?? 0) + count);
  }
  return [...byId.values()]
    .filter((item) => isDocument(item, viewer, now))
    .map((item) => ({
      item,
      uses: byDocument.get(item.key === null ? `id:${item.id}` : `key:${item.key}`) ?? 0,
    }))
    .filter((entry) => entry.uses > 0)
    .sort((a, b) => b.uses - a.uses || compareIds(a.item.id, b.item.id))
    .slice(0, limit);
}

/** Byte order of ids (what every backend sorts ties by). */
export function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
