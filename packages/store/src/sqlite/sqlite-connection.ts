import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { CtxbusError } from '@ctxbus/core';

// What every domain of the embedded store shares: the database, its statement cache,
// transactions, the clock, and whether the store is closed.

export class SqliteConnection {
  private readonly statements = new Map<string, StatementSync>();
  private closed = false;

  constructor(
    readonly db: DatabaseSync,
    /** The database file (or ':memory:'), for messages and `StoreInfo.location`. */
    readonly location: string,
    /** Source of "now" for expiry and consumption times. */
    readonly clock: () => Date,
  ) {}

  get isClosed(): boolean {
    return this.closed;
  }

  assertOpen(): void {
    if (this.closed) throw new CtxbusError('unavailable', 'the store is closed');
  }

  statement(sql: string): StatementSync {
    let statement = this.statements.get(sql);
    if (!statement) {
      if (this.statements.size > 500) this.statements.clear();
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  transaction<T>(work: () => T): T {
    this.assertOpen();
    this.db.exec('BEGIN IMMEDIATE');
    try {
      const result = work();
      this.db.exec('COMMIT');
      return result;
    } catch (error) {
      this.db.exec('ROLLBACK');
      throw error;
    }
  }

  /** The sequence of the newest change (0 when empty). */
  maxSeq(): number {
    const row = this.statement('SELECT coalesce(max(seq), 0) AS seq FROM changes').get() as {
      seq: number;
    };
    return row.seq;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.statements.clear();
    this.db.close();
  }
}
