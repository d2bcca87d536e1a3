import type { SubscriptionEvent, SubscriptionFilter } from '@ctxbus/core';
import type { PoolClient, QueryResult } from 'pg';
import type {
  DeadLetter,
  ListSubscriptionsOptions,
  SubscriptionProgress,
  SubscriptionRecord,
  SubscriptionStore,
} from '../store.js';
import { subscriptionLimitError } from '../store.js';
import type { PostgresContext, PostgresQuery } from './postgres-connection.js';

// Subscriptions and dead letters in PostgreSQL. Every operation is one statement, so each is
// atomic without an explicit transaction (progress and its dead letters included), except a
// create under the per-runtime limit, which counts under a lock.

/**
 * Runs `work` in one transaction on one pooled connection. `opening`: statements (values
 * inlined) sent in the same message as BEGIN, saving round trips; work gets their results.
 */
export type Transaction = <T>(
  action: string,
  work: (client: PoolClient, opening: QueryResult[]) => Promise<T>,
  opening?: string,
) => Promise<T>;

interface SubscriptionRow {
  id: string;
  team_id: string;
  runtime: string;
  delivery: 'push' | 'pull';
  endpoint: string | null;
  secret: string | null;
  label: string | null;
  filter: SubscriptionFilter;
  created_ms: number;
  cursor: number;
  attempts: number;
  next_attempt_ms: number | null;
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
  failed_ms: number;
}

const COLUMNS = `id, team_id, runtime, delivery, endpoint, secret, label, filter,
  (extract(epoch FROM created_at) * 1000)::int8 AS created_ms, cursor, attempts,
  (extract(epoch FROM next_attempt_at) * 1000)::int8 AS next_attempt_ms, last_error,
  delivered, dead_lettered, token_id`;

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
    filter: row.filter,
    createdAt: iso(row.created_ms),
    tokenId: row.token_id,
    cursor: row.cursor,
    attempts: row.attempts,
    nextAttemptAt: row.next_attempt_ms === null ? null : iso(row.next_attempt_ms),
    lastError: row.last_error,
    delivered: row.delivered,
    deadLettered: row.dead_lettered,
  };
}

/** Subscriptions in PostgreSQL. */
export class PostgresSubscriptions implements SubscriptionStore {
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

  /**
   * Stores a subscription; with `maxPerRuntime`, in a transaction that first takes an
   * advisory lock on (schema, team, runtime), so that concurrent creates on any hub count one
   * after another (each statement of a READ COMMITTED transaction sees what committed before it).
   */
  async createSubscription(record: SubscriptionRecord, maxPerRuntime?: number): Promise<void> {
    this.assertOpen();
    if (maxPerRuntime === undefined) {
      await this.query('create a subscription', this.insertSql(''), this.insertValues(record));
      return;
    }
    const inserted = await this.transaction('create a subscription', async (client) => {
      await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [
        `${this.s}.subscriptions/${record.teamId}/${record.runtime}`,
      ]);
      const result = await client.query(
        this.insertSql(
          `WHERE (SELECT count(*) FROM ${this.s}.subscriptions WHERE team_id = $2 AND runtime = $3) < $17::int8`,
        ),
        [...this.insertValues(record), maxPerRuntime],
      );
      return result.rowCount ?? 0;
    });
    if (inserted === 0) throw subscriptionLimitError(maxPerRuntime);
  }

  private insertSql(where: string): string {
    return `INSERT INTO ${this.s}.subscriptions (id, team_id, runtime, delivery, endpoint, secret,
         label, filter, created_at, cursor, attempts, next_attempt_at, last_error, delivered,
         dead_lettered, token_id)
       SELECT $1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9::timestamptz, $10::int8, $11::int4,
         $12::timestamptz, $13, $14::int8, $15::int8, $16 ${where}`;
  }

  private insertValues(record: SubscriptionRecord): unknown[] {
    return [
      record.id,
      record.teamId,
      record.runtime,
      record.delivery,
      record.endpoint,
      record.secret,
      record.label,
      JSON.stringify(record.filter),
      record.createdAt,
      record.cursor,
      record.attempts,
      record.nextAttemptAt,
      record.lastError,
      record.delivered,
      record.deadLettered,
      record.tokenId,
    ];
  }

  async getSubscription(id: string): Promise<SubscriptionRecord | null> {
    this.assertOpen();
    const rows = await this.query<SubscriptionRow>(
      'read a subscription',
      `SELECT ${COLUMNS} FROM ${this.s}.subscriptions WHERE id = $1`,
      [id],
    );
    return rows[0] ? rowToSubscription(rows[0]) : null;
  }

  async listSubscriptions(options: ListSubscriptionsOptions = {}): Promise<SubscriptionRecord[]> {
    this.assertOpen();
    const rows = await this.query<SubscriptionRow>(
      'list subscriptions',
      `SELECT ${COLUMNS} FROM ${this.s}.subscriptions
        WHERE ($1::text IS NULL OR team_id = $1) AND ($2::text IS NULL OR delivery = $2)
        ORDER BY created_at, id`,
      [options.teamId ?? null, options.delivery ?? null],
    );
    return rows.map(rowToSubscription);
  }

  async deleteSubscription(id: string): Promise<boolean> {
    this.assertOpen();
    const rows = await this.query<{ id: string }>(
      'delete a subscription',
      `DELETE FROM ${this.s}.subscriptions WHERE id = $1 RETURNING id`,
      [id],
    );
    return rows.length > 0;
  }

  async leaseSubscription(
    id: string,
    holder: string,
    now: string,
    until: string,
  ): Promise<SubscriptionRecord | null> {
    this.assertOpen();
    const rows = await this.query<SubscriptionRow>(
      'lease a subscription',
      `UPDATE ${this.s}.subscriptions SET lease_holder = $2, lease_until = $4::timestamptz
        WHERE id = $1
          AND (lease_holder IS NULL OR lease_holder = $2 OR lease_until <= $3::timestamptz)
        RETURNING ${COLUMNS}`,
      [id, holder, now, until],
    );
    return rows[0] ? rowToSubscription(rows[0]) : null;
  }

  async saveSubscriptionProgress(
    id: string,
    holder: string | null,
    progress: SubscriptionProgress,
    now: string,
  ): Promise<boolean> {
    this.assertOpen();
    const letters = (progress.deadLetters ?? []).map((letter) => ({
      seq: letter.seq,
      event: letter.event,
      item_id: letter.itemId,
      attempts: letter.attempts,
      last_error: letter.lastError,
      failed_at: letter.failedAt,
    }));
    const rows = await this.query<{ updated: number }>(
      'save subscription progress',
      `WITH updated AS (
         UPDATE ${this.s}.subscriptions SET
           cursor = greatest(cursor, $2),
           attempts = coalesce($3, attempts),
           next_attempt_at = CASE WHEN $4 THEN $5::timestamptz ELSE next_attempt_at END,
           last_error = CASE WHEN $6 THEN $7 ELSE last_error END,
           delivered = delivered + $8,
           dead_lettered = dead_lettered + $9
         WHERE id = $1
           AND ($10::text IS NULL OR (lease_holder = $10 AND lease_until > $11::timestamptz))
         RETURNING id
       ), letters AS (
         INSERT INTO ${this.s}.dead_letters
           (subscription_id, seq, event, item_id, attempts, last_error, failed_at)
         SELECT updated.id, l.seq, l.event, l.item_id, l.attempts, l.last_error, l.failed_at
           FROM updated, jsonb_to_recordset($12::jsonb) AS l(seq bigint, event text,
             item_id text, attempts integer, last_error text, failed_at timestamptz)
         ON CONFLICT DO NOTHING
       )
       SELECT count(*)::int AS updated FROM updated`,
      [
        id,
        progress.cursor,
        progress.attempts ?? null,
        progress.nextAttemptAt !== undefined,
        progress.nextAttemptAt ?? null,
        progress.lastError !== undefined,
        progress.lastError ?? null,
        progress.delivered ?? 0,
        letters.length,
        holder,
        now,
        JSON.stringify(letters),
      ],
    );
    return (rows[0]?.updated ?? 0) > 0;
  }

  async listDeadLetters(
    subscriptionId: string,
    options: { afterSeq?: number; limit: number },
  ): Promise<DeadLetter[]> {
    this.assertOpen();
    const afterSeq = options.afterSeq ?? 0;
    const limit = options.limit;
    const rows = await this.query<DeadLetterRow>(
      'list dead letters',
      `SELECT subscription_id, seq, event, item_id, attempts, last_error,
              (extract(epoch FROM failed_at) * 1000)::int8 AS failed_ms
         FROM ${this.s}.dead_letters
        WHERE subscription_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
      [subscriptionId, afterSeq, limit],
    );
    return rows.map((row) => ({
      subscriptionId: row.subscription_id,
      seq: row.seq,
      event: row.event,
      itemId: row.item_id,
      attempts: row.attempts,
      lastError: row.last_error,
      failedAt: iso(row.failed_ms),
    }));
  }
}
