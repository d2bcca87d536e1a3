import type { Logger, StreamEvent } from '@ctxbus/core/contract';
import { CtxbusError } from '@ctxbus/core/contract';
import type { ContextBackend } from '../context-backend.js';
import { errorMessage } from '../error-message.js';
import { logFailure } from '../log-failure.js';
import { changeAffects } from './resource-uris.js';

/** Resources one session may follow at once (each change is matched against every one). */
export const MAX_SUBSCRIBED_RESOURCES = 256;

export interface ResourceSubscriptionsOptions {
  backend: ContextBackend;
  logger: Logger;
  /** Sends `notifications/resources/updated` for one URI. */
  notify: (uri: string) => Promise<void>;
  /**
   * Least time between two notifications (default 100 ms). The first change after a quiet
   * spell is notified at once; changes during the interval become one notification at its end.
   */
  intervalMs?: number;
  /**
   * How long a subscribe waits for the live stream to be up (default 5 s). Past it the
   * subscription stands and the stream keeps reconnecting: an MCP client that subscribes at
   * startup while the hub is briefly down still gets updates once it is back.
   */
  readyTimeoutMs?: number;
}

/**
 * The resources one MCP session subscribed to, kept fresh by one live stream from the backend.
 * The stream runs only while something is subscribed; each change marks the subscribed URIs it
 * can affect, and a burst of changes becomes a few notifications: at most one per interval.
 */
export class ResourceSubscriptions {
  private readonly uris = new Set<string>();
  private readonly pending = new Set<string>();
  private readonly intervalMs: number;
  private readonly readyTimeoutMs: number;
  private stream: { controller: AbortController; ready: Promise<void> } | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private closed = false;

  constructor(private readonly options: ResourceSubscriptionsOptions) {
    this.intervalMs = options.intervalMs ?? 100;
    this.readyTimeoutMs = options.readyTimeoutMs ?? 5_000;
  }

  /**
   * Adds a URI; resolves once changes made from now on are sure to be seen (the stream is
   * live) or the wait times out. Rejects when the backend refuses the stream outright.
   */
  async subscribe(uri: string): Promise<void> {
    if (this.closed) return;
    if (!this.uris.has(uri) && this.uris.size >= MAX_SUBSCRIBED_RESOURCES) {
      throw new CtxbusError(
        'limit_reached',
        `this session follows ${MAX_SUBSCRIBED_RESOURCES} resources, the most it may; unsubscribe from one first`,
      );
    }
    this.uris.add(uri);
    const stream = this.ensureStream();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), this.readyTimeoutMs);
    });
    try {
      const outcome = await Promise.race([stream.ready.then(() => 'ready' as const), timeout]);
      if (outcome === 'timeout') {
        this.options.logger.warn(
          { uri },
          'live updates are not connected yet; the subscription stands and the stream keeps retrying',
        );
      }
    } catch (error) {
      this.uris.delete(uri);
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  unsubscribe(uri: string): void {
    this.uris.delete(uri);
    this.pending.delete(uri);
    if (this.uris.size === 0) this.stopStream();
  }

  /** Stops the stream and every pending notification; later subscribes are ignored. */
  close(): void {
    this.closed = true;
    this.uris.clear();
    this.pending.clear();
    clearTimeout(this.timer);
    this.timer = undefined;
    this.stopStream();
  }

  private ensureStream(): { ready: Promise<void> } {
    if (this.stream) return this.stream;
    const controller = new AbortController();
    let markReady = () => {};
    let fail: (error: unknown) => void = () => {};
    const ready = new Promise<void>((resolve, reject) => {
      markReady = resolve;
      fail = reject;
    });
    // Nobody may be waiting when the stream fails later; that is logged, not unhandled.
    ready.catch(() => {});
    const stream = { controller, ready };
    this.stream = stream;
    void this.consume(controller.signal, markReady).then(
      () => {
        markReady();
        if (this.stream === stream) this.stream = undefined;
        if (!controller.signal.aborted) {
          this.options.logger.warn(
            {},
            'the live stream ended; updates resume at the next subscribe',
          );
        }
      },
      (error: unknown) => {
        fail(error);
        if (this.stream === stream) this.stream = undefined;
        // The backend gave up (a revoked token, say): later subscribes start a fresh stream.
        if (!controller.signal.aborted) {
          const stopped = `live updates stopped: ${errorMessage(error)}`;
          logFailure(
            this.options.logger,
            error,
            {},
            { refused: stopped, failed: stopped },
            'error',
          );
        }
      },
    );
    return stream;
  }

  private async consume(signal: AbortSignal, onReady: () => void): Promise<void> {
    const events = this.options.backend.stream({
      signal,
      onReady,
      onReconnect: (error) =>
        this.options.logger.warn(
          { err: error },
          `live updates reconnecting: ${errorMessage(error)}`,
        ),
    });
    for await (const event of events) {
      if (signal.aborted) return;
      this.onChange(event);
    }
  }

  private stopStream(): void {
    this.stream?.controller.abort();
    this.stream = undefined;
  }

  private onChange(change: StreamEvent): void {
    let marked = false;
    for (const uri of this.uris) {
      if (changeAffects(uri, change)) {
        this.pending.add(uri);
        marked = true;
      }
    }
    if (marked) this.schedule();
  }

  /** Notifies at the end of this turn, then at most once per interval while changes continue. */
  private schedule(): void {
    // A timer runs while an interval is open; its end notifies whatever has piled up.
    if (this.timer !== undefined) return;
    // A timeout of 0 rather than at once: events of one write batch arrive in one turn.
    this.timer = setTimeout(() => this.tick(), 0);
  }

  private tick(): void {
    if (this.pending.size === 0) {
      this.timer = undefined;
      return;
    }
    this.flush();
    this.timer = setTimeout(() => this.tick(), this.intervalMs);
  }

  private flush(): void {
    const uris = [...this.pending].filter((uri) => this.uris.has(uri));
    this.pending.clear();
    for (const uri of uris) {
      this.options.notify(uri).catch((error: unknown) => {
        this.options.logger.warn(
          { uri, err: error },
          `resource update notification failed: ${errorMessage(error)}`,
        );
      });
    }
  }
}
