import type { Logger } from '@ctxbus/core';
import type { Store } from '@ctxbus/store';
import type { ChangeFeed } from '../change-feed.js';
import type { BackgroundEmbedderOptions } from './background-embedder.js';
import { BackgroundEmbedder } from './background-embedder.js';
import type { EmbeddingProvider } from './embedding-provider.js';
import { EmbeddingError } from './embedding-provider.js';

export interface EmbeddingsOptions extends BackgroundEmbedderOptions {
  provider: EmbeddingProvider;
  /** Embed stored items in this hub (default true); false: only queries are embedded. */
  embedItems?: boolean;
  /** Query vectors kept for repeated searches (default 256). */
  queryCacheSize?: number;
  /**
   * How long a search waits for its query's vector before ranking by full text alone
   * (default 3 s). The call goes on: its vector is cached for the next search.
   */
  queryTimeoutMs?: number;
}

/** The hub's embedding side: the provider, the background embedder, and query vectors. */
export class HubEmbeddings {
  readonly provider: EmbeddingProvider;
  readonly embedder: BackgroundEmbedder | null;
  private readonly queryCache = new Map<string, Promise<Float32Array>>();
  private readonly queryCacheSize: number;
  private readonly queryTimeoutMs: number;
  private watch: { close(): void } | null = null;

  constructor(store: Store, logger: Logger, options: EmbeddingsOptions) {
    this.provider = options.provider;
    this.queryCacheSize = options.queryCacheSize ?? 256;
    this.queryTimeoutMs = options.queryTimeoutMs ?? 3_000;
    this.embedder =
      (options.embedItems ?? true)
        ? new BackgroundEmbedder(store, options.provider, logger, options)
        : null;
  }

  /** Wakes the embedder now and on every change the feed hears of. */
  start(feed: ChangeFeed): void {
    if (!this.embedder) return;
    const embedder = this.embedder;
    this.watch = feed.onChange(() => embedder.wake());
    embedder.wake();
  }

  /**
   * The query's vector (cached: a repeated query costs no provider call), or an
   * EmbeddingError when the provider fails or takes longer than `queryTimeoutMs`.
   */
  embedQuery(text: string): Promise<Float32Array> {
    const vector = this.cachedOrNew(text);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new EmbeddingError(`no answer within ${this.queryTimeoutMs} ms`, { refused: false }),
          ),
        this.queryTimeoutMs,
      );
    });
    return Promise.race([vector, timeout]).finally(() => clearTimeout(timer));
  }

  private cachedOrNew(text: string): Promise<Float32Array> {
    const cached = this.queryCache.get(text);
    if (cached) {
      // Most recently used last.
      this.queryCache.delete(text);
      this.queryCache.set(text, cached);
      return cached;
    }
    const pending = this.provider.embed([text]).then(([vector]) => vector as Float32Array);
    this.queryCache.set(text, pending);
    // Failures are not cached.
    pending.catch(() => this.queryCache.delete(text));
    while (this.queryCache.size > this.queryCacheSize) {
      const oldest = this.queryCache.keys().next().value as string;
      this.queryCache.delete(oldest);
    }
    return pending;
  }

  async close(): Promise<void> {
    this.watch?.close();
    await this.embedder?.close();
  }
}
