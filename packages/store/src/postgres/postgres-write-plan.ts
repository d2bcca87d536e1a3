import { partitionRuntime } from '../search/search-partition.js';
import type { ChangeKind } from '../store.js';
import { WritePlan } from '../write/write-plan.js';
import type { PreparedItem } from './postgres-prepare.js';
import { itemRowJson } from './postgres-prepare.js';
import type { TermCount } from './postgres-term-stats.js';
import { countTerms } from './postgres-term-stats.js';

// A group commit's plan (the shared rules of write/write-plan.ts, decided in memory while the
// transaction holds the counter row lock, so nothing else can change the rows involved), and
// its decisions as rows for the one statement that persists them.

interface ChangeRow {
  seq: number;
  kind: ChangeKind;
  item_rid: number;
  team_id: string;
  at: string;
}

/** Rows for the persisting statement (JSON for json_populate_recordset). */
export interface PendingRows {
  /** New items' rows: JSON objects already escaped for an E'' literal. */
  items: string[];
  updates: Record<string, unknown>[];
  changes: ChangeRow[];
  /** Search statistics of the new items, by partition (see TermStatistics). */
  terms: TermCount[];
  seq: number;
  createdItems: number;
}

export class PostgresWritePlan extends WritePlan<PreparedItem> {
  /** What changed since the last `markPersisted`, as rows for the persisting statement. */
  pending(): PendingRows {
    const planned = this.planned();
    const items: string[] = [];
    const indexed: { teamId: string; runtime: string; stems: readonly string[] }[] = [];
    for (const { input, item } of planned.created) {
      items.push(itemRowJson(input, item));
      indexed.push({
        teamId: item.teamId,
        runtime: partitionRuntime(item.visibility, item.source.runtime),
        stems: input.stems,
      });
    }
    const updates = planned.updated.map((item) => ({
      rid: item.seq,
      superseded_by: item.supersededBy,
      consumed: item.consumed,
      consumed_by: item.consumedBy,
    }));
    const changes = planned.changes.map((change) => ({
      seq: change.seq,
      kind: change.kind,
      item_rid: change.itemSeq,
      team_id: change.teamId,
      at: new Date(change.atMs).toISOString(),
    }));
    return {
      items,
      updates,
      changes,
      terms: countTerms(indexed),
      seq: planned.seq,
      createdItems: planned.created.length,
    };
  }
}
