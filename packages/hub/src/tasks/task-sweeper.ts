import type { Logger } from '@ctxbus/core';
import type { TaskTransition } from '@ctxbus/store';

/** How often a hub looks for lost leases and tasks that waited too long (default 1 s). */
export const DEFAULT_TASK_SWEEP_MS = 1_000;

export interface TaskSweeperDeps {
  store: {
    expireLeases(now: string): Promise<TaskTransition[]>;
    expireWaiting(now: string): Promise<TaskTransition[]>;
    expireApprovals(now: string): Promise<TaskTransition[]>;
  };
  clock: () => Date;
  logger: Logger;
  /** Publishes a change the sweep made (the task's status item). */
  publish(transition: TaskTransition): Promise<void>;
}

/**
 * Returns tasks whose worker lost its lease to the queue (or to a dead letter after their
 * last attempt), fails tasks that waited past their TTL and rejects approval requests nobody
 * answered in time, on a timer. Several hubs on one
 * database may all sweep: the store moves each task once.
 */
export class TaskSweeper {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private closed = false;

  constructor(
    private readonly deps: TaskSweeperDeps,
    private readonly intervalMs = DEFAULT_TASK_SWEEP_MS,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.sweepNow(), this.intervalMs);
    this.timer.unref();
  }

  /** One sweep (one at a time); resolves with the number of tasks it moved. */
  async sweepNow(): Promise<number> {
    let moved = 0;
    this.running ??= (async () => {
      if (this.closed) return;
      const now = this.deps.clock().toISOString();
      const changed = [
        ...(await this.deps.store.expireLeases(now)),
        ...(await this.deps.store.expireWaiting(now)),
        ...(await this.deps.store.expireApprovals(now)),
      ];
      moved = changed.length;
      for (const transition of changed) await this.deps.publish(transition);
      if (moved > 0) this.deps.logger.info({ moved }, 'task sweep');
    })()
      .catch((error: unknown) => this.deps.logger.error({ err: error }, 'task sweep failed'))
      .finally(() => {
        this.running = null;
      });
    await this.running;
    return moved;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }
}
