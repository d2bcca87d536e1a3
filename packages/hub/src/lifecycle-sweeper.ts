import type { ContextType, Logger } from '@ctxbus/core';
import type { Store } from '@ctxbus/store';

export interface RetentionOptions {
  /** `delete` (default) removes swept items; `archive` keeps them, readable via /api/archive. */
  mode?: 'archive' | 'delete';
  /**
   * Age limits per type, in ms (none by default: only expired items are swept). Current
   * decisions and items holding a key are kept until superseded, whatever their age.
   */
  maxAgeMs?: Partial<Record<ContextType, number>>;
  /** How long an expired item stays before it is swept (default 0; reads hide it at once). */
  expiredGraceMs?: number;
  /** Between sweeps (default 60 s). */
  intervalMs?: number;
  /** Items per sweep transaction (default 500). */
  batch?: number;
}

export const DEFAULT_RETENTION: Required<Omit<RetentionOptions, 'maxAgeMs'>> & {
  maxAgeMs: Partial<Record<ContextType, number>>;
} = {
  mode: 'delete',
  maxAgeMs: {},
  expiredGraceMs: 0,
  intervalMs: 60_000,
  batch: 500,
};

/**
 * Runs the store's lifecycle sweep on a timer: expired items leave the live tables (archived
 * or deleted), and so do items past their type's age limit, except current decisions and
 * key holders. Each batch is its own transaction, so writes wait at most one batch. Several
 * hubs on one database may all sweep: batches take the write lock in turn.
 */
export class LifecycleSweeper {
  private readonly options: typeof DEFAULT_RETENTION;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private closed = false;

  constructor(
    private readonly store: Store,
    private readonly clock: () => Date,
    private readonly logger: Logger,
    options: RetentionOptions = {},
  ) {
    this.options = { ...DEFAULT_RETENTION, ...options, maxAgeMs: options.maxAgeMs ?? {} };
  }

  start(): void {
    this.timer = setInterval(() => void this.sweepNow(), this.options.intervalMs);
    this.timer.unref();
    void this.sweepNow();
  }

  /** Sweeps until nothing is due (one run at a time); resolves with what was swept. */
  sweepNow(): Promise<void> {
    this.running ??= this.run()
      .catch((error: unknown) => this.logger.error({ err: error }, 'lifecycle sweep failed'))
      .finally(() => {
        this.running = null;
      });
    return this.running;
  }

  private async run(): Promise<void> {
    const totals = { expired: 0, aged: 0, archived: 0 };
    for (;;) {
      if (this.closed) break;
      const now = this.clock().getTime();
      const createdBefore: Partial<Record<ContextType, string>> = {};
      for (const [type, age] of Object.entries(this.options.maxAgeMs)) {
        createdBefore[type as ContextType] = new Date(now - age).toISOString();
      }
      const result = await this.store.sweepItems({
        expiredBefore: new Date(now - this.options.expiredGraceMs).toISOString(),
        createdBefore,
        mode: this.options.mode,
        limit: this.options.batch,
        now: new Date(now).toISOString(),
      });
      totals.expired += result.expired;
      totals.aged += result.aged;
      totals.archived += result.archived;
      if (!result.more) break;
      // Let waiting writes in between batches.
      await new Promise((resolve) => setImmediate(resolve));
    }
    if (totals.expired + totals.aged > 0) {
      this.logger.info({ ...totals, mode: this.options.mode }, 'lifecycle sweep');
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }
}
