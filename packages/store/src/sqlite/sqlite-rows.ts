import type { ContextItem } from '@ctxbus/core';
import type { ItemColumns } from '../rows/item-row.js';
import { itemFromRow } from '../rows/item-row.js';

// The items table's row, and the item it stores (shared by the store and its sweeper).

export interface ItemRow extends ItemColumns {
  tags: string;
  created_at: number;
  expires_at: number | null;
  runtime_options: string;
  redactions: string;
  consumed: number;
  consumed_by: string;
}

/** The item a row stores: JSON text columns parsed, times in epoch milliseconds. */
export function rowToItem(row: ItemRow): ContextItem {
  return itemFromRow(row, {
    tags: JSON.parse(row.tags) as string[],
    createdMs: row.created_at,
    expiresMs: row.expires_at,
    consumedBy: JSON.parse(row.consumed_by) as ContextItem['consumedBy'],
    runtimeOptions: JSON.parse(row.runtime_options) as ContextItem['runtimeOptions'],
    redactions: JSON.parse(row.redactions) as ContextItem['redactions'],
  });
}
