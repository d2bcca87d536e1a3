import type { PresenceInstance, PresenceKind } from '@ctxbus/core';
import type { PresenceAnnouncement, PresenceStore } from '../store.js';
import { presenceConflictError, presenceLimitError } from '../store.js';
import type { SqliteConnection } from './sqlite-connection.js';

// Presence in the embedded store (times as epoch milliseconds). Every process on the file sees
// the same instances; an announce counts and writes in one IMMEDIATE transaction, so the
// team's cap holds across processes.

interface PresenceRow {
  instance_id: string;
  runtime: string;
  kind: PresenceKind;
  capabilities: string;
  capacity: number;
  last_seen: number;
  expires_at: number;
}

const iso = (ms: number) => new Date(ms).toISOString();

function rowToInstance(row: PresenceRow): PresenceInstance {
  return {
    instanceId: row.instance_id,
    runtime: row.runtime,
    kind: row.kind,
    capabilities: JSON.parse(row.capabilities) as string[],
    capacity: row.capacity,
    lastSeen: iso(row.last_seen),
    expiresAt: iso(row.expires_at),
  };
}

/** Presence of the embedded store, over its connection. */
export class SqlitePresence implements PresenceStore {
  constructor(private readonly connection: SqliteConnection) {}

  async announcePresence(announcement: PresenceAnnouncement, maxPerTeam: number): Promise<void> {
    this.connection.assertOpen();
    const { teamId, instanceId, runtime } = announcement;
    const now = Date.parse(announcement.now);
    this.connection.transaction(() => {
      this.connection
        .statement('DELETE FROM presence WHERE team_id = ? AND expires_at <= ?')
        .run(teamId, now);
      const held = this.connection
        .statement('SELECT runtime FROM presence WHERE team_id = ? AND instance_id = ?')
        .get(teamId, instanceId) as { runtime: string } | undefined;
      if (held && held.runtime !== runtime) throw presenceConflictError(instanceId, held.runtime);
      if (!held && this.liveCount(teamId) >= maxPerTeam) {
        throw presenceLimitError(teamId, maxPerTeam);
      }
      this.upsert(announcement);
    });
  }

  private liveCount(teamId: string): number {
    // Expired rows of the team were deleted in this transaction: every row left is live.
    const row = this.connection
      .statement('SELECT count(*) AS live FROM presence WHERE team_id = ?')
      .get(teamId) as { live: number };
    return row.live;
  }

  private upsert(announcement: PresenceAnnouncement): void {
    this.connection
      .statement(
        `INSERT INTO presence (team_id, instance_id, runtime, kind, capabilities, capacity,
           last_seen, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (team_id, instance_id) DO UPDATE SET kind = excluded.kind,
           capabilities = excluded.capabilities, capacity = excluded.capacity,
           last_seen = excluded.last_seen, expires_at = excluded.expires_at`,
      )
      .run(
        announcement.teamId,
        announcement.instanceId,
        announcement.runtime,
        announcement.kind,
        JSON.stringify(announcement.capabilities),
        announcement.capacity,
        Date.parse(announcement.now),
        Date.parse(announcement.expiresAt),
      );
  }

  async leavePresence(
    teamId: string,
    runtime: string,
    instanceId: string,
    now: string,
  ): Promise<boolean> {
    this.connection.assertOpen();
    const result = this.connection
      .statement(
        'DELETE FROM presence WHERE team_id = ? AND instance_id = ? AND runtime = ? AND expires_at > ?',
      )
      .run(teamId, instanceId, runtime, Date.parse(now));
    return Number(result.changes) > 0;
  }

  async listPresence(teamId: string, now: string): Promise<PresenceInstance[]> {
    this.connection.assertOpen();
    const rows = this.connection
      .statement(
        `SELECT instance_id, runtime, kind, capabilities, capacity, last_seen, expires_at
           FROM presence WHERE team_id = ? AND expires_at > ? ORDER BY runtime, instance_id`,
      )
      .all(teamId, Date.parse(now)) as unknown as PresenceRow[];
    return rows.map(rowToInstance);
  }

  async sweepPresence(now: string): Promise<number> {
    this.connection.assertOpen();
    const result = this.connection
      .statement('DELETE FROM presence WHERE expires_at <= ?')
      .run(Date.parse(now));
    return Number(result.changes);
  }
}
