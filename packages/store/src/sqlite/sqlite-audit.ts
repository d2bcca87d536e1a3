import type { AuditEvent, AuditRecord, AuditVerification } from '@ctxbus/core';
import { AUDIT_GENESIS, chainAuditRecord } from '@ctxbus/core';
import type { AuditRow } from '../rows/audit-row.js';
import {
  AUDIT_COLUMNS,
  auditFromRow,
  auditListBounds,
  checkAuditNow,
  normalizedAuditEvent,
  verifyAuditPages,
} from '../rows/audit-row.js';
import type { AuditLog, ListAuditOptions, VerifyAuditOptions } from '../store.js';
import type { SqliteConnection } from './sqlite-connection.js';

// The audit log in the embedded store. An append reads the team's head (audit_heads) and
// writes the next record and the new head in one IMMEDIATE transaction: SQLite has one writer
// at a time, across processes too, so no two appends ever read the same head. The primary key
// (team_id, seq) refuses a duplicate sequence even so.

interface HeadRow {
  seq: number;
  hash: string;
}

export class SqliteAudit implements AuditLog {
  constructor(private readonly connection: SqliteConnection) {}

  async appendAudit(teamId: string, event: AuditEvent, now: string): Promise<AuditRecord> {
    const { dataText, ...content } = normalizedAuditEvent(event);
    const at = checkAuditNow(now);
    return this.connection.transaction(() => {
      const head = this.head(teamId);
      const record = chainAuditRecord(
        head.seq === 0 ? null : ({ hash: head.hash } as AuditRecord),
        { seq: head.seq + 1, teamId, at, ...content },
      );
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
    });
  }

  async listAudit(teamId: string, options: ListAuditOptions): Promise<AuditRecord[]> {
    this.connection.assertOpen();
    const { afterSeq, limit } = auditListBounds(options);
    return this.page(teamId, afterSeq, limit);
  }

  async verifyAudit(teamId: string, options: VerifyAuditOptions = {}): Promise<AuditVerification> {
    this.connection.assertOpen();
    const headSeq = this.head(teamId).seq;
    return verifyAuditPages(
      async (afterSeq, limit) => this.page(teamId, afterSeq, limit),
      headSeq,
      options.pageSize,
    );
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
