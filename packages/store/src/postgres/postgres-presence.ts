import type { PresenceInstance, PresenceKind } from '@ctxbus/core';
import type { PresenceAnnouncement, PresenceStore } from '../store.js';
import { presenceConflictError, presenceLimitError } from '../store.js';
import type { PostgresContext, PostgresQuery } from './postgres-connection.js';
import type { Transaction } from './postgres-subscriptions.js';

// Presence in PostgreSQL, shared by every hub on the database. A renewal (the heartbeat: the
// instance is live and this runtime's) is one UPDATE. Anything else (a new instance, one that
// lapsed, another runtime's id) takes a per-team advisory lock, deletes the team's expired
// rows, counts and inserts: concurrent announces on any hub take turns there, so the cap holds.

interface PresenceRow {
  instance_id: string;
  runtime: string;
  kind: PresenceKind;
  capabilities: string[];
  capacity: number;
  last_seen_ms: number;
  expires_ms: number;
}

const iso = (ms: number) => new Date(ms).toISOString();

function rowToInstance(row: PresenceRow): PresenceInstance {
  return {
    instanceId: row.instance_id,
    runtime: row.runtime,
    kind: row.kind,
    capabilities: row.capabilities,
    capacity: row.capacity,
    lastSeen: iso(Number(row.last_seen_ms)),
    expiresAt: iso(Number(row.expires_ms)),
  };
}

/** Presence in PostgreSQL. */
export class PostgresPresence implements PresenceStore {
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

  async announcePresence(announcement: PresenceAnnouncement, maxPerTeam: number): Promise<void> {
    this.assertOpen();
    if (await this.renew(announcement)) return;
    await this.transaction('announce presence', async (client) => {
      const { teamId, instanceId, now } = announcement;
      await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [
        `${this.s}.presence/${teamId}`,
      ]);
      const { rows } = await client.query<{ holder: string | null; live: number }>(
        `WITH swept AS (
           DELETE FROM ${this.s}.presence WHERE team_id = $1 AND expires_at <= $3::timestamptz
         )
         SELECT (SELECT runtime FROM ${this.s}.presence WHERE team_id = $1 AND instance_id = $2
                   AND expires_at > $3::timestamptz) AS holder,
                (SELECT count(*) FROM ${this.s}.presence WHERE team_id = $1
                   AND expires_at > $3::timestamptz)::int AS live`,
        [teamId, instanceId, now],
      );
      const { holder, live } = rows[0] ?? { holder: null, live: 0 };
      if (holder !== null && holder !== announcement.runtime) {
        throw presenceConflictError(instanceId, holder);
      }
      if (holder === null && live >= maxPerTeam) throw presenceLimitError(teamId, maxPerTeam);
      await client.query(this.upsertSql(), this.values(announcement));
    });
  }

  /** The heartbeat: renews a live instance of the same runtime; false when there is none. */
  private async renew(announcement: PresenceAnnouncement): Promise<boolean> {
    const rows = await this.query(
      'renew presence',
      `UPDATE ${this.s}.presence SET kind = $4, capabilities = $5::jsonb, capacity = $6::int4,
         last_seen = $7::timestamptz, expires_at = $8::timestamptz
       WHERE team_id = $1 AND instance_id = $2 AND runtime = $3 AND expires_at > $7::timestamptz
       RETURNING 1 AS renewed`,
      this.values(announcement),
    );
    return rows.length > 0;
  }

  private upsertSql(): string {
    return `INSERT INTO ${this.s}.presence (team_id, instance_id, runtime, kind, capabilities,
        capacity, last_seen, expires_at)
      VALUES ($1, $2, $3, $4, $5::jsonb, $6::int4, $7::timestamptz, $8::timestamptz)
      ON CONFLICT (team_id, instance_id) DO UPDATE SET kind = excluded.kind,
        capabilities = excluded.capabilities, capacity = excluded.capacity,
        last_seen = excluded.last_seen, expires_at = excluded.expires_at`;
  }

  private values(announcement: PresenceAnnouncement): unknown[] {
    return [
      announcement.teamId,
      announcement.instanceId,
      announcement.runtime,
      announcement.kind,
      JSON.stringify(announcement.capabilities),
      announcement.capacity,
      announcement.now,
      announcement.expiresAt,
    ];
  }

  async leavePresence(
    teamId: string,
    runtime: string,
    instanceId: string,
    now: string,
  ): Promise<boolean> {
    this.assertOpen();
    const rows = await this.query(
      'leave presence',
      `DELETE FROM ${this.s}.presence WHERE team_id = $1 AND instance_id = $2 AND runtime = $3
         AND expires_at > $4::timestamptz RETURNING 1 AS removed`,
      [teamId, instanceId, runtime, now],
    );
    return rows.length > 0;
  }

  async listPresence(teamId: string, now: string): Promise<PresenceInstance[]> {
    this.assertOpen();
    const rows = await this.query<PresenceRow>(
      'list presence',
      `SELECT instance_id, runtime, kind, capabilities, capacity,
         (extract(epoch FROM last_seen) * 1000)::int8 AS last_seen_ms,
         (extract(epoch FROM expires_at) * 1000)::int8 AS expires_ms
       FROM ${this.s}.presence WHERE team_id = $1 AND expires_at > $2::timestamptz
       ORDER BY runtime, instance_id`,
      [teamId, now],
      true,
    );
    return rows.map(rowToInstance);
  }

  async sweepPresence(now: string): Promise<number> {
    this.assertOpen();
    const rows = await this.query(
      'sweep presence',
      `DELETE FROM ${this.s}.presence WHERE expires_at <= $1::timestamptz RETURNING 1 AS swept`,
      [now],
    );
    return rows.length;
  }
}
