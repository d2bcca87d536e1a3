import type { StatementSync } from 'node:sqlite';
import type { SubscriptionEvent, SubscriptionFilter } from '@ctxbus/core';
import type {
  DeadLetter,
  ListSubscriptionsOptions,
  SubscriptionProgress,
  SubscriptionRecord,
  SubscriptionStore,
} from '../store.js';
import { subscriptionLimitError } from '../store.js';
import type { SqliteConnection } from './sqlite-connection.js';

// Subscriptions and dead letters in the embedded store (times as epoch milliseconds).

interface SubscriptionRow {
  id: string;
  team_id: string;
  runtime: string;
  delivery: 'push' | 'pull';
  endpoint: string | null;
  secret: string | null;
  label: string | null;
  filter: string;
  created_at: number;
  cursor: number;
  attempts: number;
  next_attempt_at: number | null;
  last_error: string | null;
  delivered: number;
  dead_lettered: number;
  token_id: string | null;
}

interface DeadLetterRow {
  subscription_id: string;
  seq: number;
  event: SubscriptionEvent;
  item_id: string;
  attempts: number;
  last_error: string;
  failed_at: number;
}

const iso = (ms: number) => new Date(ms).toISOString();

function rowToSubscription(row: SubscriptionRow): SubscriptionRecord {
  return {
    id: row.id,
    teamId: row.team_id,
    runtime: row.runtime,
    delivery: row.delivery,
    endpoint: row.endpoint,
    secret: row.secret,
    label: row.label,
    filter: JSON.parse(row.filter) as SubscriptionFilter,
    createdAt: iso(row.created_at),
    tokenId: row.token_id,
    cursor: row.cursor,
    attempts: row.attempts,
    nextAttemptAt: row.next_attempt_at === null ? null : iso(row.next_attempt_at),
    lastError: row.last_error,
    delivered: row.delivered,
    deadLettered: row.dead_lettered,
  };
}

function rowToDeadLetter(row: DeadLetterRow): DeadLetter {
  return {
    subscriptionId: row.subscription_id,
    seq: row.seq,
    event: row.event,
    itemId: row.item_id,
    attempts: row.attempts,
    lastError: row.last_error,
    failedAt: iso(row.failed_at),
  };
}

const COLUMNS =
  'id, team_id, runtime, delivery, endpoint, secret, label, filter, created_at, cursor, attempts, next_attempt_at, last_error, delivered, dead_lettered, token_id';

/** Subscriptions of the embedded store, over its connection. */
export class SqliteSubscriptions implements SubscriptionStore {
  constructor(private readonly connection: SqliteConnection) {}

  private statement(sql: string): StatementSync {
    return this.connection.statement(sql);
  }

  private transaction<T>(work: () => T): T {
    return this.connection.transaction(work);
  }

  async createSubscription(record: SubscriptionRecord, maxPerRuntime?: number): Promise<void> {
    this.connection.assertOpen();
    // One synchronous transaction: no other create can run between the count and the insert.
    this.transaction(() => {
      if (maxPerRuntime !== undefined) {
        const { held } = this.statement(
          'SELECT count(*) AS held FROM subscriptions WHERE team_id = ? AND runtime = ?',
        ).get(record.teamId, record.runtime) as { held: number };
        if (held >= maxPerRuntime) throw subscriptionLimitError(maxPerRuntime);
      }
      this.insert(record);
    });
  }

  private insert(record: SubscriptionRecord): void {
    this.statement(
      `INSERT INTO subscriptions (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      record.id,
      record.teamId,
      record.runtime,
      record.delivery,
      record.endpoint,
      record.secret,
      record.label,
      JSON.stringify(record.filter),
      Date.parse(record.createdAt),
      record.cursor,
      record.attempts,
      record.nextAttemptAt === null ? null : Date.parse(record.nextAttemptAt),
      record.lastError,
      record.delivered,
      record.deadLettered,
      record.tokenId,
    );
  }

  async getSubscription(id: string): Promise<SubscriptionRecord | null> {
    this.connection.assertOpen();
    const row = this.statement(`SELECT ${COLUMNS} FROM subscriptions WHERE id = ?`).get(id) as
      | SubscriptionRow
      | undefined;
    return row ? rowToSubscription(row) : null;
  }

  async listSubscriptions(options: ListSubscriptionsOptions = {}): Promise<SubscriptionRecord[]> {
    this.connection.assertOpen();
    const rows = this.statement(
      `SELECT ${COLUMNS} FROM subscriptions
        WHERE (?1 IS NULL OR team_id = ?1) AND (?2 IS NULL OR delivery = ?2)
        ORDER BY created_at, id`,
    ).all(options.teamId ?? null, options.delivery ?? null) as unknown as SubscriptionRow[];
    return rows.map(rowToSubscription);
  }

  async deleteSubscription(id: string): Promise<boolean> {
    this.connection.assertOpen();
    return Number(this.statement('DELETE FROM subscriptions WHERE id = ?').run(id).changes) > 0;
  }

  async leaseSubscription(
    id: string,
    holder: string,
    now: string,
    until: string,
  ): Promise<SubscriptionRecord | null> {
    this.connection.assertOpen();
    const nowMs = Date.parse(now);
    const untilMs = Date.parse(until);
    const row = this.statement(
      `UPDATE subscriptions SET lease_holder = ?, lease_until = ?
        WHERE id = ? AND (lease_holder IS NULL OR lease_holder = ? OR lease_until <= ?)
        RETURNING ${COLUMNS}`,
    ).get(holder, untilMs, id, holder, nowMs) as SubscriptionRow | undefined;
    return row ? rowToSubscription(row) : null;
  }

  async saveSubscriptionProgress(
    id: string,
    holder: string | null,
    progress: SubscriptionProgress,
    now: string,
  ): Promise<boolean> {
    this.connection.assertOpen();
    const nowMs = Date.parse(now);
    return this.transaction(() => {
      const deadLetters = progress.deadLetters ?? [];
      const result = this.statement(
        `UPDATE subscriptions SET
           cursor = max(cursor, ?),
           attempts = coalesce(?, attempts),
           next_attempt_at = CASE WHEN ? THEN ? ELSE next_attempt_at END,
           last_error = CASE WHEN ? THEN ? ELSE last_error END,
           delivered = delivered + ?,
           dead_lettered = dead_lettered + ?
         WHERE id = ? AND (? IS NULL OR (lease_holder = ? AND lease_until > ?))`,
      ).run(
        progress.cursor,
        progress.attempts ?? null,
        progress.nextAttemptAt !== undefined ? 1 : 0,
        progress.nextAttemptAt == null ? null : Date.parse(progress.nextAttemptAt),
        progress.lastError !== undefined ? 1 : 0,
        progress.lastError ?? null,
        progress.delivered ?? 0,
        deadLetters.length,
        id,
        holder,
        holder,
        nowMs,
      );
      if (Number(result.changes) === 0) return false;
      const insert = this.statement(
        `INSERT OR IGNORE INTO dead_letters
           (subscription_id, seq, event, item_id, attempts, last_error, failed_at)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
      );
      for (const letter of deadLetters) {
        insert.run(
          id,
          letter.seq,
          letter.event,
          letter.itemId,
          letter.attempts,
          letter.lastError,
          Date.parse(letter.failedAt),
        );
      }
      return true;
    });
  }

  async listDeadLetters(
    subscriptionId: string,
    options: { afterSeq?: number; limit: number },
  ): Promise<DeadLetter[]> {
    this.connection.assertOpen();
    const afterSeq = options.afterSeq ?? 0;
    const limit = options.limit;
    const rows = this.statement(
      `SELECT * FROM dead_letters WHERE subscription_id = ? AND seq > ? ORDER BY seq LIMIT ?`,
    ).all(subscriptionId, afterSeq, limit) as unknown as DeadLetterRow[];
    return rows.map(rowToDeadLetter);
  }
}
