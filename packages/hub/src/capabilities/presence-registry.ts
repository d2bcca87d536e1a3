import type { Logger, PresenceInstance, PresenceKind, RuntimePresenceEntry } from '@ctxbus/core';
import { defaultCapacity, silentLogger, summarizePresence } from '@ctxbus/core';
import type { PresenceStore } from '@ctxbus/store';

/** Instances one team may have announced at once, by default. */
export const DEFAULT_MAX_PRESENCE_PER_TEAM = 1_000;

/** How long a team's routing summary is reused, by default (ms of real time). */
export const DEFAULT_PRESENCE_SUMMARY_CACHE_MS = 250;

/** Teams whose summary is kept at once; past it the cache starts again empty. */
const MAX_CACHED_TEAMS = 10_000;

export interface PresenceOptions {
  /** Instances one team may hold; past it an announcement is refused (429 `limit_reached`). */
  maxInstancesPerTeam?: number;
  /** Between sweeps of expired entries (default 30 s); reads skip expired entries anyway. */
  sweepIntervalMs?: number;
  /**
   * How long (ms, real time) the router reuses a team's summary (default 250; 0: read every
   * time). This hub's own announces and leaves drop it at once; another hub's are seen after
   * at most this long.
   */
  summaryCacheMs?: number;
}

export interface Announcement {
  instanceId: string;
  kind: PresenceKind;
  capabilities?: readonly string[] | undefined;
  capacity?: number | undefined;
  ttlSeconds: number;
}

interface CachedSummary {
  summary: Record<string, RuntimePresenceEntry>;
  /** performance.now() when it was read. */
  readAt: number;
  /** The earliest expiry among its instances (hub clock, ms): past it the summary is stale. */
  validUntil: number;
}

/**
 * Who is connected, per team: workers and adapters announce themselves with a time to live
 * and announce again to stay (a heartbeat). Kept in the store, so every hub on one database
 * (and every process on one SQLite file) sees the same live instances; times are this hub's
 * clock. The router's summary is cached per team for `summaryCacheMs`, dropped by this hub's
 * own announces and leaves and by the clock passing an instance's expiry.
 */
export class PresenceRegistry {
  private readonly maxPerTeam: number;
  private readonly cacheMs: number;
  private readonly cache = new Map<string, CachedSummary>();
  /** Bumped by every change this hub makes: a read that started before one is not cached. */
  private generation = 0;
  /**
   * Reads in flight, per team, with the generation they began in: callers that come while one
   * runs (a burst of new tasks) share it instead of each reading the store.
   */
  private readonly reading = new Map<
    string,
    { generation: number; summary: Promise<Record<string, RuntimePresenceEntry>> }
  >();
  private readonly timer: NodeJS.Timeout | null;

  constructor(
    private readonly store: PresenceStore,
    private readonly clock: () => Date,
    options: PresenceOptions = {},
    private readonly logger: Logger = silentLogger,
  ) {
    this.maxPerTeam = options.maxInstancesPerTeam ?? DEFAULT_MAX_PRESENCE_PER_TEAM;
    this.cacheMs = options.summaryCacheMs ?? DEFAULT_PRESENCE_SUMMARY_CACHE_MS;
    const interval = options.sweepIntervalMs ?? 30_000;
    this.timer = interval > 0 ? setInterval(() => void this.sweepQuietly(), interval) : null;
    this.timer?.unref();
  }

  /**
   * Announces (or renews) an instance of `runtime` in `teamId`. An instance id already held
   * by another runtime of the team is a conflict; a new one past the team's cap is refused.
   */
  async announce(
    teamId: string,
    runtime: string,
    announcement: Announcement,
  ): Promise<{ expiresAt: string }> {
    const now = this.clock();
    const expiresAt = new Date(now.getTime() + announcement.ttlSeconds * 1_000).toISOString();
    this.invalidate(teamId);
    await this.store.announcePresence(
      {
        teamId,
        runtime,
        instanceId: announcement.instanceId,
        kind: announcement.kind,
        capabilities: [...new Set(announcement.capabilities ?? [])],
        capacity: announcement.capacity ?? defaultCapacity(announcement.kind),
        now: now.toISOString(),
        expiresAt,
      },
      this.maxPerTeam,
    );
    this.invalidate(teamId);
    return { expiresAt };
  }

  /** Removes an instance of `runtime`; false when it has none by that id (or it expired). */
  async leave(teamId: string, runtime: string, instanceId: string): Promise<boolean> {
    this.invalidate(teamId);
    const now = this.clock().toISOString();
    const removed = await this.store.leavePresence(teamId, runtime, instanceId, now);
    this.invalidate(teamId);
    return removed;
  }

  /** A team's live instances, by runtime then instance id (read from the store every time). */
  instances(teamId: string): Promise<PresenceInstance[]> {
    return this.store.listPresence(teamId, this.clock().toISOString());
  }

  /** A team's presence by runtime, as the router reads it (cached; see `summaryCacheMs`). */
  async summary(teamId: string): Promise<Record<string, RuntimePresenceEntry>> {
    const cached = this.cache.get(teamId);
    if (cached && this.fresh(cached)) return cached.summary;
    const pending = this.reading.get(teamId);
    // A read that began after this hub's last change is as fresh as one begun now.
    if (this.cacheMs > 0 && pending?.generation === this.generation) return pending.summary;
    const generation = this.generation;
    const summary = this.instances(teamId).then((instances) => {
      const read = summarizePresence(instances);
      if (this.cacheMs > 0 && generation === this.generation)
        this.remember(teamId, read, instances);
      return read;
    });
    const entry = { generation, summary };
    this.reading.set(teamId, entry);
    try {
      return await summary;
    } finally {
      if (this.reading.get(teamId) === entry) this.reading.delete(teamId);
    }
  }

  /** Deletes every expired entry (of every team) now. */
  async sweep(): Promise<number> {
    return this.store.sweepPresence(this.clock().toISOString());
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.cache.clear();
  }

  private fresh(cached: CachedSummary): boolean {
    return (
      performance.now() - cached.readAt < this.cacheMs && this.clock().getTime() < cached.validUntil
    );
  }

  private remember(
    teamId: string,
    summary: Record<string, RuntimePresenceEntry>,
    instances: readonly PresenceInstance[],
  ): void {
    if (this.cache.size >= MAX_CACHED_TEAMS) this.cache.clear();
    const expiries = instances.map((instance) => Date.parse(instance.expiresAt));
    this.cache.set(teamId, {
      summary,
      readAt: performance.now(),
      validUntil: Math.min(Number.POSITIVE_INFINITY, ...expiries),
    });
  }

  private invalidate(teamId: string): void {
    this.generation += 1;
    this.cache.delete(teamId);
  }

  private async sweepQuietly(): Promise<void> {
    try {
      await this.sweep();
    } catch (error) {
      this.logger.warn({ err: error }, 'presence: sweep of expired instances failed');
    }
  }
}
