import type { AuditEvent, AuditRecord, AuditVerification } from '@ctxbus/core';
import { AUDIT_GENESIS, CtxbusError, chainAuditRecord } from '@ctxbus/core';
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
import type { PostgresContext, PostgresQuery } from './postgres-connection.js';
import type { Transaction } from './postgres-subscriptions.js';

// The audit log in PostgreSQL. An append makes sure the team has a head row and locks it (an
// upsert), links the new record to it and moves it, all in one READ COMMITTED transaction: the
// appends of one team take turns on that row lock (other teams' go on in parallel), on any
// number of hubs, so the chain never forks. The primary key (team_id, seq) refuses a
// duplicate sequence even so.

interface HeadRow {
  seq: string | number;
  hash: string;
}

export class PostgresAudit implements AuditLog {
  private readonly s: string;
  private readonly query: PostgresQuery;
  private readonly assertOpen: () => void;

  constructor(
    context: PostgresContext,
    private readonly transaction: Transaction,
  ) {
    this.s = context.s;
    this.query = context.query;
    this.assertOpen = context.assertOpen;
  }

  async appendAudit(teamId: string, event: AuditEvent, now: string): Promise<AuditRecord> {
    this.assertOpen();
    const { dataText, ...content } = normalizedAuditEvent(event);
    const at = checkAuditNow(now);
    return this.transaction('append to the audit log', async (client) => {
      // One statement makes sure the head row exists, locks it and reads it (ON CONFLICT DO
      // UPDATE locks the row it meets); one more writes the record and moves the head. The
      // lock is held for that statement and the commit only.
      const head = (
        await client.query<HeadRow>(
          `INSERT INTO ${this.s}.audit_heads AS h (team_id, seq, hash) VALUES ($1, 0, $2)
           ON CONFLICT (team_id) DO UPDATE SET seq = h.seq
           RETURNING seq, hash`,
          [teamId, AUDIT_GENESIS],
        )
      ).rows[0];
      if (!head) throw new CtxbusError('internal', `no audit head for team ${teamId}`);
      const headSeq = Number(head.seq);
      const record = chainAuditRecord(headSeq === 0 ? null : ({ hash: head.hash } as AuditRecord), {
        seq: headSeq + 1,
        teamId,
        at,
        ...content,
      });
      await client.query(
        `WITH appended AS (
           INSERT INTO ${this.s}.audit_log (${AUDIT_COLUMNS})
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
         )
         UPDATE ${this.s}.audit_heads SET seq = $2, hash = $9 WHERE team_id = $1`,
        [
          teamId,
          record.seq,
          at,
          record.kind,
          record.actor,
          record.subject,
          dataText,
          record.prevHash,
          record.hash,
        ],
      );
      return record;
    });
  }

  async listAudit(teamId: string, options: ListAuditOptions): Promise<AuditRecord[]> {
    this.assertOpen();
    const { afterSeq, limit } = auditListBounds(options);
    return this.page(teamId, afterSeq, limit);
  }

  async verifyAudit(teamId: string, options: VerifyAuditOptions = {}): Promise<AuditVerification> {
    this.assertOpen();
    const [head] = await this.query<HeadRow>(
      'read the audit head',
      `SELECT seq, hash FROM ${this.s}.audit_heads WHERE team_id = $1`,
      [teamId],
    );
    return verifyAuditPages(
      (afterSeq, limit) => this.page(teamId, afterSeq, limit),
      Number(head?.seq ?? 0),
      options.pageSize,
    );
  }

  private async page(teamId: string, afterSeq: number, limit: number): Promise<AuditRecord[]> {
    const rows = await this.query<AuditRow>(
      'read the audit log',
      `SELECT ${AUDIT_COLUMNS} FROM ${this.s}.audit_log WHERE team_id = $1 AND seq > $2
        ORDER BY seq LIMIT $3`,
      [teamId, afterSeq, limit],
      true,
    );
    return rows.map(auditFromRow);
  }
}
