import type { Store } from '@ctxbus/store';
import type { ChangeFeed } from '../change-feed.js';
import type { Logger } from '../logger.js';
import type { BackgroundEmbedderOptions } from './background-embedder.js';
import { BackgroundEmbedder } from './background-embedder.js';
import type { EmbeddingProvider } from './embedding-provider.js';

export interface EmbeddingsOptions extends BackgroundEmbedderOptions {
  provider: EmbeddingProvider;
  /** Embed stored items in this hub (default true); false: only queries are embedded. */
  embedItems?: boolean;
  /** Query vectors kept for repeated searches (default 256). */
  queryCacheSize?: number;
}

/** The hub's embedding side: the provider, the background embedder, and query vectors. */
export class HubEmbeddings {
  readonly provider: EmbeddingProvider;
  readonly embedder: BackgroundEmbedder | null;
  private readonly queryCache = new Map<string, Promise<Float32Array>>();
  private readonly queryCacheSize: number;
  private watch: { close(): void } | null = null;

  constructor(store: Store, logger: Logger, options: EmbeddingsOptions) {
    this.provider = options.provider;
    this.queryCacheSize = options.queryCacheSize ?? 256;
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

  /** The query's vector (cached: a repeated query costs no provider call). */
  embedQuery(text: string): Promise<Float32Array> {
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
