import type { Logger, UsageKind, Viewer } from '@ctxbus/core';
import { ANALYTICS_MAX_WINDOW_DAYS, usageDay, windowDays } from '@ctxbus/core';
import type { ItemUsageDelta, Store } from '@ctxbus/store';

// What the analytics count, recorded off the request path: a bundle served, a consumption or a
// search adds to counters in memory (one per item, runtime and UTC day), and a flush writes
// them all in one store call (one transaction) every `flushIntervalMs`, when `maxPendingRows`
// are waiting, before an analytics read, and when the hub closes. So a bundle of 40 items
// costs no store write of its own. Bounded: past twice `maxPendingRows` (a store that cannot
// keep up) new uses are dropped and counted, never queued without end.

export interface UsageRecorderOptions {
  /** Between flushes (default 5 s; 0: only on demand, when full and at close). */
  flushIntervalMs?: number;
  /** Rows waiting that start a flush at once (default 5,000); twice this is the bound. */
  maxPendingRows?: number;
}

export const DEFAULT_USAGE_FLUSH_MS = 5_000;
export const DEFAULT_USAGE_PENDING_ROWS = 5_000;

const LAST_FIELD = {
  injected: 'lastInjectedAt',
  consumed: 'lastConsumedAt',
  searched: 'lastSearchedAt',
} as const satisfies Record<UsageKind, keyof ItemUsageDelta>;

export class UsageRecorder {
  private pending = new Map<string, ItemUsageDelta>();
  private chain: Promise<void> = Promise.resolve();
  private readonly timer: NodeJS.Timeout | null;
  private readonly maxPending: number;
  private prunedDay: string | null = null;
  private closed = false;
  /** Uses dropped because the buffer was full. */
  dropped = 0;
  private droppedLogged = 0;
  /** Flushes that failed (their rows are kept for the next one while they fit). */
  failures = 0;

  constructor(
    private readonly store: Store,
    private readonly clock: () => Date,
    private readonly logger: Logger,
    options: UsageRecorderOptions = {},
  ) {
    this.maxPending = options.maxPendingRows ?? DEFAULT_USAGE_PENDING_ROWS;
    const interval = options.flushIntervalMs ?? DEFAULT_USAGE_FLUSH_MS;
    this.timer = interval > 0 ? setInterval(() => void this.flush(), interval) : null;
    this.timer?.unref();
  }

  /** Rows waiting for the next flush. */
  get pendingRows(): number {
    return this.pending.size;
  }

  /** Counts one use of each item (repeated ids count once) by the viewer's runtime, now. */
  record(viewer: Viewer, kind: UsageKind, itemIds: Iterable<string>): void {
    if (this.closed) return;
    const now = this.clock();
    const at = now.toISOString();
    const day = usageDay(now);
    for (const itemId of new Set(itemIds)) {
      const key = `${viewer.teamId}\0${itemId}\0${viewer.runtime}\0${day}`;
      let delta = this.pending.get(key);
      if (!delta) {
        if (this.pending.size >= this.maxPending * 2) {
          this.dropped++;
          continue;
        }
        delta = {
          teamId: viewer.teamId,
          itemId,
          runtime: viewer.runtime,
          day,
          injected: 0,
          consumed: 0,
          searched: 0,
          lastInjectedAt: null,
          lastConsumedAt: null,
          lastSearchedAt: null,
        };
        this.pending.set(key, delta);
      }
      delta[kind] += 1;
      delta[LAST_FIELD[kind]] = at;
    }
    if (this.pending.size >= this.maxPending) void this.flush();
  }

  /** Writes every use recorded so far (after any flush under way); never rejects. */
  flush(): Promise<void> {
    this.chain = this.chain.then(() => this.flushOnce());
    return this.chain;
  }

  private async flushOnce(): Promise<void> {
    if (this.dropped > this.droppedLogged) {
      this.logger.warn(
        { dropped: this.dropped - this.droppedLogged },
        'usage: the buffer was full; uses were dropped from the analytics',
      );
      this.droppedLogged = this.dropped;
    }
    if (this.pending.size > 0) {
      const batch = this.pending;
      this.pending = new Map();
      try {
        await this.store.recordItemUsage([...batch.values()]);
      } catch (error) {
        this.failures++;
        this.logger.warn({ err: error, rows: batch.size }, 'usage: recording failed');
        this.keep(batch);
      }
    }
    await this.pruneDaily();
  }

  /** Puts a failed batch back in front of what came since, within the bound. */
  private keep(batch: Map<string, ItemUsageDelta>): void {
    for (const [key, delta] of this.pending) {
      const earlier = batch.get(key);
      if (!earlier) batch.set(key, delta);
      else {
        earlier.injected += delta.injected;
        earlier.consumed += delta.consumed;
        earlier.searched += delta.searched;
        for (const field of Object.values(LAST_FIELD))
          earlier[field] = delta[field] ?? earlier[field];
      }
    }
    while (batch.size > this.maxPending * 2) {
      const oldest = batch.keys().next().value as string;
      batch.delete(oldest);
      this.dropped++;
    }
    this.pending = batch;
  }

  /** Once a day: per-day counts older than the longest window go. */
  private async pruneDaily(): Promise<void> {
    const now = this.clock();
    const today = usageDay(now);
    if (this.prunedDay === today) return;
    this.prunedDay = today;
    const [firstKept] = windowDays(now, ANALYTICS_MAX_WINDOW_DAYS);
    try {
      await this.store.pruneItemUsage(firstKept ?? today);
    } catch (error) {
      this.logger.warn({ err: error }, 'usage: pruning failed');
    }
  }

  /** Stops the timer and writes what is left. */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.flush();
    this.closed = true;
  }
}
