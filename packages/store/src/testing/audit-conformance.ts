import type { AuditEvent } from '@ctxbus/core';
import { AUDIT_GENESIS } from '@ctxbus/core';
import { expect } from 'vitest';
import type { Store, TaskEventAudit } from '../store.js';
import type { ConformanceHarness } from './conformance-harness.js';
import { rejectsWith } from './conformance-harness.js';

// The audit-log half of the store contract (see runStoreConformance, which runs these).

export const AUDIT_CASES = [
  'audit-append-list',
  'audit-verify',
  'audit-tamper',
  'audit-teams',
  'audit-concurrent-appends',
  'audit-task-event-once',
  'audit-task-events-batch',
  'task-outbox',
] as const;

export type AuditCase = (typeof AUDIT_CASES)[number];

export interface AuditHarness extends ConformanceHarness {
  /**
   * Runs SQL straight in the store's database, around the store (as someone with the file or
   * a database login would); tables unqualified (`audit_log`). Required by `audit-tamper`.
   */
  execSql?(sql: string): Promise<void>;
  /** A second store over the same database (closed by the caller); absent: the same store. */
  sibling?(): Promise<Store>;
}

const event = (subject: string, data: Record<string, unknown> = {}): AuditEvent => ({
  kind: 'task.state',
  actor: 'hub',
  subject,
  data,
});

export function auditCases(h: AuditHarness): Record<AuditCase, () => Promise<void>> {
  const now = () => h.now().toISOString();
  const appendMany = async (team: string, count: number) => {
    for (let index = 1; index <= count; index++) {
      await h.store().appendAudit(team, event(`task_${index}`, { index }), now());
    }
  };

  return {
    async 'audit-append-list'() {
      const store = h.store();
      const first = await store.appendAudit(
        'acme',
        {
          kind: 'task.routed',
          actor: 'openclaw',
          subject: 'task_1',
          data: { decision: 'proxy', runtime: 'claude-code', nested: { b: [1, null], a: 'x' } },
        },
        now(),
      );
      expect(first).toMatchObject({
        seq: 1,
        teamId: 'acme',
        at: now(),
        kind: 'task.routed',
        actor: 'openclaw',
        subject: 'task_1',
        prevHash: AUDIT_GENESIS,
      });
      expect(first.hash).toMatch(/^[0-9a-f]{64}$/);
      h.advance(1_000);
      const second = await store.appendAudit(
        'acme',
        { ...event('task_1'), data: undefined },
        now(),
      );
      expect(second).toMatchObject({ seq: 2, prevHash: first.hash, data: {} });
      await appendMany('acme', 3);

      const all = await store.listAudit('acme', { limit: 100 });
      expect(all.map((record) => record.seq)).toEqual([1, 2, 3, 4, 5]);
      expect(all[0]).toEqual(first);
      expect(all[1]).toEqual(second);
      const page = await store.listAudit('acme', { afterSeq: 2, limit: 2 });
      expect(page.map((record) => record.seq)).toEqual([3, 4]);
      expect(await store.listAudit('acme', { afterSeq: 5, limit: 10 })).toEqual([]);

      // Only the known kinds, with an actor and a subject.
      await rejectsWith(
        store.appendAudit('acme', { ...event('x'), kind: 'task.renamed' as 'task.state' }, now()),
        'validation_failed',
      );
      await rejectsWith(
        store.appendAudit('acme', { ...event('x'), actor: '' }, now()),
        'validation_failed',
      );
      expect(await store.listAudit('acme', { limit: 100 })).toHaveLength(5);
    },

    async 'audit-verify'() {
      const store = h.store();
      expect(await store.verifyAudit('acme')).toEqual({
        ok: true,
        records: 0,
        head: AUDIT_GENESIS,
      });
      await appendMany('acme', 30);
      const last = (await store.listAudit('acme', { afterSeq: 29, limit: 1 }))[0];
      // Pages that do and do not divide the chain evenly.
      for (const pageSize of [7, 10, 1_000]) {
        expect(await store.verifyAudit('acme', { pageSize })).toEqual({
          ok: true,
          records: 30,
          head: last?.hash,
        });
      }
    },

    async 'audit-tamper'() {
      const exec = h.execSql;
      if (!exec) throw new Error('execSql is required unless audit-tamper is skipped');
      const store = h.store();
      const teams = ['t-update', 't-delete', 't-swap', 't-tail', 't-rehash'];
      for (const team of teams) await appendMany(team, 8);
      for (const team of teams) expect((await store.verifyAudit(team)).ok).toBe(true);

      await exec(
        `UPDATE audit_log SET data = '{"index":99}' WHERE team_id = 't-update' AND seq = 5`,
      );
      expect(await store.verifyAudit('t-update', { pageSize: 3 })).toMatchObject({
        ok: false,
        seq: 5,
        reason: expect.stringMatching(/changed/),
      });

      await exec(`DELETE FROM audit_log WHERE team_id = 't-delete' AND seq = 4`);
      expect(await store.verifyAudit('t-delete', { pageSize: 3 })).toMatchObject({
        ok: false,
        seq: 5,
        reason: expect.stringMatching(/expected record 4, found 5: a record is missing/),
      });

      // Records 3 and 6 trade places.
      await exec(`UPDATE audit_log SET seq = -seq WHERE team_id = 't-swap' AND seq IN (3, 6)`);
      await exec(
        `UPDATE audit_log SET seq = CASE seq WHEN -3 THEN 6 ELSE 3 END
          WHERE team_id = 't-swap' AND seq IN (-3, -6)`,
      );
      expect(await store.verifyAudit('t-swap')).toMatchObject({ ok: false, seq: 3 });

      // The newest records removed: the chain left is whole, but stops short of the head.
      await exec(`DELETE FROM audit_log WHERE team_id = 't-tail' AND seq >= 7`);
      expect(await store.verifyAudit('t-tail')).toMatchObject({
        ok: false,
        seq: 7,
        reason: expect.stringMatching(/removed/),
      });

      // A record rewritten with a hash recomputed for it breaks the link of the next one.
      const [sixth] = await store.listAudit('t-rehash', { afterSeq: 5, limit: 1 });
      await exec(
        `UPDATE audit_log SET subject = 'forged', hash = '${'f'.repeat(64)}' WHERE team_id = 't-rehash' AND seq = 6`,
      );
      expect(sixth).toBeDefined();
      expect(await store.verifyAudit('t-rehash')).toMatchObject({ ok: false, seq: 6 });

      // A store keeps appending after the tampered records; the untouched team still verifies.
      await appendMany('acme', 3);
      expect(await store.verifyAudit('acme')).toMatchObject({ ok: true, records: 3 });
    },

    async 'audit-teams'() {
      const store = h.store();
      for (let index = 0; index < 6; index++) {
        await store.appendAudit(index % 2 === 0 ? 'acme' : 'globex', event(`task_${index}`), now());
      }
      const acme = await store.listAudit('acme', { limit: 100 });
      const globex = await store.listAudit('globex', { limit: 100 });
      expect(acme.map((record) => [record.seq, record.subject])).toEqual([
        [1, 'task_0'],
        [2, 'task_2'],
        [3, 'task_4'],
      ]);
      expect(globex.map((record) => [record.seq, record.subject])).toEqual([
        [1, 'task_1'],
        [2, 'task_3'],
        [3, 'task_5'],
      ]);
      expect(globex[0]?.prevHash).toBe(AUDIT_GENESIS);
      expect(new Set(globex.map((record) => record.teamId))).toEqual(new Set(['globex']));
      expect(await store.verifyAudit('acme')).toMatchObject({ ok: true, records: 3 });
      expect(await store.verifyAudit('globex')).toMatchObject({ ok: true, records: 3 });
      expect(await store.listAudit('initech', { limit: 10 })).toEqual([]);
    },

    async 'audit-concurrent-appends'() {
      const APPENDERS = 16;
      const EACH = 50;
      const other = h.sibling ? await h.sibling() : h.store();
      try {
        const stores = [h.store(), other];
        await Promise.all(
          Array.from({ length: APPENDERS }, async (_, appender) => {
            const store = stores[appender % 2] as Store;
            for (let index = 0; index < EACH; index++) {
              await store.appendAudit('acme', event(`a${appender}-${index}`), now());
            }
          }),
        );
        const records = [];
        for (let afterSeq = 0; ; ) {
          const page = await h.store().listAudit('acme', { afterSeq, limit: 300 });
          records.push(...page);
          const last = page.at(-1);
          if (!last) break;
          afterSeq = last.seq;
        }
        expect(records.map((record) => record.seq)).toEqual(
          Array.from({ length: APPENDERS * EACH }, (_, index) => index + 1),
        );
        expect(new Set(records.map((record) => record.subject)).size).toBe(APPENDERS * EACH);
        expect(await other.verifyAudit('acme', { pageSize: 64 })).toMatchObject({
          ok: true,
          records: APPENDERS * EACH,
          head: records.at(-1)?.hash,
        });
      } finally {
        if (other !== h.store()) await other.close();
      }
    },
    async 'audit-task-event-once'() {
      const store = h.store();
      const other = h.sibling ? await h.sibling() : store;
      try {
        const records = [event('task_1', { step: 1 }), event('task_1', { step: 2 })];
        // The same event relayed twice at once (two hubs), and once more later.
        const entry = { teamId: 'acme', eventSeq: 7, events: records, now: now() };
        const [one, two] = await Promise.all([
          store.appendTaskEventAudits([entry]),
          other.appendTaskEventAudits([entry]),
        ]);
        expect([one?.[0]?.length, two?.[0]?.length].sort()).toEqual([0, 2]);
        expect(await store.appendTaskEventAudits([entry])).toEqual([[]]);
        const stored = await store.listAudit('acme', { limit: 10 });
        expect(stored.map((record) => record.data)).toEqual([{ step: 1 }, { step: 2 }]);
        expect(await store.verifyAudit('acme')).toMatchObject({ ok: true, records: 2 });
      } finally {
        if (other !== store) await other.close();
      }
    },
    async 'audit-task-events-batch'() {
      const store = h.store();
      const other = h.sibling ? await h.sibling() : store;
      try {
        const at = now();
        const batch = [
          { teamId: 'acme', eventSeq: 11, events: [event('task_a', { step: 1 })], now: at },
          { teamId: 'beta', eventSeq: 12, events: [event('task_b', { step: 1 })], now: at },
          {
            teamId: 'acme',
            eventSeq: 13,
            events: [event('task_a', { step: 2 }), event('task_a', { step: 3 })],
            now: at,
          },
        ];
        // One batch, an audit append of the same team between two batches, the batch again.
        const first = await store.appendTaskEventAudits(batch);
        expect(first.map((records) => records.length)).toEqual([1, 1, 2]);
        await other.appendAudit('acme', event('task_c', { step: 1 }), now());
        expect(await store.appendTaskEventAudits(batch)).toEqual([[], [], []]);
        const more = await other.appendTaskEventAudits([
          { teamId: 'acme', eventSeq: 14, events: [event('task_a', { step: 4 })], now: now() },
        ]);
        expect(more[0]?.map((record) => record.seq)).toEqual([5]);
        const acme = await store.listAudit('acme', { limit: 10 });
        expect(acme.map((record) => record.seq)).toEqual([1, 2, 3, 4, 5]);
        expect(acme.map((record) => record.data)).toEqual([
          { step: 1 },
          { step: 2 },
          { step: 3 },
          { step: 1 },
          { step: 4 },
        ]);
        expect(await store.verifyAudit('acme')).toMatchObject({ ok: true, records: 5 });
        expect(await store.verifyAudit('beta')).toMatchObject({ ok: true, records: 1 });
      } finally {
        if (other !== store) await other.close();
      }
    },

    async 'task-outbox'() {
      const store = h.store();
      const start = await store.taskRelayCursor();
      const { task } = await store.createTask('acme', {
        title: 'outbox',
        requiredCapabilities: ['search'],
        origin: 'openclaw',
        targetRuntime: 'claude-code',
      });
      const claimed = await store.claimTask({
        teamId: 'acme',
        runtime: 'claude-code',
        workerId: 'w1',
        leaseMs: 30_000,
      });
      const completed = await store.completeTask(
        'acme',
        task.id,
        claimed?.lease?.token ?? 0,
        { ok: true },
        {
          actor: 'claude-code',
        },
      );
      const outbox = await store.listTaskOutbox(start.seq, 10);
      expect(
        outbox.map(({ kind, actor, teamId, event, task }) => [
          kind,
          actor,
          teamId,
          event.to,
          task.state,
        ]),
      ).toEqual([
        ['created', 'openclaw', 'acme', 'SUBMITTED', 'SUBMITTED'],
        ['claimed', 'claude-code', 'acme', 'WORKING', 'WORKING'],
        ['completed', 'claude-code', 'acme', 'COMPLETED', 'COMPLETED'],
      ]);
      expect(outbox[2]?.task.result).toEqual({ ok: true });
      // The task as each change left it, exactly as a read shows it (PostgreSQL writes the
      // claim's in SQL, from the claimed row).
      expect(outbox[0]?.task).toEqual(task);
      expect(outbox[0]?.event).toMatchObject({ from: null, to: 'SUBMITTED', by: 'openclaw' });
      expect(outbox[1]?.task).toEqual(claimed);
      expect(outbox[1]?.event).toMatchObject({ from: 'SUBMITTED', note: 'claimed (attempt 1)' });
      // The usual complete (PostgreSQL: one statement) is what the rules decide: by the lease's
      // worker, no lease left, the task as a read shows it.
      expect(outbox[2]?.task).toEqual(completed);
      expect(completed.lease).toBeNull();
      expect(outbox[2]?.event).toMatchObject({ from: 'WORKING', to: 'COMPLETED', by: 'w1' });
      expect((await store.getTask('acme', task.id))?.task).toEqual(completed);
      // A relay batch: the events past the cursor (up to the limit), their audit records and
      // the cursor's move in one transaction; a second relay meanwhile is refused (null).
      const entry = (outboxEvent: (typeof outbox)[number]): TaskEventAudit => ({
        teamId: outboxEvent.teamId,
        eventSeq: outboxEvent.event.seq,
        events: [
          { kind: 'task.state' as const, actor: outboxEvent.actor, subject: outboxEvent.task.id },
        ],
        now: outboxEvent.event.at,
      });
      let nested: unknown = 'not tried';
      const firstTwo = await store.relayTaskBatch(2, async (events) => {
        nested = await store.relayTaskBatch(10, async () => []);
        return events.map(entry);
      });
      expect(nested).toBeNull();
      expect(firstTwo?.events).toBe(2);
      expect(firstTwo?.audited.map((audited) => audited.records.length)).toEqual([1, 1]);
      expect(await store.taskRelayCursor()).toEqual({ ...start, seq: outbox[1]?.event.seq });
      // A failure after the work rolls back the audit and the cursor together.
      await expect(
        store.relayTaskBatch(10, async () => {
          throw new Error('injected');
        }),
      ).rejects.toThrow('injected');
      expect(await store.taskRelayCursor()).toEqual({ ...start, seq: outbox[1]?.event.seq });
      const rest = await store.relayTaskBatch(10, async (events) => events.map(entry));
      expect(rest?.events).toBe(1);
      expect(await store.taskRelayCursor()).toEqual({ ...start, seq: outbox[2]?.event.seq });
      // Relayed again (as after a crash): nothing appended twice.
      expect(await store.relayTaskBatch(10, async () => [])).toEqual({ events: 0, audited: [] });
      expect(await store.appendTaskEventAudits(outbox.map(entry))).toEqual([[], [], []]);
    },
  };
}
