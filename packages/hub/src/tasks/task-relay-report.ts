import { taskStatusOf } from '@ctxbus/core';
import type { Store } from '@ctxbus/store';
import { derivedIds, unkeyedTaskEventItemId } from './derived-ids.js';
import { taskEventAudit } from './task-event-audit.js';

// What "every committed task change is announced once and audited once" means, checked
// against a store: for each task event of a team, its status item (the id derived from the
// event; for an event relayed before the ids were keyed, the unkeyed id) exists and reports the
// event's state (no runtime can write an item that does: task-status-guard.ts); and the team's audit records, per task, are
// exactly the records of its events in order, none missing and none twice. Tests and
// `ctxbus doctor`-like checks read it.

export interface TaskRelayReport {
  /** The team's task events in the outbox. */
  events: number;
  /** Where the relay's cursor is (every event up to it should be relayed). */
  cursor: number;
  /** Events with no status item (or one reporting another state). */
  unannounced: number[];
  /** Tasks whose audit records are not exactly their events' records, once, in order. */
  misaudited: string[];
  /** Audit records found for the team's tasks, and how many its events call for. */
  auditRecords: number;
  expectedAuditRecords: number;
}

const PAGE = 1_000;

export async function taskRelayReport(store: Store, teamId: string): Promise<TaskRelayReport> {
  const ids = derivedIds(await store.derivedIdSecret());
  const expected = new Map<string, string[]>();
  const unannounced: number[] = [];
  let events = 0;
  for (let after = 0; ; ) {
    const page = await store.listTaskOutbox(after, PAGE);
    for (const outbox of page.filter((event) => event.teamId === teamId)) {
      events += 1;
      const kinds = expected.get(outbox.task.id) ?? [];
      kinds.push(...taskEventAudit(outbox).map((record) => record.kind));
      expected.set(outbox.task.id, kinds);
      const viewer = { teamId, runtime: outbox.task.origin };
      const { id } = outbox.task;
      const item =
        (await store.getItem(viewer, ids.taskEvent(id, outbox.event.seq))) ??
        (await store.getItem(viewer, unkeyedTaskEventItemId(id, outbox.event.seq)));
      const reported = item ? taskStatusOf(item) : null;
      if (reported?.state !== outbox.event.to) unannounced.push(outbox.event.seq);
    }
    const last = page.at(-1);
    if (page.length < PAGE || !last) break;
    after = last.event.seq;
  }
  const found = new Map<string, string[]>();
  let auditRecords = 0;
  for (let after = 0; ; ) {
    const page = await store.listAudit(teamId, { afterSeq: after, limit: PAGE });
    for (const record of page) {
      if (!expected.has(record.subject)) continue;
      auditRecords += 1;
      found.set(record.subject, [...(found.get(record.subject) ?? []), record.kind]);
    }
    const last = page.at(-1);
    if (page.length < PAGE || !last) break;
    after = last.seq;
  }
  const misaudited = [...expected].filter(
    ([taskId, kinds]) => (found.get(taskId) ?? []).join() !== kinds.join(),
  );
  return {
    events,
    cursor: (await store.taskRelayCursor()).seq,
    unannounced,
    misaudited: misaudited.map(([taskId]) => taskId),
    auditRecords,
    expectedAuditRecords: [...expected.values()].reduce((sum, kinds) => sum + kinds.length, 0),
  };
}
