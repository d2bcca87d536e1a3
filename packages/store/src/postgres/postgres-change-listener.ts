import { backoffDelay } from '@ctxbus/core/light';
import type { Client, ClientConfig, Notification } from 'pg';
import { loadPg } from './load-pg.js';
import type { PostgresLogger } from './postgres-connection.js';

export interface ChangeListenerOptions {
  /** How to connect (the pool's own configuration). */
  config: ClientConfig;
  channel: string;
  /** `application_name` of the LISTEN connection, so operators can tell it apart. */
  applicationName: string;
  logger: PostgresLogger;
  /** The newest committed sequence: emitted after every (re)connection as a catch-up hint. */
  latestSeq(): Promise<number>;
  /** Between keepalive probes, in ms (default 10 s). */
  keepaliveMs?: number;
  /** How long a probe may take before the connection counts as dead, in ms (default 5 s). */
  probeTimeoutMs?: number;
}

/** Waits between reconnections. */
const BACKOFF = { initialMs: 250, maxMs: 5_000 };

/**
 * One LISTEN connection for a process, shared by every watcher. Notifications carry only a
 * sequence number and are hints: they may be coalesced, late, or lost (a dropped connection, a
 * killed backend). So after every (re)connection the listener emits the newest committed
 * sequence, and readers catch up by sequence from their own cursor: nothing is missed.
 * A dropped or errored connection is reopened with exponential backoff (250 ms to 5 s); a
 * keepalive probe (SELECT 1 with a timeout) finds half-open connections that TCP would not.
 */
export class PostgresChangeListener {
  private readonly watchers = new Set<(seq: number) => void>();
  private client: Client | null = null;
  private keepalive: NodeJS.Timeout | null = null;
  private retry: NodeJS.Timeout | null = null;
  /** Reconnections since the last connection that held. */
  private reconnects = 0;
  private stopped = false;
  private connecting: Promise<void> | null = null;
  /** How many times the connection was (re)established; for tests and metrics. */
  connections = 0;

  constructor(private readonly options: ChangeListenerOptions) {}

  watch(listener: (seq: number) => void): { close(): void } {
    this.watchers.add(listener);
    if (this.watchers.size === 1 && !this.client && !this.connecting) this.connect();
    return {
      close: () => {
        this.watchers.delete(listener);
        if (this.watchers.size === 0) this.disconnect();
      },
    };
  }

  private emit(seq: number): void {
    for (const watcher of this.watchers) {
      try {
        watcher(seq);
      } catch (error) {
        this.options.logger.error({ err: error }, 'postgres: change watcher failed');
      }
    }
  }

  private connect(): void {
    if (this.stopped || this.watchers.size === 0) return;
    this.connecting = this.open()
      .catch((error: unknown) => {
        this.options.logger.warn(
          { err: error, retryInMs: backoffDelay(this.reconnects, BACKOFF) },
          'postgres: LISTEN connection failed',
        );
        this.scheduleReconnect();
      })
      .finally(() => {
        this.connecting = null;
      });
  }

  private async open(): Promise<void> {
    const { Client: PgClient } = await loadPg();
    const client = new PgClient({
      ...this.options.config,
      keepAlive: true,
      application_name: this.options.applicationName,
    });
    client.on('notification', (message: Notification) => {
      const seq = Number(message.payload);
      if (Number.isSafeInteger(seq) && seq > 0) this.emit(seq);
    });
    const lost = (error?: unknown) => {
      if (this.client !== client) return;
      this.options.logger.warn({ err: error }, 'postgres: LISTEN connection lost; reconnecting');
      this.drop(client);
      this.scheduleReconnect();
    };
    client.on('error', lost);
    client.on('end', () => lost());
    await client.connect();
    await client.query(`LISTEN "${this.options.channel}"`);
    if (this.stopped || this.watchers.size === 0) {
      await client.end().catch(() => {});
      return;
    }
    this.client = client;
    this.connections += 1;
    this.reconnects = 0;
    this.startKeepalive(client, lost);
    // Whatever was committed while nobody listened.
    this.emit(await this.options.latestSeq());
  }

  private startKeepalive(client: Client, lost: (error?: unknown) => void): void {
    const every = this.options.keepaliveMs ?? 10_000;
    const timeout = this.options.probeTimeoutMs ?? 5_000;
    this.keepalive = setInterval(() => {
      let timer: NodeJS.Timeout | undefined;
      const probe = Promise.race([
        client.query('SELECT 1'),
        new Promise((_resolve, reject) => {
          timer = setTimeout(
            () => reject(new Error(`keepalive probe took over ${timeout} ms`)),
            timeout,
          );
        }),
      ]);
      probe.then(
        () => clearTimeout(timer),
        (error: unknown) => {
          clearTimeout(timer);
          lost(error);
        },
      );
    }, every);
    this.keepalive.unref();
  }

  private drop(client: Client): void {
    if (this.keepalive) clearInterval(this.keepalive);
    this.keepalive = null;
    if (this.client === client) this.client = null;
    client.removeAllListeners('notification');
    client.end().catch(() => {});
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.watchers.size === 0 || this.retry) return;
    const wait = backoffDelay(this.reconnects, BACKOFF);
    this.reconnects += 1;
    this.retry = setTimeout(() => {
      this.retry = null;
      this.connect();
    }, wait);
    this.retry.unref();
  }

  private disconnect(): void {
    if (this.retry) clearTimeout(this.retry);
    this.retry = null;
    if (this.client) this.drop(this.client);
  }

  async close(): Promise<void> {
    this.stopped = true;
    this.watchers.clear();
    this.disconnect();
    await this.connecting?.catch(() => {});
  }
}
