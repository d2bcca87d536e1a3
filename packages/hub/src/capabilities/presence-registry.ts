import type { PresenceInstance, PresenceKind, RuntimePresenceEntry } from '@ctxbus/core';
import { CtxbusError, defaultCapacity, summarizePresence } from '@ctxbus/core';

/** Instances one team may have announced at once, by default. */
export const DEFAULT_MAX_PRESENCE_PER_TEAM = 1_000;

export interface PresenceOptions {
  /** Instances one team may hold; past it an announcement is refused (429 `limit_reached`). */
  maxInstancesPerTeam?: number;
  /** Between sweeps of expired entries (default 30 s); reads drop expired entries anyway. */
  sweepIntervalMs?: number;
}

export interface Announcement {
  instanceId: string;
  kind: PresenceKind;
  capabilities?: readonly string[] | undefined;
  capacity?: number | undefined;
  ttlSeconds: number;
}

interface Entry {
  runtime: string;
  kind: PresenceKind;
  capabilities: string[];
  capacity: number;
  lastSeen: number;
  expiresAt: number;
}

/**
 * Who is connected to this hub, per team: workers and adapters announce themselves with a
 * time to live and announce again to stay (a heartbeat). Entries not renewed expire. Kept in
 * this process's memory: with several hubs on one database, each knows the instances that
 * announce to it. Bounded: at most `maxInstancesPerTeam` per team, and expired entries are
 * dropped on every read of a team and by a periodic sweep.
 */
export class PresenceRegistry {
  private readonly teams = new Map<string, Map<string, Entry>>();
  private readonly maxPerTeam: number;
  private readonly timer: NodeJS.Timeout | null;

  constructor(
    private readonly clock: () => Date,
    options: PresenceOptions = {},
  ) {
    this.maxPerTeam = options.maxInstancesPerTeam ?? DEFAULT_MAX_PRESENCE_PER_TEAM;
    const interval = options.sweepIntervalMs ?? 30_000;
    this.timer = interval > 0 ? setInterval(() => this.sweep(), interval) : null;
    this.timer?.unref();
  }

  /**
   * Announces (or renews) an instance of `runtime` in `teamId`. An instance id already held
   * by another runtime of the team is a conflict; a new one past the team's cap is refused.
   */
  announce(teamId: string, runtime: string, announcement: Announcement): { expiresAt: string } {
    const now = this.clock().getTime();
    const team = this.liveTeam(teamId, now) ?? new Map<string, Entry>();
    const existing = team.get(announcement.instanceId);
    if (existing && existing.runtime !== runtime) {
      throw new CtxbusError(
        'conflict',
        `instance ${announcement.instanceId} is announced by runtime ${existing.runtime}; pick another instance id`,
      );
    }
    if (!existing && team.size >= this.maxPerTeam) {
      throw new CtxbusError(
        'limit_reached',
        `team ${teamId} has ${team.size} live instances, the most this hub keeps; let some expire or leave (DELETE /api/presence/:instanceId)`,
        { details: { limit: this.maxPerTeam } },
      );
    }
    const expiresAt = now + announcement.ttlSeconds * 1_000;
    team.set(announcement.instanceId, {
      runtime,
      kind: announcement.kind,
      capabilities: [...new Set(announcement.capabilities ?? [])],
      capacity: announcement.capacity ?? defaultCapacity(announcement.kind),
      lastSeen: now,
      expiresAt,
    });
    this.teams.set(teamId, team);
    return { expiresAt: new Date(expiresAt).toISOString() };
  }

  /** Removes an instance of `runtime`; false when it has none by that id (or it expired). */
  leave(teamId: string, runtime: string, instanceId: string): boolean {
    const team = this.liveTeam(teamId, this.clock().getTime());
    const entry = team?.get(instanceId);
    if (!team || !entry || entry.runtime !== runtime) return false;
    team.delete(instanceId);
    if (team.size === 0) this.teams.delete(teamId);
    return true;
  }

  /** A team's live instances, by runtime then instance id. */
  instances(teamId: string): PresenceInstance[] {
    const team = this.liveTeam(teamId, this.clock().getTime());
    if (!team) return [];
    return [...team.entries()]
      .map(([instanceId, entry]) => ({
        instanceId,
        runtime: entry.runtime,
        kind: entry.kind,
        capabilities: [...entry.capabilities],
        capacity: entry.capacity,
        lastSeen: new Date(entry.lastSeen).toISOString(),
        expiresAt: new Date(entry.expiresAt).toISOString(),
      }))
      .sort((a, b) => compare(a.runtime, b.runtime) || compare(a.instanceId, b.instanceId));
  }

  /** A team's presence by runtime, as the router reads it. */
  summary(teamId: string): Record<string, RuntimePresenceEntry> {
    return summarizePresence(this.instances(teamId));
  }

  /** Live instances across teams (for counts). */
  get size(): number {
    let count = 0;
    for (const team of this.teams.values()) count += team.size;
    return count;
  }

  /** Drops every expired entry now. */
  sweep(): void {
    const now = this.clock().getTime();
    for (const teamId of [...this.teams.keys()]) this.liveTeam(teamId, now);
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.teams.clear();
  }

  /** The team's entries with the expired ones dropped (undefined when none is left). */
  private liveTeam(teamId: string, now: number): Map<string, Entry> | undefined {
    const team = this.teams.get(teamId);
    if (!team) return undefined;
    for (const [instanceId, entry] of team) {
      if (entry.expiresAt <= now) team.delete(instanceId);
    }
    if (team.size === 0) {
      this.teams.delete(teamId);
      return undefined;
    }
    return team;
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
