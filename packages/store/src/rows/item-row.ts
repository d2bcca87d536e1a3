import type { ItemRowColumns, StoredItemValues } from '@ctxbus/core';

// Rows become items through core's one mapping (`itemFromColumns`, shared with the browser's
// Supabase reader); each backend decodes its stored values into `StoredValues` first.

/** The columns every backend stores as is. */
export interface ItemColumns extends ItemRowColumns {
  /** Hash of the writer's input: the same id with another hash is a conflict. */
  input_hash: string;
}

/** The values a backend stores in its own way, decoded. */
export type StoredValues = StoredItemValues;

export { itemFromColumns as itemFromRow } from '@ctxbus/core';
