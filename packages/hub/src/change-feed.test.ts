import type { Viewer } from '@ctxbus/core';
import { prepareItem, silentLogger } from '@ctxbus/core';
import type { Store } from '@ctxbus/store';
import { openSqliteStore } from '@ctxbus/store';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FeedSubscriber } from './change-feed.js';
import { approximateChangeBytes, ChangeFeed } from './change-feed.js';

const acme: Viewer = { teamId: 'acme', runtime: 'claude-code' };
const globex: Viewer = { teamId: 'globex', runtime: 'claude-code' };

let store: Store;
let feed: ChangeFeed;

async function write(title: string, viewer: Viewer = acme, extra: Record<string, unknown> = {}) {
  const [outcome] = await store.writeItems([
    prepareItem({ type: 'status', title, ...extra }, viewer, { now: new Date() }),
  ]);
  feed.notify();
  return outcome?.item;
}

/** Collects a subscriber's seqs until it has `count` of them. */
async function collect(subscriber: FeedSubscriber, count: number): Promise<number[]> {
  const seqs: number[] = [];
  while (seqs.length < count) {
    const changes = await subscriber.next();
    if (changes === null) break;
    seqs.push(...changes.map((change) => change.seq));
  }
  return seqs;
}

function setup(maxPendingBytes?: number) {
  store = openSqliteStore({ path: ':memory:' });
  feed = new ChangeFeed({
    store,
    clock: () => new Date(),
    logger: silentLogger,
    ...(maxPendingBytes !== undefined && { maxPendingBytes }),
  });
}

/**
 * Replaces the feed with one whose store counts its change-log reads; `settled()` resolves once
 * every read started so far has answered.
 */
async function countReads(
  maxPendingBytes?: number,
): Promise<{ count: number; settled(): Promise<unknown> }> {
  const started: Promise<unknown>[] = [];
  const reads = {
    count: 0,
    settled: () => Promise.allSettled(started),
  };
  const counting: Store = Object.create(store, {
    readChanges: {
      value: (options: Parameters<Store['readChanges']>[0]) => {
        reads.count += 1;
        const read = store.readChanges(options);
        started.push(read);
        return read;
      },
    },
  });
  feed.close();
  feed = new ChangeFeed({
    store: counting,
    clock: () => new Date(),
    logger: silentLogger,
    ...(maxPendingBytes !== undefined && { maxPendingBytes }),
  });
  await feed.start();
  return reads;
}

describe('ChangeFeed', () => {
  beforeEach(async () => {
    setup();
    await feed.start();
  });
  afterEach(async () => {
    feed.close();
    await store.close();
  });

  it('replays from afterSeq, then delivers live changes in order', async () => {
    await write('a');
    await write('b');
    const subscriber = feed.subscribe(acme, {}, 1);
    const first = collect(subscriber, 3);
    await write('c');
    await write('d');
    expect(await first).toEqual([2, 3, 4]);
    subscriber.close();
    expect(await subscriber.next()).toBeNull();
  });

  it('is gapless for subscribers that join at any moment of a write burst', async () => {
    const total = 400;
    const joined: { subscriber: FeedSubscriber; after: number; result: Promise<number[]> }[] = [];
    for (let index = 1; index <= total; index++) {
      if (index % 37 === 0) {
        const after = await store.latestSeq();
        const subscriber = feed.subscribe(acme, {}, after);
        joined.push({ subscriber, after, result: collect(subscriber, total - after) });
      }
      // Alternate awaited and fire-and-forget writes so notifications overlap reads.
      if (index % 3 === 0) await write(`w${index}`);
      else void write(`w${index}`);
    }
    for (const { after, result } of joined) {
      expect(await result).toEqual(Array.from({ length: total - after }, (_, i) => after + i + 1));
    }
  });

  it('delivers a change committed while its catch-up read is in flight', async () => {
    await write('before');
    let injected = false;
    // Resolves once the feed has offered the subscriber the change written during its read.
    let offeredDuring: () => void = () => {};
    const duringOffered = new Promise<void>((resolve) => {
      offeredDuring = resolve;
    });
    const slowStore = new Proxy(store, {
      get(target, property, receiver) {
        if (property !== 'readChanges') return Reflect.get(target, property, receiver);
        return async (options: Parameters<Store['readChanges']>[0]) => {
          const result = await target.readChanges(options);
          if (options.teamId !== undefined && !injected) {
            // The read has happened; now a write lands and the feed dispatches it, before the
            // read answers.
            injected = true;
            await write('during');
            await duringOffered;
          }
          return result;
        };
      },
    });
    feed.close();
    feed = new ChangeFeed({ store: slowStore, clock: () => new Date(), logger: silentLogger });
    await feed.start();
    const subscriber = feed.subscribe(acme, {}, 0);
    const offer = subscriber.offer.bind(subscriber);
    subscriber.offer = (changes) => {
      offer(changes);
      if (changes.some((change) => change.item.title === 'during')) offeredDuring();
    };
    expect(await collect(subscriber, 2)).toEqual([1, 2]);
  });

  it('reads each commit once: a hint at or below what it already read is not a read', async () => {
    const reads = await countReads();
    const subscriber = feed.subscribe(acme, {}, 0);
    const [outcome] = await store.writeItems([
      prepareItem({ type: 'status', title: 'once' }, acme, { now: new Date() }),
    ]);
    const seq = outcome?.item.seq ?? 0;
    // The writing hub's own hint, then the same commit again through NOTIFY.
    feed.notify(seq);
    expect(await collect(subscriber, 1)).toEqual([seq]);
    const before = reads.count;
    feed.notify(seq);
    feed.notify(seq - 1);
    expect(reads.count).toBe(before);
    // A newer sequence is read. Its delivery is the barrier: a read the stale hints had started
    // would be counted by then, as a second read.
    const [next] = await store.writeItems([
      prepareItem({ type: 'status', title: 'next' }, acme, { now: new Date() }),
    ]);
    feed.notify(next?.item.seq);
    expect(await collect(subscriber, 1)).toEqual([next?.item.seq]);
    expect(reads.count).toBe(before + 1);
    subscriber.close();
  });

  it("offers this process's own commits without reading them back, and reads when it must", async () => {
    const reads = await countReads();
    const subscriber = feed.subscribe(acme, {}, 0);
    /** The reads so far, once each has answered (the subscriber's catch-up read included). */
    const readsAfterCatchUp = async () => {
      await reads.settled();
      return reads.count;
    };
    const commit = async (inputs: Record<string, unknown>[]) => {
      const outcomes = await store.writeItems(
        inputs.map((input) =>
          prepareItem({ type: 'status', title: 'x', ...input }, acme, { now: new Date() }),
        ),
      );
      feed.committed(outcomes);
      return outcomes.map((outcome) => outcome.item);
    };
    // The subscriber's own catch-up read (an empty store) happens first.
    const firstTwo = collect(subscriber, 2);
    const before = await readsAfterCatchUp();
    // Next in line: delivered as committed, no read.
    const [a, b] = await commit([{ title: 'a' }, { title: 'b' }]);
    expect(await firstTwo).toEqual([a?.seq, b?.seq]);
    expect(reads.count).toBe(before);
    // An idempotent retry creates nothing: nothing to offer, nothing read.
    feed.committed(await store.writeItems([]));
    expect(reads.count).toBe(before);
    // A write that supersedes another also changes the old item: both delivered as committed
    // (the outcome carries the replaced item and its change's sequence), no read.
    const [first] = await commit([{ title: 'rule v1', key: 'rules/x', type: 'decision' }]);
    expect(await collect(subscriber, 1)).toEqual([first?.seq]);
    const [second] = await commit([{ title: 'rule v2', key: 'rules/x', type: 'decision' }]);
    const superseding = await collect(subscriber, 2);
    expect(superseding[0]).toBe(second?.seq);
    expect(superseding).toEqual([second?.seq, (second?.seq ?? 0) + 1]);
    expect(reads.count).toBe(before);
    // A commit behind the feed's back (another process, no hint yet) leaves a gap: the next
    // own commit is read back with it, in order.
    const [hidden] = await store.writeItems([
      prepareItem({ type: 'status', title: 'elsewhere' }, acme, { now: new Date() }),
    ]);
    const [mine] = await commit([{ title: 'mine' }]);
    expect(await collect(subscriber, 2)).toEqual([hidden?.item.seq, mine?.seq]);
    expect(reads.count).toBe(before + 1);
    subscriber.close();
  });

  it('keeps reading the store when a subscriber that is catching up lags, losing nothing', async () => {
    feed.close();
    await store.close();
    setup(2_000);
    await feed.start();
    const subscriber = feed.subscribe(acme, {}, 0);
    for (let index = 0; index < 60; index++) await write(`burst ${index}`);
    expect(subscriber.endedBy).toBeNull();
    expect(await collect(subscriber, 60)).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
  });

  it('hands a reader catching up over large items at most its byte bound at a time', async () => {
    // 300 small items, then 12 of 40 KB: a read sized for the small ones reaches the large.
    const content = 'x'.repeat(40_000);
    const inputs = [
      ...Array.from({ length: 300 }, (_, index) => ({ title: `small ${index}` })),
      ...Array.from({ length: 12 }, (_, index) => ({ title: `large ${index}`, content })),
    ];
    await store.writeItems(
      inputs.map((input) => prepareItem({ type: 'status', ...input }, acme, { now: new Date() })),
    );
    const reads = await countReads(100_000);
    const subscriber = feed.subscribe(acme, {}, 0);
    const seqs: number[] = [];
    let largest = 0;
    while (seqs.length < 312) {
      const changes = await subscriber.next();
      if (changes === null) break;
      let bytes = 0;
      for (const change of changes) bytes += approximateChangeBytes(change);
      largest = Math.max(largest, bytes);
      seqs.push(...changes.map((change) => change.seq));
    }
    expect(seqs).toEqual(Array.from({ length: 312 }, (_, i) => i + 1));
    // Each hand-over stays within the bound (the 12 large items together are 480 KB).
    expect(largest).toBeLessThanOrEqual(100_000);
    // Reads grow while the items are small: not one read per item.
    expect(reads.count).toBeLessThan(40);
    subscriber.close();
  });

  it('ends a live subscriber that holds more than its byte bound; it resumes without loss', async () => {
    feed.close();
    await store.close();
    setup(20_000);
    await feed.start();
    const subscriber = feed.subscribe(acme, {}, 0, { tokenId: 'tok_a', tokenHash: 'h' });
    const first = collect(subscriber, 1);
    await write('first');
    expect(await first).toEqual([1]);
    // Caught up and live; now it stops taking changes while 2 KB items keep coming.
    const content = 'x'.repeat(2_000);
    let written = 1;
    while (subscriber.endedBy === null && written < 100) {
      await write(`item ${written}`, acme, { content });
      written += 1;
    }
    expect(subscriber.endedBy).toMatchObject({ reason: 'slow_reader', resumeAfter: 1 });
    expect(written).toBeGreaterThan(5);
    expect(written).toBeLessThan(20);
    expect(await subscriber.next()).toBeNull();
    expect(feed.subscriberCount).toBe(0);
    expect(feed.ended).toEqual({ slow_reader: 1, token_revoked: 0 });
    const resumed = feed.subscribe(acme, {}, subscriber.endedBy?.resumeAfter ?? 0);
    expect(await collect(resumed, written - 1)).toEqual(
      Array.from({ length: written - 1 }, (_, i) => i + 2),
    );
    resumed.close();
  });

  it('delivers one commit larger than the bound to a reader that keeps up', async () => {
    feed.close();
    await store.close();
    setup(5_000);
    await feed.start();
    const subscriber = feed.subscribe(acme, {}, 0);
    const first = collect(subscriber, 1);
    await write('small');
    expect(await first).toEqual([1]);
    const big = collect(subscriber, 1);
    await write('big', acme, { content: 'x'.repeat(20_000) });
    expect(await big).toEqual([2]);
    expect(subscriber.endedBy).toBeNull();
    subscriber.close();
  });

  it("ends a token's subscribers when the token is revoked, and only those", async () => {
    const owner = { tokenId: 'tok_a', tokenHash: 'ha' };
    const mine = feed.subscribe(acme, {}, 0, owner);
    const other = feed.subscribe(acme, {}, 0, { tokenId: 'tok_b', tokenHash: 'hb' });
    expect(feed.owners()).toEqual(
      new Map([
        ['ha', 'tok_a'],
        ['hb', 'tok_b'],
      ]),
    );
    expect(feed.endToken('tok_a')).toBe(1);
    expect(await mine.next()).toBeNull();
    expect(mine.endedBy?.reason).toBe('token_revoked');
    expect(feed.owners()).toEqual(new Map([['hb', 'tok_b']]));
    const next = collect(other, 1);
    await write('still here');
    expect(await next).toEqual([1]);
    other.close();
  });

  it("delivers only the viewer's team, visible items, and what the filter wants", async () => {
    const subscriber = feed.subscribe(
      { teamId: 'acme', runtime: 'openclaw' },
      { tags: ['ops'] },
      0,
    );
    await write('other team', globex, { relevanceTags: ['ops'] });
    await write('private', acme, { relevanceTags: ['ops'], visibility: 'private' });
    await write('untagged');
    const wanted = await write('wanted', acme, { relevanceTags: ['ops'] });
    const [change] = (await subscriber.next()) ?? [];
    expect(change?.item.id).toBe(wanted?.id);
    expect(feed.subscriberCount).toBe(1);
    subscriber.close();
    expect(feed.subscriberCount).toBe(0);
  });
});
