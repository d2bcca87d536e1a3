import { randomUUID } from 'node:crypto';
import type { ItemFilter, Logger, SubscriptionEvent, WebhookPayload } from '@ctxbus/core';
import { backoffDelay, CHANGE_EVENT_NAMES, itemMatches } from '@ctxbus/core';
import type { Change, DeadLetter, Store, SubscriptionRecord } from '@ctxbus/store';
import type { ChangeFeed } from '../change-feed.js';
import { LogThrottle } from './log-throttle.js';
import type { SendOptions, SendResult } from './webhook-sender.js';
import { sendWebhook } from './webhook-sender.js';
import { signWebhook } from './webhook-signature.js';

export interface WebhookOptions {
  /** Allow endpoints on private, loopback and link-local addresses (default false). */
  allowPrivateEndpoints?: boolean;
  /** Attempts per change before it is dead-lettered (default 8). */
  maxAttempts?: number;
  /** First retry delay; doubled after each failure (default 1,000 ms). */
  backoffBaseMs?: number;
  /** Longest retry delay (default 5 minutes). */
  backoffMaxMs?: number;
  /** Per-request timeout (default 10 s). */
  timeoutMs?: number;
  /** How long a hub holds a subscription before another may take it over (default 30 s). */
  leaseMs?: number;
  /** How often subscriptions are looked at without a write hint (default 1 s). */
  pollMs?: number;
  /** Subscriptions delivered at once (each one in order) (default 16). */
  concurrency?: number;
  /**
   * This hub's identity in subscription leases. Hubs sharing a store need distinct ones (the
   * default is random per process). A hub that is the only process on its store (the embedded
   * one) may use a fixed one: after a crash it then resumes at once instead of waiting for the
   * previous process's lease to run out.
   */
  leaseHolder?: string;
}

export const DEFAULT_WEBHOOK_OPTIONS: Required<Omit<WebhookOptions, 'leaseHolder'>> = {
  allowPrivateEndpoints: false,
  maxAttempts: 8,
  backoffBaseMs: 1_000,
  backoffMaxMs: 5 * 60_000,
  timeoutMs: 10_000,
  leaseMs: 30_000,
  pollMs: 1_000,
  concurrency: 16,
};

const READ_BATCH = 200;

/** How often one subscription's failures are logged: once, then at most once a minute. */
const LOG_EVERY_MS = 60_000;

/** The store filter and events of a subscription, for matching changes in memory. */
/** How often the dispatcher reads which tokens are revoked (the token verdicts' interval). */
const TOKEN_CHECK_MS = 5_000;

export function subscriptionMatcher(subscription: SubscriptionRecord) {
  const { events, ...rest } = subscription.filter;
  const filter: ItemFilter = { ...rest, includeSuperseded: true };
  const wanted = new Set<SubscriptionEvent>(events ?? ['context-added']);
  const viewer = { teamId: subscription.teamId, runtime: subscription.runtime };
  return (change: Change, now: Date): boolean =>
    change.teamId === subscription.teamId &&
    wanted.has(CHANGE_EVENT_NAMES[change.kind]) &&
    itemMatches(change.item, viewer, filter, now);
}

/** The retry delay after `attempts` failures: doubling from the base, capped, ±20% jitter. */
export function retryDelayMs(
  attempts: number,
  options: Pick<Required<WebhookOptions>, 'backoffBaseMs' | 'backoffMaxMs'>,
): number {
  const plain = backoffDelay(attempts - 1, {
    initialMs: options.backoffBaseMs,
    maxMs: options.backoffMaxMs,
  });
  return Math.round(plain * (0.8 + Math.random() * 0.4));
}

/**
 * Delivers push subscriptions: each subscription's matching changes are POSTed in sequence
 * order, one at a time, signed. A failure is retried with exponential backoff (the change
 * stays at the head: order is kept), and after `maxAttempts` it is dead-lettered and delivery
 * moves on. Progress lives in the store, so a restarted hub resumes where it stopped; hubs
 * sharing a database take a lease per subscription, so one delivers it at a time. Delivery is
 * at least once: a crash between a POST and saving its progress repeats that POST, with the
 * same `webhook-id` for the receiver to drop.
 */
export class PushDispatcher {
  private readonly options: Required<WebhookOptions>;
  private readonly holder: string;
  /** Subscriptions being delivered now, and their teams. */
  private readonly active = new Map<string, string>();
  /** Subscriptions this hub leased, released on a clean shutdown. */
  private readonly held = new Set<string>();
  private timer: NodeJS.Timeout | null = null;
  private wakeAt = Number.POSITIVE_INFINITY;
  private watching: { close(): void } | null = null;
  private ticking = false;
  private again = false;
  /**
   * Whether the last look found push subscriptions (null: not looked yet). When it found none,
   * write hints are ignored: no store round trips per write on a hub without webhooks. A
   * subscription created through this hub kicks at once; one created through another hub is
   * found by the next poll (`pollMs`), while the hub that created it delivers at once.
   */
  private havePush: boolean | null = null;
  /** Where the next look starts in the list, so that every subscription gets its turn. */
  private rotation = 0;
  /** A look found more due subscriptions than free slots: look again when a slot frees. */
  private crowded = false;
  private closed = false;
  private readonly inFlight = new Set<Promise<void>>();
  /** A subscription's failures logged once a minute (`held`: the lines held back since). */
  private readonly logThrottle = new LogThrottle(LOG_EVERY_MS, () => this.clock().getTime());

  constructor(
    private readonly store: Store,
    private readonly feed: ChangeFeed,
    private readonly clock: () => Date,
    private readonly logger: Logger,
    private readonly userAgent: string,
    options: WebhookOptions = {},
    private readonly send: (
      endpoint: string,
      headers: Record<string, string>,
      body: string,
      options: SendOptions,
    ) => Promise<SendResult> = sendWebhook,
  ) {
    this.options = { leaseHolder: `hub-${randomUUID()}`, ...DEFAULT_WEBHOOK_OPTIONS, ...options };
    this.holder = this.options.leaseHolder;
  }

  start(): void {
    this.watching = this.feed.onChange(() => this.hint());
    this.kick();
  }

  /** Something was written: look now, unless the last look found no push subscriptions. */
  private hint(): void {
    if (this.havePush !== false) this.kick();
  }

  /** Looks at every push subscription soon (coalesced). */
  kick(): void {
    if (this.closed) return;
    if (this.ticking) {
      this.again = true;
      return;
    }
    this.ticking = true;
    void this.tick()
      .catch((error: unknown) => this.logger.error({ err: error }, 'webhook dispatch failed'))
      .finally(() => {
        this.ticking = false;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  private schedule(atMs: number): void {
    if (this.closed || atMs >= this.wakeAt) return;
    if (this.timer) clearTimeout(this.timer);
    this.wakeAt = atMs;
    this.timer = setTimeout(
      () => {
        this.timer = null;
        this.wakeAt = Number.POSITIVE_INFINITY;
        this.kick();
      },
      Math.max(0, atMs - this.clock().getTime()),
    );
    this.timer.unref();
  }

  /** Revoked tokens' ids, read again at most every TOKEN_CHECK_MS. */
  private revoked: { ids: Set<string>; atMs: number } = { ids: new Set(), atMs: -Infinity };

  /**
   * The push subscriptions to deliver: those whose creating token is revoked (here, offline,
   * or on another hub) are removed instead, as that token's live streams end.
   */
  private async liveSubscriptions(nowMs: number): Promise<SubscriptionRecord[]> {
    const listed = await this.store.listSubscriptions({ delivery: 'push' });
    if (nowMs - this.revoked.atMs >= TOKEN_CHECK_MS) {
      const tokens = await this.store.listTokens({ includeRevoked: true });
      const ids = tokens.filter((token) => token.revokedAt !== null).map((token) => token.id);
      this.revoked = { ids: new Set(ids), atMs: nowMs };
    }
    const live: SubscriptionRecord[] = [];
    for (const subscription of listed) {
      if (subscription.tokenId === null || !this.revoked.ids.has(subscription.tokenId)) {
        live.push(subscription);
        continue;
      }
      await this.store.deleteSubscription(subscription.id);
      this.logger.warn(
        { subscription: subscription.id, tokenId: subscription.tokenId },
        'push subscription removed: the token that created it is revoked',
      );
    }
    return live;
  }

  private async tick(): Promise<void> {
    const nowMs = this.clock().getTime();
    this.schedule(nowMs + this.options.pollMs);
    const [subscriptions, latest] = await Promise.all([
      this.liveSubscriptions(nowMs),
      this.store.latestSeq(),
    ]);
    this.havePush = subscriptions.length > 0;
    const first = this.rotation++ % Math.max(1, subscriptions.length);
    const inTurn = [...subscriptions.slice(first), ...subscriptions.slice(0, first)];
    // A team delivers through at most a quarter of the slots: one team's slow endpoints (each
    // attempt may hold a slot for the whole timeout) leave the others room.
    const perTeam = Math.max(1, Math.floor(this.options.concurrency / 4));
    for (const subscription of inTurn) {
      if (this.closed) return;
      if (this.active.has(subscription.id) || subscription.cursor >= latest) continue;
      if (this.active.size >= this.options.concurrency) {
        this.crowded = true;
        return;
      }
      const teamActive = [...this.active.values()].filter((team) => team === subscription.teamId);
      if (teamActive.length >= perTeam) {
        this.crowded = true;
        continue;
      }
      const due = subscription.nextAttemptAt === null ? 0 : Date.parse(subscription.nextAttemptAt);
      if (due > nowMs) {
        this.schedule(due);
        continue;
      }
      this.active.set(subscription.id, subscription.teamId);
      const run = this.drain(subscription, latest)
        .catch((error: unknown) =>
          this.logger.error(
            { err: error, subscription: subscription.id },
            'webhook delivery failed',
          ),
        )
        .finally(() => {
          this.active.delete(subscription.id);
          this.inFlight.delete(run);
          if (this.crowded) {
            this.crowded = false;
            this.kick();
          }
        });
      this.inFlight.add(run);
    }
  }

  /**
   * Delivers one subscription's backlog in order, until caught up or a delivery fails. Caught
   * up, its cursor moves to `latest` (the store's newest sequence, read before its changes):
   * other teams' changes and those its filter skips never make it look due again.
   */
  private async drain(listed: SubscriptionRecord, latest: number): Promise<void> {
    const leaseUntil = () => new Date(this.clock().getTime() + this.options.leaseMs).toISOString();
    const now = () => this.clock().toISOString();
    // The listing may be older than the last delivery (this hub's previous drain of it ended
    // while the listing was read, or another hub held it): delivery resumes from the progress
    // the lease answers with, saved in the store, which no one else moves while it holds.
    const start = await this.store.leaseSubscription(listed.id, this.holder, now(), leaseUntil());
    if (!start) return;
    this.held.add(listed.id);
    const due = start.nextAttemptAt === null ? 0 : Date.parse(start.nextAttemptAt);
    if (due > this.clock().getTime()) {
      this.schedule(due);
      return;
    }
    let leaseRenewAt = this.clock().getTime() + this.options.leaseMs / 3;
    const matches = subscriptionMatcher(start);
    let cursor = start.cursor;
    let attempts = start.attempts;
    for (;;) {
      if (this.closed) return;
      const changes = await this.store.readChanges({
        afterSeq: cursor,
        teamId: start.teamId,
        limit: READ_BATCH,
      });
      let skippedTo = cursor;
      for (const change of changes) {
        if (this.closed) return;
        if (this.clock().getTime() >= leaseRenewAt) {
          if (!(await this.store.leaseSubscription(start.id, this.holder, now(), leaseUntil())))
            return;
          leaseRenewAt = this.clock().getTime() + this.options.leaseMs / 3;
        }
        if (!matches(change, this.clock())) {
          skippedTo = change.seq;
          continue;
        }
        const result = await this.deliver(start, change, attempts + 1);
        if (result.ok) {
          attempts = 0;
          cursor = change.seq;
          const saved = await this.store.saveSubscriptionProgress(
            start.id,
            this.holder,
            { cursor, attempts: 0, nextAttemptAt: null, lastError: null, delivered: 1 },
            now(),
          );
          if (!saved) return;
          continue;
        }
        attempts += 1;
        if (attempts >= this.options.maxAttempts) {
          const letter: DeadLetter = {
            subscriptionId: start.id,
            seq: change.seq,
            event: CHANGE_EVENT_NAMES[change.kind],
            itemId: change.item.id,
            attempts,
            lastError: result.error,
            failedAt: now(),
          };
          const held = this.logThrottle.pass(`${start.id}\ndead-lettered`);
          if (held !== null) {
            this.logger.warn(
              { subscription: start.id, seq: change.seq, attempts, error: result.error, held },
              'webhook dead-lettered',
            );
          }
          attempts = 0;
          cursor = change.seq;
          const saved = await this.store.saveSubscriptionProgress(
            start.id,
            this.holder,
            { cursor, attempts: 0, nextAttemptAt: null, lastError: null, deadLetters: [letter] },
            now(),
          );
          if (!saved) return;
          continue;
        }
        // Keep order: this change stays at the head until it is delivered or given up on.
        const retryAt = this.clock().getTime() + retryDelayMs(attempts, this.options);
        const held = this.logThrottle.pass(`${start.id}\nretry`);
        if (held !== null) {
          this.logger.info(
            { subscription: start.id, seq: change.seq, attempts, error: result.error, held },
            'webhook failed; will retry',
          );
        }
        await this.store.saveSubscriptionProgress(
          start.id,
          this.holder,
          {
            cursor: Math.max(cursor, skippedTo),
            attempts,
            nextAttemptAt: new Date(retryAt).toISOString(),
            lastError: result.error,
          },
          now(),
        );
        this.schedule(retryAt);
        return;
      }
      // Fewer than a batch: every change of the team up to `latest` has been read.
      const caughtUp = changes.length < READ_BATCH;
      const reached = caughtUp ? Math.max(skippedTo, latest) : skippedTo;
      if (reached > cursor) {
        cursor = reached;
        if (!(await this.store.saveSubscriptionProgress(start.id, this.holder, { cursor }, now())))
          return;
      }
      if (caughtUp) return;
    }
  }

  private deliver(
    subscription: SubscriptionRecord,
    change: Change,
    attempt: number,
  ): Promise<SendResult> {
    if (!subscription.endpoint || !subscription.secret) {
      return Promise.resolve({ ok: false, error: 'no endpoint or secret' });
    }
    const payload: WebhookPayload = {
      subscriptionId: subscription.id,
      seq: change.seq,
      event: CHANGE_EVENT_NAMES[change.kind],
      item: change.item,
    };
    const body = JSON.stringify(payload);
    const id = `${subscription.id}.${change.seq}`;
    const timestamp = Math.floor(this.clock().getTime() / 1000);
    return this.send(
      subscription.endpoint,
      {
        'webhook-id': id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signWebhook(subscription.secret, id, timestamp, body),
        'idempotency-key': id,
        'ctxbus-event': payload.event,
        'ctxbus-attempt': String(attempt),
      },
      body,
      {
        timeoutMs: this.options.timeoutMs,
        allowPrivate: this.options.allowPrivateEndpoints,
        userAgent: this.userAgent,
      },
    );
  }

  /**
   * Stops scheduling, waits for deliveries in flight (their progress is saved), and releases
   * this hub's leases so that another hub can take over at once.
   */
  async close(): Promise<void> {
    this.closed = true;
    this.watching?.close();
    if (this.timer) clearTimeout(this.timer);
    await Promise.allSettled([...this.inFlight]);
    const now = this.clock().toISOString();
    await Promise.allSettled(
      [...this.held].map((id) => this.store.leaseSubscription(id, this.holder, now, now)),
    );
  }
}
