import type { Logger } from '@ctxbus/core';
import { backoffDelay } from '@ctxbus/core';
import type { EmbeddingSource, ItemVector, Store } from '@ctxbus/store';
import type { EmbeddingProvider } from './embedding-provider.js';
import { EmbeddingError } from './embedding-provider.js';

export interface BackgroundEmbedderOptions {
  /** Texts per provider call (default 32). */
  batchSize?: number;
  /** First retry delay after a failed call, doubling up to `maxBackoffMs` (default 1 s). */
  backoffMs?: number;
  /** Default 60 s. */
  maxBackoffMs?: number;
}

export interface EmbedderStatus {
  label: string;
  /** Vectors stored by this process. */
  embedded: number;
  /** Items the provider refused (stored as empty vectors, never offered again). */
  refused: number;
  /** The last failure, until a call succeeds again. */
  lastError: string | null;
}

function hasDirection(vector: Float32Array): boolean {
  let sum = 0;
  for (const value of vector) sum += value * value;
  return Number.isFinite(sum) && sum > 0;
}

/** What is embedded for an item: its words, title first. */
export function embeddingText(source: EmbeddingSource): string {
  return [source.title, source.summary, source.content, source.tags.join(' ')]
    .filter((part) => part.trim() !== '')
    .join('\n');
}

/**
 * Gives stored items vectors, in the background: writes never wait for the provider, and
 * search ranks by full text alone until an item has its vector. Woken by the change feed; each
 * run embeds every team-visible item that has none (a cursor by sequence, so a restart picks
 * up where the store says it is). A failing provider is retried with doubling backoff; items
 * it refuses are marked and skipped. Several hubs on one database each do this; the store
 * keeps one vector per item and model.
 */
export class BackgroundEmbedder {
  private readonly batchSize: number;
  private readonly backoffMs: number;
  private readonly maxBackoffMs: number;
  private cursor = 0;
  private running: Promise<void> | null = null;
  private again = false;
  private retryTimer: NodeJS.Timeout | null = null;
  private failures = 0;
  private closed = false;
  private readonly abort = new AbortController();
  private readonly idleWaiters: (() => void)[] = [];
  private readonly state: EmbedderStatus;

  constructor(
    private readonly store: Store,
    private readonly provider: EmbeddingProvider,
    private readonly logger: Logger,
    options: BackgroundEmbedderOptions = {},
  ) {
    this.batchSize = options.batchSize ?? 32;
    this.backoffMs = options.backoffMs ?? 1_000;
    this.maxBackoffMs = options.maxBackoffMs ?? 60_000;
    this.state = { label: provider.label, embedded: 0, refused: 0, lastError: null };
  }

  status(): EmbedderStatus {
    return { ...this.state };
  }

  /** Something may have been written: embed what has no vector yet. */
  wake(): void {
    if (this.closed || this.retryTimer !== null) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.run().finally(() => {
      this.running = null;
      if (this.again && this.retryTimer === null && !this.closed) {
        this.again = false;
        this.wake();
      } else if (this.retryTimer === null) {
        for (const resolve of this.idleWaiters.splice(0)) resolve();
      }
    });
  }

  /** Resolves when every item seen so far has a vector, or is refused (tests, benchmarks). */
  idle(): Promise<void> {
    if (!this.running && this.retryTimer === null) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  async close(): Promise<void> {
    this.closed = true;
    this.abort.abort();
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    await this.running;
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  private async run(): Promise<void> {
    try {
      while (!this.closed) {
        // Read first: when the scan finds nothing, everything up to here has its vector (or
        // never will), and the next run starts after it instead of rescanning the store.
        const latest = await this.store.latestSeq();
        const batch = await this.store.itemsToEmbed(this.provider.label, {
          afterSeq: this.cursor,
          limit: this.batchSize,
        });
        const last = batch.at(-1);
        if (!last) {
          this.cursor = Math.max(this.cursor, latest);
          return;
        }
        await this.embedBatch(batch);
        this.cursor = last.seq;
        this.failures = 0;
        this.state.lastError = null;
      }
    } catch (error) {
      if (this.closed) return;
      this.failures += 1;
      const delay = backoffDelay(this.failures - 1, {
        initialMs: this.backoffMs,
        maxMs: this.maxBackoffMs,
      });
      this.state.lastError = (error as Error).message;
      this.logger.warn(
        { err: error, retryInMs: delay, failures: this.failures },
        'embeddings: could not embed items; search ranks by full text until it can',
      );
      this.retryTimer = setTimeout(() => {
        this.retryTimer = null;
        this.wake();
      }, delay);
      this.retryTimer.unref();
    }
  }

  /** Embeds and saves a batch; on a refusal, item by item, marking the refused ones. */
  private async embedBatch(batch: readonly EmbeddingSource[]): Promise<void> {
    try {
      const vectors = await this.provider.embed(batch.map(embeddingText), this.abort.signal);
      await this.save(batch.map((source, index) => ({ seq: source.seq, vector: vectors[index] })));
    } catch (error) {
      if (!(error instanceof EmbeddingError && error.refused)) throw error;
      const [only] = batch;
      if (batch.length === 1 && only) await this.refuse(only, error);
      else for (const source of batch) await this.embedBatch([source]);
    }
  }

  private async save(entries: { seq: number; vector: Float32Array | undefined }[]): Promise<void> {
    // A vector with no direction cannot be compared: stored empty, like a refusal.
    const vectors = entries.flatMap((entry): ItemVector[] =>
      entry.vector === undefined
        ? []
        : [
            {
              seq: entry.seq,
              vector: hasDirection(entry.vector) ? entry.vector : new Float32Array(0),
            },
          ],
    );
    await this.store.saveVectors(this.provider.label, vectors);
    this.state.embedded += vectors.length;
  }

  private async refuse(source: EmbeddingSource, error: EmbeddingError): Promise<void> {
    this.logger.warn(
      { err: error, itemId: source.id, seq: source.seq },
      'embeddings: the provider refused an item; it is searchable by full text only',
    );
    await this.store.saveVectors(this.provider.label, [
      { seq: source.seq, vector: new Float32Array(0) },
    ]);
    this.state.refused += 1;
  }
}
