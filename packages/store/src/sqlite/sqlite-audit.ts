import type { AuditEvent, AuditRecord, AuditVerification } from '@ctxbus/core';
import { AUDIT_GENESIS, chainAuditRecord } from '@ctxbus/core';
import type { AuditRow, UnauditedTaskEvent } from '../rows/audit-row.js';
import {
  AUDIT_COLUMNS,
  auditFromRow,
  auditListBounds,
  checkAuditNow,
  normalizedAuditEvent,
  verifyAuditPages,
  withTaskEventCoverage,
} from '../rows/audit-row.js';
import type { AuditLog, ListAuditOptions, TaskEventAudit, VerifyAuditOptions } from '../store.js';
import type { SqliteConnection } from './sqlite-connection.js';

// The audit log in the embedded store. An append reads the team's head (audit_heads) and
// writes the next record and the new head in one IMMEDIATE transaction: SQLite has one writer
// at a time, across processes too, so no two appends ever read the same head. The primary key
// (team_id, seq) refuses a duplicate sequence even so.

interface HeadRow {
  seq: number;
  hash: string;
}

/** A task event's records, validated and normalized first. */
const preparedAudit = (entry: TaskEventAudit) => ({
  ...entry,
  at: checkAuditNow(entry.now),
  normalized: entry.events.map(normalizedAuditEvent),
});

export class SqliteAudit implements AuditLog {
  constructor(private readonly connection: SqliteConnection) {}

  async appendAudit(teamId: string, event: AuditEvent, now: string): Promise<AuditRecord> {
    const at = checkAuditNow(now);
    const normalized = normalizedAuditEvent(event);
    return this.connection.transaction(() => this.append(teamId, normalized, at));
  }

  async appendTaskEventAudits(entries: readonly TaskEventAudit[]): Promise<AuditRecord[][]> {
    const prepared = entries.map(preparedAudit);
    return this.connection.transaction(() => this.appendPrepared(prepared));
  }

  /** `appendTaskEventAudits` inside the caller's transaction (the relay's batch). */
  appendTaskEventAuditsIn(entries: readonly TaskEventAudit[]): AuditRecord[][] {
    return this.appendPrepared(entries.map(preparedAudit));
  }

  private appendPrepared(prepared: readonly ReturnType<typeof preparedAudit>[]): AuditRecord[][] {
    return prepared.map(({ teamId, eventSeq, normalized, at }) => {
      const marked = this.connection
        .statement('SELECT 1 AS found FROM audit_task_events WHERE event_seq = ?')
        .get(eventSeq);
      if (marked) return [];
      const records = normalized.map((event) => this.append(teamId, event, at));
      this.connection
        .statement('INSERT INTO audit_task_events (event_seq, team_id, audit_seq) VALUES (?, ?, ?)')
        .run(eventSeq, teamId, records.at(-1)?.seq ?? this.head(teamId).seq);
      return records;
    });
  }

  /** Links one record to the team's head and moves it (inside the caller's transaction). */
  private append(
    teamId: string,
    { dataText, ...content }: ReturnType<typeof normalizedAuditEvent>,
    at: string,
  ): AuditRecord {
    const head = this.head(teamId);
    const record = chainAuditRecord(head.seq === 0 ? null : ({ hash: head.hash } as AuditRecord), {
      seq: head.seq + 1,
      teamId,
      at,
      ...content,
    });
    this.connection
      .statement(`INSERT INTO audit_log (${AUDIT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
      .run(
        teamId,
        record.seq,
        at,
        record.kind,
        record.actor,
        record.subject,
        dataText,
        record.prevHash,
        record.hash,
      );
    this.connection
      .statement(
        `INSERT INTO audit_heads (team_id, seq, hash) VALUES (?, ?, ?)
         ON CONFLICT (team_id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash`,
      )
      .run(teamId, record.seq, record.hash);
    return record;
  }

  async listAudit(teamId: string, options: ListAuditOptions): Promise<AuditRecord[]> {
    this.connection.assertOpen();
    const { afterSeq, limit } = auditListBounds(options);
    return this.page(teamId, afterSeq, limit);
  }

  async verifyAudit(teamId: string, options: VerifyAuditOptions = {}): Promise<AuditVerification> {
    this.connection.assertOpen();
    const headSeq = this.head(teamId).seq;
    const chain = await verifyAuditPages(
      async (afterSeq, limit) => this.page(teamId, afterSeq, limit),
      headSeq,
      options.pageSize,
    );
    return withTaskEventCoverage(chain, this.firstUnaudited(teamId));
  }

  /** The team's first task event the relay passed with no audit mark. */
  private firstUnaudited(teamId: string): UnauditedTaskEvent | undefined {
    return this.connection
      .statement(
        `SELECT e.seq, e.task_id, e.to_state FROM task_events e
           JOIN task_relay r ON r.name = 'tasks'
          WHERE e.team_id = ? AND e.kind IS NOT NULL AND e.seq > r.since AND e.seq <= r.seq
            AND NOT EXISTS (SELECT 1 FROM audit_task_events m WHERE m.event_seq = e.seq)
          ORDER BY e.seq LIMIT 1`,
      )
      .get(teamId) as UnauditedTaskEvent | undefined;
  }

  private head(teamId: string): HeadRow {
    const row = this.connection
      .statement('SELECT seq, hash FROM audit_heads WHERE team_id = ?')
      .get(teamId) as HeadRow | undefined;
    return row ?? { seq: 0, hash: AUDIT_GENESIS };
  }

  private page(teamId: string, afterSeq: number, limit: number): AuditRecord[] {
    const rows = this.connection
      .statement(
        `SELECT ${AUDIT_COLUMNS} FROM audit_log WHERE team_id = ? AND seq > ?
         ORDER BY seq LIMIT ?`,
      )
      .all(teamId, afterSeq, limit) as unknown as AuditRow[];
    return rows.map(auditFromRow);
  }
}
