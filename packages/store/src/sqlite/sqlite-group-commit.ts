import type { NewContextItem } from '@ctxbus/core';
import { CtxbusError } from '@ctxbus/core';
import type { WriteOutcome } from '../store.js';
import type { SqliteConnection } from './sqlite-connection.js';

// Group commit in the embedded store: writes queued in one event-loop turn share one
// transaction, each inside its own savepoint so that one write's conflict fails only that
// write.

interface PendingWrite {
  items: readonly NewContextItem[];
  resolve: (outcomes: WriteOutcome[]) => void;
  reject: (error: unknown) => void;
}

/** Writes one caller's items after sequence `seq`; returns the outcomes and the new seq. */
export type WriteGroup = (
  items: readonly NewContextItem[],
  seq: number,
  nowMs: number,
) => { outcomes: WriteOutcome[]; seq: number };

export class SqliteGroupCommit {
  private pending: PendingWrite[] = [];
  private flushScheduled = false;
  /** The sequence at which planner statistics are next refreshed. */
  private nextAnalyzeAt = 0;

  constructor(
    private readonly connection: SqliteConnection,
    private readonly writeGroup: WriteGroup,
  ) {}

  get hasPending(): boolean {
    return this.pending.length > 0;
  }

  /** Queues the write; resolves after the commit. */
  write(items: readonly NewContextItem[]): Promise<WriteOutcome[]> {
    this.connection.assertOpen();
    return new Promise((resolve, reject) => {
      this.pending.push({ items, resolve, reject });
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** Commits the queued writes now (a sweep or close must not run between them). */
  flush(): void {
    this.flushScheduled = false;
    const batch = this.pending;
    this.pending = [];
    if (batch.length === 0) return;
    if (this.connection.isClosed) {
      for (const write of batch)
        write.reject(new CtxbusError('unavailable', 'the store is closed'));
      return;
    }
    const db = this.connection.db;
    const nowMs = this.connection.clock().getTime();
    const settle: (() => void)[] = [];
    try {
      this.connection.transaction(() => {
        let seq = this.connection.maxSeq();
        for (const write of batch) {
          db.exec('SAVEPOINT write_group');
          try {
            const written = this.writeGroup(write.items, seq, nowMs);
            db.exec('RELEASE write_group');
            seq = written.seq;
            settle.push(() => write.resolve(written.outcomes));
          } catch (error) {
            try {
              db.exec('ROLLBACK TO write_group');
              db.exec('RELEASE write_group');
            } catch {
              // SQLite ended the whole transaction itself (a full disk): the batch fails with it.
              throw error;
            }
            settle.push(() => write.reject(error));
          }
        }
      });
    } catch (error) {
      for (const write of batch) write.reject(error);
      return;
    }
    for (const done of settle) done();
    this.analyzeIfGrown(this.connection.maxSeq());
  }

  /**
   * Refreshes the query planner's statistics each time the change log has doubled (from 1,000
   * changes on). Without them SQLite may walk the newest-first index for a rare filter (a
   * `hasKey` list took 12 ms at 30k items; 0.04 ms with statistics).
   */
  analyzeIfGrown(seq: number): void {
    if (seq < this.nextAnalyzeAt) return;
    if (seq >= 1_000) this.connection.db.exec('ANALYZE');
    this.nextAnalyzeAt = Math.max(1_000, seq * 2);
  }
}
