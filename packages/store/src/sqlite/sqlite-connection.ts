import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { CtxbusError } from '@ctxbus/core';

// What every domain of the embedded store shares: the database, its statement cache,
// transactions, the clock, and whether the store is closed.

/** SQLite's primary result codes for a disk that is full, and for a read or write that failed. */
const SQLITE_FULL = 13;
const SQLITE_IOERR = 10;
/** ... and for a database file that is damaged, or is not a database at all. */
const SQLITE_CORRUPT = 11;
const SQLITE_NOTADB = 26;

/** The error every call gets once the database file is found damaged. */
export function damagedError(location: string, detail: string, cause?: unknown): CtxbusError {
  return new CtxbusError(
    'unavailable',
    `the database file ${location} is damaged (SQLite: ${detail}): the hub cannot trust what it reads or writes there. Stop the hub, keep a copy of the file, and restore it from a backup (or recover what is left with \`sqlite3 ${location} .recover\`)`,
    {
      ...(cause !== undefined && { cause }),
      retryable: false,
      details: { reason: 'store_damaged' },
    },
  );
}

/**
 * What the disk under the database did, said as such (503 `unavailable`, retryable: the hub
 * goes on once there is room), and a damaged file as damaged (503, not retryable), instead of
 * an internal error; anything else as it was.
 */
export function storageError(error: unknown, location: string): unknown {
  const code = (error as { errcode?: unknown } | null)?.errcode;
  if (typeof code !== 'number') return error;
  if ((code & 0xff) === SQLITE_FULL) {
    return new CtxbusError(
      'unavailable',
      `the disk holding the database (${location}) is full: nothing was written; free some space and the hub goes on`,
      { cause: error, retryable: true },
    );
  }
  if ((code & 0xff) === SQLITE_IOERR) {
    return new CtxbusError(
      'unavailable',
      `the disk holding the database (${location}) failed a read or write (SQLite I/O error ${code}): nothing was written`,
      { cause: error, retryable: true },
    );
  }
  if (damaged(error)) return damagedError(location, (error as Error).message, error);
  return error;
}

/** Whether SQLite said the database file is damaged (or not a database). */
function damaged(error: unknown): boolean {
  const code = (error as { errcode?: unknown } | null)?.errcode;
  return typeof code === 'number' && [SQLITE_CORRUPT, SQLITE_NOTADB].includes(code & 0xff);
}

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

  /** The damage found in the database file (a call failed on it, or the integrity check). */
  damage: CtxbusError | null = null;

  /**
   * An error of a call on the database, said as storageError says it. Damage is remembered,
   * and every call that meets it gets the first damage error found (one error, one log line).
   */
  explain(error: unknown): unknown {
    const explained = storageError(error, this.location);
    if (!damaged(error) || !CtxbusError.isInstance(explained)) return explained;
    this.damage ??= explained;
    return this.damage;
  }

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
      try {
        this.db.exec('ROLLBACK');
      } catch {
        // SQLite rolled it back itself (a full disk, an I/O error): its error is the one to say.
      }
      throw this.explain(error);
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
