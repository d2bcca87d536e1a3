import type { AuditEvent, AuditRecord, AuditVerification } from '@ctxbus/core';
import { AUDIT_GENESIS, CtxbusError, chainAuditRecord } from '@ctxbus/core';
import type { PoolClient } from 'pg';
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

interface Head {
  seq: number;
  hash: string;
}

/** A task event's records, validated and normalized before any round trip. */
type PreparedAudit = TaskEventAudit & {
  at: string;
  normalized: ReturnType<typeof normalizedAuditEvent>[];
};

const preparedAudits = (entries: readonly TaskEventAudit[]): PreparedAudit[] =>
  entries.map((entry) => ({
    ...entry,
    at: checkAuditNow(entry.now),
    normalized: entry.events.map(normalizedAuditEvent),
  }));

/** A record chained in memory, waiting for the batch's insert. */
interface AuditInsert {
  record: AuditRecord;
  dataText: string;
  eventSeq: number;
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
    const normalized = normalizedAuditEvent(event);
    const at = checkAuditNow(now);
    return this.transaction('append to the audit log', (client) =>
      this.append(client, teamId, normalized, at),
    );
  }

  /**
   * One transaction for the relay's batch, in two statements whatever its size: the first
   * marks every event (a second append of the same event waits on its mark, the primary key,
   * until the first commits, then finds it and writes nothing) and locks and reads the heads of
   * the batch's teams; the records are chained in memory; the second inserts them all, moves
   * the heads and notes each event's last record on its mark.
   */
  async appendTaskEventAudits(entries: readonly TaskEventAudit[]): Promise<AuditRecord[][]> {
    this.assertOpen();
    const prepared = preparedAudits(entries);
    if (prepared.length === 0) return [];
    return this.transaction('append task events to the audit log', (client) =>
      this.appendPrepared(client, prepared),
    );
  }

  /**
   * The relay's batch on `client`, inside its transaction: `appendTaskEventAudits` without a
   * transaction of its own, the task relay's cursor moved to `relayedTo` with the marks.
   */
  async appendTaskEventAuditsOn(
    client: PoolClient,
    entries: readonly TaskEventAudit[],
    relayedTo: number,
  ): Promise<AuditRecord[][]> {
    const prepared = preparedAudits(entries);
    if (prepared.length > 0) return this.appendPrepared(client, prepared, relayedTo);
    await client.query(
      `UPDATE ${this.s}.task_relay SET seq = greatest(seq, $1) WHERE name = 'tasks'`,
      [relayedTo],
    );
    return [];
  }

  private async appendPrepared(
    client: PoolClient,
    prepared: readonly PreparedAudit[],
    relayedTo: number | null = null,
  ): Promise<AuditRecord[][]> {
    const { marked, heads } = await this.markAndLock(client, prepared, relayedTo);
    const rows: AuditInsert[] = [];
    const results = prepared.map(({ teamId, eventSeq, normalized, at }) => {
      if (!marked.has(eventSeq)) return [];
      return normalized.map(({ dataText, ...content }) => {
        const head = heads.get(teamId) as Head;
        const record = chainAuditRecord(
          head.seq === 0 ? null : ({ hash: head.hash } as AuditRecord),
          { seq: head.seq + 1, teamId, at, ...content },
        );
        heads.set(teamId, { seq: record.seq, hash: record.hash });
        rows.push({ record, dataText, eventSeq });
        return record;
      });
    });
    if (rows.length > 0) await this.insertChained(client, rows, heads);
    return results;
  }

  /**
   * Marks the batch's events (the new ones come back) and locks its teams' heads; with
   * `relayedTo`, moves the task relay's cursor there too.
   */
  private async markAndLock(
    client: PoolClient,
    entries: readonly { teamId: string; eventSeq: number }[],
    relayedTo: number | null,
  ): Promise<{ marked: Set<number>; heads: Map<string, Head> }> {
    const sorted = [...entries].sort((a, b) => a.eventSeq - b.eventSeq);
    const teams = [...new Set(entries.map((entry) => entry.teamId))].sort();
    const { rows } = await client.query<{ mark: string | null; team: string | null } & HeadRow>(
      `WITH marked AS (
         INSERT INTO ${this.s}.audit_task_events (event_seq, team_id, audit_seq)
         SELECT m.seq, m.team, 0 FROM unnest($1::int8[], $2::text[]) AS m(seq, team)
         ON CONFLICT (event_seq) DO NOTHING
         RETURNING event_seq
       ), heads AS (
         INSERT INTO ${this.s}.audit_heads AS h (team_id, seq, hash)
         SELECT t.team, 0, $4 FROM unnest($3::text[]) AS t(team)
         ON CONFLICT (team_id) DO UPDATE SET seq = h.seq
         RETURNING team_id, seq, hash
       ), relayed AS (
         UPDATE ${this.s}.task_relay SET seq = greatest(seq, $5::int8)
          WHERE name = 'tasks' AND $5::int8 IS NOT NULL
       )
       SELECT event_seq::text AS mark, NULL AS team, NULL::int8 AS seq, NULL AS hash FROM marked
       UNION ALL SELECT NULL, team_id, seq, hash FROM heads`,
      [
        sorted.map((entry) => entry.eventSeq),
        sorted.map((entry) => entry.teamId),
        teams,
        AUDIT_GENESIS,
        relayedTo,
      ],
    );
    const marked = new Set<number>();
    const heads = new Map<string, Head>();
    for (const row of rows) {
      if (row.mark !== null) marked.add(Number(row.mark));
      else if (row.team !== null) heads.set(row.team, { seq: Number(row.seq), hash: row.hash });
    }
    for (const team of teams) {
      if (!heads.has(team)) throw new CtxbusError('internal', `no audit head for team ${team}`);
    }
    return { marked, heads };
  }

  /** Inserts chained records, moves their teams' heads and completes their events' marks. */
  private async insertChained(
    client: PoolClient,
    rows: readonly AuditInsert[],
    heads: ReadonlyMap<string, Head>,
  ): Promise<void> {
    const column = <T>(pick: (row: AuditInsert) => T) => rows.map(pick);
    const lastOfEvent = new Map(rows.map((row) => [row.eventSeq, row.record.seq]));
    const moved = [...heads].filter(([team]) => rows.some((row) => row.record.teamId === team));
    await client.query(
      `WITH appended AS (
         INSERT INTO ${this.s}.audit_log (${AUDIT_COLUMNS})
         SELECT * FROM unnest($1::text[], $2::int8[], $3::text[], $4::text[], $5::text[],
           $6::text[], $7::text[], $8::text[], $9::text[])
       ), moved AS (
         UPDATE ${this.s}.audit_heads h SET seq = x.seq, hash = x.hash
           FROM unnest($10::text[], $11::int8[], $12::text[]) AS x(team, seq, hash)
          WHERE h.team_id = x.team
       )
       UPDATE ${this.s}.audit_task_events m SET audit_seq = x.audit_seq
         FROM unnest($13::int8[], $14::int8[]) AS x(event_seq, audit_seq)
        WHERE m.event_seq = x.event_seq`,
      [
        column((row) => row.record.teamId),
        column((row) => row.record.seq),
        column((row) => row.record.at),
        column((row) => row.record.kind),
        column((row) => row.record.actor),
        column((row) => row.record.subject),
        column((row) => row.dataText),
        column((row) => row.record.prevHash),
        column((row) => row.record.hash),
        moved.map(([team]) => team),
        moved.map(([, head]) => head.seq),
        moved.map(([, head]) => head.hash),
        [...lastOfEvent.keys()],
        [...lastOfEvent.values()],
      ],
    );
  }

  /** Makes sure the team's head row exists, locks it and reads it (held until commit). */
  private async lockHead(client: PoolClient, teamId: string): Promise<Head> {
    const head = (
      await client.query<HeadRow>(
        `INSERT INTO ${this.s}.audit_heads AS h (team_id, seq, hash) VALUES ($1, 0, $2)
         ON CONFLICT (team_id) DO UPDATE SET seq = h.seq
         RETURNING seq, hash`,
        [teamId, AUDIT_GENESIS],
      )
    ).rows[0];
    if (!head) throw new CtxbusError('internal', `no audit head for team ${teamId}`);
    return { seq: Number(head.seq), hash: head.hash };
  }

  /**
   * One statement locks and reads the team's head (ON CONFLICT DO UPDATE locks the row it
   * meets; once per transaction when `heads` follows it), one more writes the record and
   * moves the head. The lock is held until the caller's transaction commits.
   */
  private async append(
    client: PoolClient,
    teamId: string,
    { dataText, ...content }: ReturnType<typeof normalizedAuditEvent>,
    at: string,
    heads: Map<string, Head> = new Map(),
  ): Promise<AuditRecord> {
    const head = heads.get(teamId) ?? (await this.lockHead(client, teamId));
    const record = chainAuditRecord(head.seq === 0 ? null : ({ hash: head.hash } as AuditRecord), {
      seq: head.seq + 1,
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
    heads.set(teamId, { seq: record.seq, hash: record.hash });
    return record;
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
    const chain = await verifyAuditPages(
      (afterSeq, limit) => this.page(teamId, afterSeq, limit),
      Number(head?.seq ?? 0),
      options.pageSize,
    );
    return withTaskEventCoverage(chain, chain.ok ? await this.firstUnaudited(teamId) : undefined);
  }

  /** The team's first task event the relay passed with no audit mark. */
  private async firstUnaudited(teamId: string): Promise<UnauditedTaskEvent | undefined> {
    const [row] = await this.query<UnauditedTaskEvent>(
      'check task events against the audit log',
      `SELECT e.seq, e.task_id, e.to_state FROM ${this.s}.task_events e
         JOIN ${this.s}.task_relay r ON r.name = 'tasks'
        WHERE e.team_id = $1 AND e.kind IS NOT NULL AND e.seq > r.since AND e.seq <= r.seq
          AND NOT EXISTS (
            SELECT 1 FROM ${this.s}.audit_task_events m WHERE m.event_seq = e.seq)
        ORDER BY e.seq LIMIT 1`,
      [teamId],
    );
    return row;
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
