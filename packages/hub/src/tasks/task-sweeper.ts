import type { Logger } from '@ctxbus/core';
import type { TaskTransition } from '@ctxbus/store';

/** How often a hub looks for lost leases and tasks that waited too long (default 1 s). */
export const DEFAULT_TASK_SWEEP_MS = 1_000;

export interface TaskSweeperDeps {
  /** The task lifecycle's sweeps (each change is announced and audited by the relay). */
  lifecycle: { sweep(now: string): Promise<TaskTransition[]> };
  clock: () => Date;
  logger: Logger;
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
      moved = (await this.deps.lifecycle.sweep(now)).length;
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
