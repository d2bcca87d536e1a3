import type { ContextItem, LiveCache, StreamState, WebClient } from '@ctxbus/adapter-web';
import { connectCache, ItemCache } from '@ctxbus/adapter-web';
import { useEffect, useState } from 'preact/hooks';

/** How many delivery-lag samples the page keeps (the newest). */
export const MAX_LAG_SAMPLES = 500;
/** Items the page holds: the newest, with every change from the stream. */
export const MAX_ITEMS = 2_000;

export interface LagSample {
  seq: number;
  runtime: string;
  /** From the item's creation at the hub to its arrival in this page, in ms. */
  lagMs: number;
  at: number;
}

export type LiveStatus = StreamState | 'loading' | 'stopped';

/**
 * The page's live view of the bus: one ItemCache fed by one stream for every view, the stream's
 * state, and how late each new item arrived (delivery lag; the hub and the browser share a
 * clock when they share a machine, otherwise the lag includes their clock difference).
 */
export class LiveBus {
  readonly cache = new ItemCache({ maxItems: MAX_ITEMS });
  readonly lag: LagSample[] = [];
  status: LiveStatus = 'loading';
  error: string | null = null;
  private live: LiveCache | null = null;
  private readonly listeners = new Set<() => void>();
  private readonly seen = new Set<string>();

  constructor(private readonly client: WebClient) {}

  start(): void {
    const stopWatching = this.cache.subscribe(() => this.noteArrivals());
    this.cache.autoExpire();
    this.live = connectCache(this.client, this.cache, {
      onState: (state) => this.setStatus(state),
      onError: (error) => {
        this.error = `${error.code}: ${error.message}`;
        this.setStatus('stopped');
      },
    });
    this.live.loaded.then(
      () => {
        for (const item of this.cache.snapshot()) this.seen.add(item.id);
        if (this.status === 'loading') this.setStatus('connecting');
      },
      () => {},
    );
    this.live.done.finally(stopWatching);
  }

  stop(): void {
    this.live?.stop();
    this.cache.stopAutoExpire();
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    const stopCache = this.cache.subscribe(listener);
    return () => {
      this.listeners.delete(listener);
      stopCache();
    };
  }

  private setStatus(status: LiveStatus): void {
    this.status = status;
    for (const listener of this.listeners) listener();
  }

  /** Items seen for the first time after the first listing: the stream delivered them now. */
  private noteArrivals(): void {
    if (this.status === 'loading') return;
    const now = Date.now();
    for (const item of this.cache.snapshot()) {
      if (this.seen.has(item.id)) continue;
      this.seen.add(item.id);
      this.lag.push({
        seq: item.seq,
        runtime: item.source.runtime,
        lagMs: Math.max(0, now - Date.parse(item.createdAt)),
        at: now,
      });
      if (this.lag.length > MAX_LAG_SAMPLES) this.lag.shift();
    }
    // `seen` follows the cache's bound: ids the cache dropped are forgotten.
    if (this.seen.size > MAX_ITEMS * 2) {
      const kept = new Set(this.cache.snapshot().map((item) => item.id));
      for (const id of this.seen) if (!kept.has(id)) this.seen.delete(id);
    }
  }
}

/** Re-renders on every change of the bus (items, stream state); returns a version counter. */
export function useBus(bus: LiveBus): number {
  const [version, setVersion] = useState(0);
  useEffect(() => bus.subscribe(() => setVersion((v) => v + 1)), [bus]);
  return version;
}

export function newestFirst(items: readonly ContextItem[]): ContextItem[] {
  return [...items].sort((a, b) => b.seq - a.seq);
}
