import type { ItemFilter, Logger, Viewer } from '@ctxbus/core';
import {
  CtxbusError,
  DEFAULT_MAX_STREAM_PENDING_BYTES,
  DEFAULT_MAX_STREAMS_PER_TEAM,
  DEFAULT_MAX_STREAMS_PER_TOKEN,
  itemMatches,
} from '@ctxbus/core';
import type { Change, Store, WriteOutcome } from '@ctxbus/store';

const READ_BATCH = 500;
/**
 * Catch-up reads running at once across all of a hub's subscribers. Others wait their turn: 500
 * streams opened at `since=0` read the store a few at a time, not all at once.
 */
const DEFAULT_CONCURRENT_CATCH_UPS = 4;
/** A subscriber's first catch-up read (later ones grow up to READ_BATCH as sizes allow). */
const FIRST_READ = 16;

export interface ChangeFeedOptions {
  store: Store;
  clock: () => Date;
  logger: Logger;
  /**
   * Bytes of changes (approximately their JSON size) a subscriber may hold undelivered. Past
   * it, a live subscriber is ended as a slow reader (it resumes from its cursor); one still
   * catching up from the store drops what it holds and keeps reading the store.
   */
  maxPendingBytes?: number;
  /** Catch-up reads at once across all subscribers (default 4); the others queue. */
  concurrentCatchUps?: number;
  /** Streams one token may hold open (default 100), and one team's tokens together (1,000). */
  maxStreamsPerToken?: number;
  maxStreamsPerTeam?: number;
}

/** The token a stream was opened with, so that revoking the token ends the stream. */
export interface StreamOwner {
  tokenId: string;
  tokenHash: string;
}

/** Why the hub ended a stream. */
export interface StreamEnd {
  reason: 'slow_reader' | 'token_revoked';
  message: string;
  /** The last sequence the stream delivered: resume after it (Last-Event-ID or `since`). */
  resumeAfter: number;
}

/** How many streams the hub ended, by reason, since it started. */
export type StreamEndCounts = Record<StreamEnd['reason'], number>;

const changeSizes = new WeakMap<Change, number>();

/**
 * About how many bytes a change takes as JSON: its strings' lengths plus a fixed overhead,
 * counted once per change (the feed hands the same Change objects to every subscriber).
 */
export function approximateChangeBytes(change: Change): number {
  let size = changeSizes.get(change);
  if (size === undefined) {
    size = 256;
    for (const value of Object.values(change.item)) {
      if (typeof value === 'string') size += value.length + 16;
      else if (Array.isArray(value)) for (const entry of value) size += String(entry).length + 4;
      else if (value !== null && typeof value === 'object') size += JSON.stringify(value).length;
      else size += 16;
    }
    changeSizes.set(change, size);
  }
  return size;
}

/** The longest prefix of `changes` within `maxBytes` (at least one change, when there is one). */
function withinBytes(changes: Change[], maxBytes: number): Change[] {
  let bytes = 0;
  for (const [index, change] of changes.entries()) {
    bytes += approximateChangeBytes(change);
    if (bytes > maxBytes && index > 0) return changes.slice(0, index);
  }
  return changes;
}

/**
 * The size of a subscriber's next catch-up read: double the last, capped at READ_BATCH and at
 * as many changes as the byte bound holds if each were as large as the last read's largest.
 */
function nextReadLimit(limit: number, batch: readonly Change[], maxPendingBytes: number): number {
  let largest = 0;
  for (const change of batch) largest = Math.max(largest, approximateChangeBytes(change));
  const fits = largest === 0 ? READ_BATCH : Math.floor(maxPendingBytes / largest);
  return Math.max(1, Math.min(READ_BATCH, limit * 2, fits));
}

/**
 * One reader of the store's change log per hub, fanning changes out in process. The feed is
 * only a hint: each subscriber keeps its own cursor and reads the store to catch up (on
 * connect, after a resume, or when it fell behind), so delivery is ordered and gapless.
 */
export class ChangeFeed {
  private cursor = 0;
  private readonly subscribers = new Set<FeedSubscriber>();
  /** Ended streams whose connections are still open (see linger). */
  private readonly lingering = new Set<{ teamId: string; tokenId: string | undefined }>();
  private pumping = false;
  private again = false;
  private closed = false;
  private watching: { close(): void } | null = null;
  private readonly listeners = new Set<() => void>();
  private readonly taps = new Set<(changes: readonly Change[]) => void>();
  readonly store: Store;
  readonly clock: () => Date;
  readonly maxPendingBytes: number;
  readonly maxStreamsPerToken: number;
  readonly maxStreamsPerTeam: number;
  readonly ended: StreamEndCounts = { slow_reader: 0, token_revoked: 0 };
  /** Store reads subscribers made to catch up, since the hub started. */
  catchUpReads = 0;
  private readonly logger: Logger;
  private readonly catchUpSlots: Semaphore;

  constructor(options: ChangeFeedOptions) {
    this.store = options.store;
    this.clock = options.clock;
    this.logger = options.logger;
    this.maxPendingBytes = options.maxPendingBytes ?? DEFAULT_MAX_STREAM_PENDING_BYTES;
    this.catchUpSlots = new Semaphore(options.concurrentCatchUps ?? DEFAULT_CONCURRENT_CATCH_UPS);
    this.maxStreamsPerToken = options.maxStreamsPerToken ?? DEFAULT_MAX_STREAMS_PER_TOKEN;
    this.maxStreamsPerTeam = options.maxStreamsPerTeam ?? DEFAULT_MAX_STREAMS_PER_TEAM;
  }

  /**
   * Refuses a new stream (429 `limit_reached`) when its token, or its team, already holds as
   * many as it may. Checked before a stream starts (before a WebSocket upgrade).
   */
  admit(viewer: Viewer, owner: StreamOwner | undefined): void {
    let team = 0;
    let token = 0;
    const held = [...this.subscribers].map((subscriber) => ({
      teamId: subscriber.teamId,
      tokenId: subscriber.owner?.tokenId,
    }));
    for (const stream of [...held, ...this.lingering]) {
      if (stream.teamId === viewer.teamId) team += 1;
      if (owner && stream.tokenId === owner.tokenId) token += 1;
    }
    if (owner && token >= this.maxStreamsPerToken) {
      throw new CtxbusError(
        'limit_reached',
        `this token already holds ${this.maxStreamsPerToken} live streams; close one first`,
      );
    }
    if (team >= this.maxStreamsPerTeam) {
      throw new CtxbusError(
        'limit_reached',
        `team ${viewer.teamId} already holds ${this.maxStreamsPerTeam} live streams; close one first`,
      );
    }
  }

  /**
   * One subscriber's catch-up read, in its turn among all subscribers', and after it a turn of
   * the event loop: a socket that closed meanwhile is seen before the next read, and requests
   * are served between reads (a loop of reads and sends that never yields would starve both).
   */
  async readForCatchUp(afterSeq: number, teamId: string, limit: number): Promise<Change[]> {
    await this.catchUpSlots.acquire();
    try {
      this.catchUpReads += 1;
      return await this.store.readChanges({ afterSeq, teamId, limit });
    } finally {
      this.catchUpSlots.release();
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  async start(): Promise<void> {
    this.cursor = await this.store.latestSeq();
    // Several processes may write (PostgreSQL): their commits arrive as hints from the store.
    this.watching = this.store.watchChanges?.((seq) => this.notify(seq)) ?? null;
  }

  /**
   * Hands `listener` every change the feed reads, of every team, in order, until the returned
   * function is called: an in-process observer (the task claim waiters), best effort (no
   * catch-up; a change read while nobody listened is not handed again).
   */
  tap(listener: (changes: readonly Change[]) => void): () => void {
    this.taps.add(listener);
    return () => this.taps.delete(listener);
  }

  /** Whether anyone takes changes: when nobody does, the feed only moves its cursor. */
  private get unheard(): boolean {
    return this.subscribers.size === 0 && this.taps.size === 0;
  }

  private hand(changes: readonly Change[]): void {
    for (const tap of this.taps) tap(changes);
    for (const subscriber of this.subscribers) subscriber.offer(changes);
  }

  get subscriberCount(): number {
    return this.subscribers.size;
  }

  /**
   * Something was written (`seq`: the newest sequence, when known): read the new changes once
   * and offer them to every subscriber. With nobody subscribed, only the cursor moves.
   */
  notify(seq?: number): void {
    if (this.closed) return;
    for (const listener of this.listeners) listener();
    if (seq !== undefined && this.unheard) {
      this.cursor = Math.max(this.cursor, seq);
      return;
    }
    // Already read (a hub hears its own commits twice: from the write and from NOTIFY).
    if (seq !== undefined && seq <= this.cursor) return;
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = true;
    void this.pump()
      .catch((error: unknown) => this.logger.error({ err: error }, 'change feed read failed'))
      .finally(() => {
        this.pumping = false;
        if (this.again) {
          this.again = false;
          this.notify();
        }
      });
  }

  /**
   * This process has just committed a write. When its changes (new items, and the items they
   * replaced) are the very next changes after the feed's cursor (no gap, no read in flight),
   * they are offered as they are, without reading them back; otherwise this is `notify`.
   * Subscribers still drop duplicates by sequence, so the hint for the same commit (NOTIFY)
   * costs nothing.
   */
  committed(outcomes: readonly WriteOutcome[]): void {
    if (this.closed) return;
    const changes: Change[] = [];
    let unknown = false;
    for (const { status, item, superseded } of outcomes) {
      if (status !== 'created') continue;
      // A replacement the outcome does not describe: its change must be read.
      if (item.supersedes !== null && !superseded) unknown = true;
      changes.push({ seq: item.seq, kind: 'added', teamId: item.teamId, item });
      if (superseded) {
        const { seq, item: replaced } = superseded;
        changes.push({ seq, kind: 'superseded', teamId: replaced.teamId, item: replaced });
      }
    }
    changes.sort((a, b) => a.seq - b.seq);
    const last = changes.at(-1);
    if (!last) return;
    const direct =
      !this.pumping &&
      !unknown &&
      changes.every((change, index) => change.seq === this.cursor + 1 + index);
    if (!direct) {
      this.notify(last.seq);
      return;
    }
    for (const listener of this.listeners) listener();
    this.cursor = last.seq;
    if (this.unheard) return;
    this.hand(changes);
  }

  private async pump(): Promise<void> {
    if (this.unheard) {
      // Nobody to tell. A subscriber that joins later reads the store from its own cursor.
      this.cursor = await this.store.latestSeq();
      return;
    }
    for (;;) {
      const changes = await this.store.readChanges({ afterSeq: this.cursor, limit: READ_BATCH });
      const last = changes.at(-1);
      if (!last) return;
      this.cursor = last.seq;
      this.hand(changes);
      if (changes.length < READ_BATCH) return;
    }
  }

  /** Calls `listener` whenever something may have been written (a hint, like `notify`). */
  onChange(listener: () => void): { close(): void } {
    this.listeners.add(listener);
    return { close: () => this.listeners.delete(listener) };
  }

  /** Starts a subscription that delivers the viewer's changes after `afterSeq`. */
  subscribe(
    viewer: Viewer,
    filter: ItemFilter,
    afterSeq: number,
    owner?: StreamOwner,
  ): FeedSubscriber {
    const subscriber = new FeedSubscriber(this, viewer, filter, afterSeq, owner, () =>
      this.subscribers.delete(subscriber),
    );
    this.subscribers.add(subscriber);
    return subscriber;
  }

  /**
   * A stream the hub ended whose connection is still open (its reader has not taken what is
   * queued for it; the route drops it after a grace period): it keeps its place in the token's
   * and the team's limits until `gone` resolves, so ending streams never frees room for more
   * connections than the limits allow.
   */
  linger(subscriber: FeedSubscriber, gone: Promise<void>): void {
    const entry = { teamId: subscriber.teamId, tokenId: subscriber.owner?.tokenId };
    this.lingering.add(entry);
    void gone.finally(() => this.lingering.delete(entry));
  }

  /** Ended streams whose connections are not closed yet. */
  get lingeringCount(): number {
    return this.lingering.size;
  }

  /** The tokens (hash to id) that open subscriptions were made with. */
  owners(): Map<string, string> {
    const owners = new Map<string, string>();
    for (const subscriber of this.subscribers) {
      if (subscriber.owner) owners.set(subscriber.owner.tokenHash, subscriber.owner.tokenId);
    }
    return owners;
  }

  /** Ends every subscription made with the token (it was revoked); returns how many. */
  endToken(tokenId: string): number {
    let count = 0;
    for (const subscriber of [...this.subscribers]) {
      if (subscriber.owner?.tokenId !== tokenId) continue;
      subscriber.end('token_revoked', 'the token this stream was opened with was revoked');
      count += 1;
    }
    return count;
  }

  /** Counts a stream the hub ended. */
  countEnd(reason: StreamEnd['reason']): void {
    this.ended[reason] += 1;
  }

  close(): void {
    this.closed = true;
    this.watching?.close();
    this.listeners.clear();
    for (const subscriber of [...this.subscribers]) subscriber.close();
  }
}

/**
 * One subscriber's cursor. `next()` resolves with the next matching changes (possibly after
 * reading the store to catch up), or null once closed.
 */
export class FeedSubscriber {
  private lastSeq: number;
  private catchingUp = true;
  private resets = 0;
  /**
   * How many changes the next catch-up read asks for: it starts at 16 and at most doubles,
   * but never past what the largest change of the last read says fits the byte bound, so a
   * reader resuming over large items reads about the bound at a time, not READ_BATCH of them.
   */
  private readLimit = FIRST_READ;
  private pending: Change[] = [];
  private pendingBytes = 0;
  private wake: (() => void) | null = null;
  private closed = false;
  private readonly filter: ItemFilter;
  /** Set when the hub ended the subscription (not when the peer went away). */
  endedBy: StreamEnd | null = null;
  private markDone: () => void = () => {};
  /** Resolves once the subscription is closed (ended by the hub, or its peer went away). */
  readonly done = new Promise<void>((resolve) => {
    this.markDone = resolve;
  });

  get teamId(): string {
    return this.viewer.teamId;
  }

  constructor(
    private readonly feed: ChangeFeed,
    private readonly viewer: Viewer,
    filter: ItemFilter,
    afterSeq: number,
    readonly owner: StreamOwner | undefined,
    private readonly onClose: () => void,
  ) {
    // Stream events describe an item after a change, so superseded items are part of it.
    this.filter = { ...filter, includeSuperseded: true };
    this.lastSeq = afterSeq;
  }

  /**
   * Called by the feed with changes in sequence order. Changes are buffered even while the
   * subscriber is catching up from the store: a change that lands during the last catch-up
   * read is then still delivered (duplicates are dropped by sequence).
   */
  offer(changes: readonly Change[]): void {
    if (this.closed) return;
    // Only what the reader left untaken counts against it: one commit larger than the bound,
    // offered to a reader that is keeping up, is delivered.
    const behind = this.pending.length > 0;
    for (const change of changes) {
      if (change.teamId === this.viewer.teamId && change.seq > this.lastSeq) {
        this.pending.push(change);
        this.pendingBytes += approximateChangeBytes(change);
      }
    }
    if (this.pendingBytes > this.feed.maxPendingBytes) {
      if (this.catchingUp) {
        // Still reading the store, which has these changes too: drop them. Nothing is lost.
        this.pending = [];
        this.pendingBytes = 0;
        this.resets += 1;
      } else if (behind) {
        this.end(
          'slow_reader',
          `the stream held more than ${this.feed.maxPendingBytes} bytes of changes its reader had not taken`,
        );
        return;
      }
    }
    this.wake?.();
  }

  private matches(change: Change): boolean {
    return itemMatches(change.item, this.viewer, this.filter, this.feed.clock());
  }

  async next(): Promise<Change[] | null> {
    for (;;) {
      if (this.closed) return null;
      if (this.catchingUp) {
        const resets = this.resets;
        const limit = this.readLimit;
        const batch = await this.feed.readForCatchUp(this.lastSeq, this.viewer.teamId, limit);
        if (this.closed) return null;
        // What is handed on stays within the byte bound (at least one change); the rest of
        // the read is dropped and read again next time.
        const kept = withinBytes(batch, this.feed.maxPendingBytes);
        const last = kept.at(-1);
        if (last) this.lastSeq = last.seq;
        // Caught up, unless the buffer overflowed (and was dropped) while we were reading.
        if (kept.length === batch.length && batch.length < limit && this.resets === resets) {
          this.catchingUp = false;
        }
        this.readLimit = nextReadLimit(limit, batch, this.feed.maxPendingBytes);
        const matching = kept.filter((change) => this.matches(change));
        if (matching.length > 0) return matching;
        continue;
      }
      if (this.pending.length > 0) {
        const fresh = this.pending.filter((change) => change.seq > this.lastSeq);
        this.pending = [];
        this.pendingBytes = 0;
        const last = fresh.at(-1);
        if (last) this.lastSeq = last.seq;
        const matching = fresh.filter((change) => this.matches(change));
        if (matching.length > 0) return matching;
        continue;
      }
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
      this.wake = null;
    }
  }

  /** The hub ends the subscription: `next()` resolves null and `endedBy` says why. */
  end(reason: StreamEnd['reason'], message: string): void {
    if (this.closed) return;
    this.endedBy = { reason, message, resumeAfter: this.lastSeq };
    this.feed.countEnd(reason);
    this.close();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.pending = [];
    this.pendingBytes = 0;
    this.onClose();
    this.wake?.();
    this.markDone();
  }
}

/** At most `slots` holders at once; the others wait in order. */
class Semaphore {
  private readonly waiting: (() => void)[] = [];

  constructor(private slots: number) {}

  async acquire(): Promise<void> {
    if (this.slots > 0) {
      this.slots -= 1;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.slots += 1;
  }
}
