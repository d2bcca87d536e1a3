import type { ContextItem } from '@ctxbus/core';
import type { Change, ChangeKind } from '../store.js';

// A change-feed row: the change's columns beside the item's (both backends select them so).

export interface ChangeColumns {
  change_seq: number;
  change_kind: ChangeKind;
  team_id: string;
}

export function changeFromRow(row: ChangeColumns, item: ContextItem): Change {
  return { seq: row.change_seq, kind: row.change_kind, teamId: row.team_id, item };
}
