import type { AuditRecord, ContextItemInput, Logger } from '@ctxbus/core';
import { backoffDelay, CtxbusError, prepareParsedItem } from '@ctxbus/core';
import type { Store, TaskOutboxEvent, WriteOutcome } from '@ctxbus/store';
import type { DerivedIds } from './derived-ids.js';
import { taskEventAudit } from './task-event-audit.js';
import { taskEventStatusItem } from './task-status-item.js';

// The task relay: the one place task events become status items and audit records.
//
// Every task change commits with its event (the store's outbox). The relay reads the events
// past its durable cursor, oldest first, and for each one writes the task's status item (its
// id derived from the event, so writing it again is the same write: the store answers
// `existing`), appends the event's audit records (the event's mark refuses a second append),
// then moves the cursor past it. A crash anywhere in between repeats only writes that are
// no-ops: each committed change is announced once and audited once. A failure is retried with
// backoff, from the same event: nothing after it goes first, nothing is skipped.
//
// A mutation wakes it (no polling delay); a timer wakes it too, for events another hub (or a
// crashed one) left behind. On PostgreSQL one hub at a time relays (the store's relay lock).

/** What the relay needs of the store. */
export type TaskRelayStore = Pick<Store, 'relayTaskBatch' | 'writeItems' | 'getItem'>;

export interface TaskRelayDeps {
  store: TaskRelayStore;
  clock: () => Date;
  logger: Logger;
  /** The status items' ids. */
  ids: DerivedIds;
  /** Hands written items to this hub's live streams. */
  committed(outcomes: readonly WriteOutcome[]): void;
  /** The audit records an event became (the audit anchor checkpoints them). */
  onAudit?(teamId: string, records: readonly AuditRecord[]): void;
}

export interface TaskRelayOptions {
  /** Events read per batch (default 200). */
  batch?: number;
  /** The first retry's delay after a failure, doubling up to maxRetryMs (default 100 ms). */
  retryMs?: number;
  maxRetryMs?: number;
  /** Between wakes when nothing wakes it: events other hubs left (default 1 s; 0: none). */
  idleMs?: number;
}

export class TaskRelay {
  /** Passes that failed since the hub started (each logged, each retried). */
  failures = 0;
  /** Batches relayed since the hub started, and the events in them. */
  batches = 0;
  events = 0;
  private readonly batch: number;
  private readonly retryMs: number;
  private readonly maxRetryMs: number;
  private readonly idleMs: number;
  private running: Promise<void> | null = null;
  /** Wakes asked for, and passes done for: a wake waits for a pass that began after it. */
  private requested = 0;
  private served = 0;
  private waiters: { ticket: number; resolve: () => void }[] = [];
  private retries = 0;
  private retryTimer: NodeJS.Timeout | null = null;
  private idleTimer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    private readonly deps: TaskRelayDeps,
    options: TaskRelayOptions = {},
  ) {
    this.batch = options.batch ?? 200;
    this.retryMs = options.retryMs ?? 100;
    this.maxRetryMs = options.maxRetryMs ?? 5_000;
    this.idleMs = options.idleMs ?? 1_000;
  }

  /** Resumes from the cursor, then relays on every wake (and on the idle timer). */
  start(): void {
    if (this.idleMs > 0) {
      this.idleTimer = setInterval(() => void this.wake(), this.idleMs);
      this.idleTimer.unref();
    }
    void this.wake();
  }

  /**
   * Relays what is committed: resolves when a pass that began after this call ends (a failed
   * pass is logged and retried later; this never rejects).
   */
  wake(): Promise<void> {
    if (this.closed) return Promise.resolve();
    const ticket = ++this.requested;
    const settled = new Promise<void>((resolve) => this.waiters.push({ ticket, resolve }));
    this.kick();
    return settled;
  }

  /**
   * Passes until the outbox is drained, throwing what failed (tests, and callers that must
   * know), and the events it relayed: unlike `wake`, it does not retry; it stops when another
   * relay holds the outbox.
   */
  async drain(): Promise<number> {
    await this.running;
    let relayed = 0;
    for (;;) {
      const events = await this.relayBatch();
      if (events === null) return relayed;
      relayed += events;
      if (events < this.batch) return relayed;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.idleTimer) clearInterval(this.idleTimer);
    if (this.retryTimer) clearTimeout(this.retryTimer);
    await this.running;
    this.settle(this.requested);
  }

  private kick(): void {
    // Backing off after a failure (a full disk, a store that is down), wakes wait for the
    // retry timer's pass: not every mutation and request runs a failing pass of its own.
    const backingOff = this.retries > 0 && this.retryTimer !== null;
    if (this.running || this.closed || backingOff) return;
    this.running = this.loop().finally(() => {
      this.running = null;
      if (this.served < this.requested) this.kick();
    });
  }

  /** Passes while wakes keep coming; a failure ends it (the retry timer comes back). */
  private async loop(): Promise<void> {
    while (this.served < this.requested && !this.closed) {
      const upTo = this.requested;
      try {
        const drained = await this.pass();
        this.retries = 0;
        // Another hub holds the relay: it may have read its batch before this hub's event.
        if (!drained) this.retryLater(this.retryMs);
        this.settle(upTo);
      } catch (error) {
        this.failures += 1;
        this.deps.logger.error(
          { err: error, retry: this.retries + 1 },
          'task relay failed: task changes wait to be announced and audited; retrying',
        );
        this.retryLater(
          backoffDelay(this.retries, { initialMs: this.retryMs, maxMs: this.maxRetryMs }),
        );
        this.retries += 1;
        this.settle(this.requested);
        return;
      }
    }
    this.settle(this.requested);
  }

  private settle(upTo: number): void {
    this.served = Math.max(this.served, upTo);
    const waiting = this.waiters;
    this.waiters = waiting.filter((waiter) => waiter.ticket > this.served);
    for (const waiter of waiting) if (waiter.ticket <= this.served) waiter.resolve();
  }

  /** Relays batches until the outbox is empty; false when another relay holds it. */
  private async pass(): Promise<boolean> {
    for (;;) {
      if (this.closed) return true;
      const events = await this.relayBatch();
      if (events === null) return false;
      if (events < this.batch) return true;
    }
  }

  private retryLater(delayMs: number): void {
    if (this.closed || this.retryTimer) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      void this.wake();
    }, delayMs);
    this.retryTimer.unref();
  }

  /**
   * The next batch past the cursor: its status items in one write, then (in the store's one
   * transaction) its audit records and the cursor past it. A crash between them repeats only
   * no-op writes. Null when another relay holds the outbox.
   */
  private async relayBatch(): Promise<number | null> {
    const batch = await this.deps.store.relayTaskBatch(this.batch, async (events) => {
      await this.announce(events);
      return events.map((outbox) => ({
        teamId: outbox.teamId,
        eventSeq: outbox.event.seq,
        events: taskEventAudit(outbox),
        now: outbox.event.at,
      }));
    });
    if (batch === null) return null;
    for (const { teamId, records } of batch.audited) {
      if (records.length > 0) this.deps.onAudit?.(teamId, records);
    }
    if (batch.events > 0) {
      this.batches += 1;
      this.events += batch.events;
    }
    return batch.events;
  }

  /**
   * Writes each event's status item, superseding the item of the task's event before (so a
   * feed holds one live state line per task), and hands them to the streams. All in one write
   * when every item's predecessor is where it should be (the item ids and what they supersede
   * follow from the events, so a retry writes the same items: the store answers `existing`);
   * else one by one, looking first.
   */
  private async announce(events: readonly TaskOutboxEvent[]): Promise<void> {
    const items = events.map((outbox) => {
      const { item, author } = taskEventStatusItem(outbox, this.deps.ids);
      const supersedes =
        outbox.previousSeq === null
          ? undefined
          : this.deps.ids.taskEvent(outbox.task.id, outbox.previousSeq);
      return this.prepare(outbox, { ...item, ...(supersedes && { supersedes }) }, author);
    });
    try {
      this.deps.committed(await this.deps.store.writeItems(items));
    } catch (error) {
      const code = CtxbusError.isInstance(error) ? error.code : null;
      if (code !== 'invalid_reference' && code !== 'conflict') throw error;
      // A predecessor expired, was never written (an event older than the relay) or lost its
      // place: look before each write.
      for (const outbox of events) await this.announceOne(outbox);
    }
  }

  /** One event's status item, superseding its predecessor only when that is still live. */
  private async announceOne(outbox: TaskOutboxEvent): Promise<void> {
    const { store } = this.deps;
    const { item, author } = taskEventStatusItem(outbox, this.deps.ids);
    const writer = { teamId: outbox.teamId, runtime: author };
    if (await store.getItem(writer, item.id as string)) return;
    const previous =
      outbox.previousSeq === null
        ? null
        : await store.getItem(writer, this.deps.ids.taskEvent(outbox.task.id, outbox.previousSeq));
    const supersedes = previous?.supersededBy === null ? previous.id : undefined;
    this.deps.committed(
      await store.writeItems([
        this.prepare(outbox, { ...item, ...(supersedes && { supersedes }) }, author),
      ]),
    );
  }

  private prepare(outbox: TaskOutboxEvent, item: ContextItemInput, author: string) {
    return prepareParsedItem(
      item,
      { teamId: outbox.teamId, runtime: author },
      { now: this.deps.clock() },
    );
  }
}
