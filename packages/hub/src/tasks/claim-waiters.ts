import type { TaskStatusReport } from '@ctxbus/core';
import { taskStatusOf } from '@ctxbus/core';
import type { Change } from '@ctxbus/store';

// Long-polling claims. A worker with nothing to do parks its claim here (POST /api/tasks/claim
// with `waitMs`) instead of every idle worker racing for each new task. A task that becomes
// claimable (its status item says SUBMITTED, seen on the change feed: this hub's commits and
// other hubs' alike) wakes the one parked claim, of those that can take it, that has waited
// longest: about one claim attempt per task, not one per idle worker. A woken claim that finds
// the task gone (a worker on another hub, or a busy one that came back first) parks again.
// Wakes are for speed only: a parked claim ends at its deadline and the worker claims again.

/** Who a parked claim is for: the worker's team, runtime and what it can do. */
export interface ClaimWaiterKey {
  teamId?: string;
  runtime: string;
  capabilities?: readonly string[];
}

/** A claim registered before it looks for a task, so a task committed meanwhile wakes it. */
export interface ClaimTicket {
  /** Whether a task it can take was announced since it registered. */
  readonly woken: boolean;
  /** Resolves true once woken; false after `ms`, on `signal`'s abort or when the hub closes. */
  wait(ms: number, signal?: AbortSignal): Promise<boolean>;
  /** Stops waiting (idempotent). */
  leave(): void;
}

interface Waiter extends ClaimWaiterKey {
  woken: boolean;
  settle: ((woken: boolean) => void) | null;
}

/** What the waiters watch: the hub's change feed. */
export interface ChangeTap {
  tap(listener: (changes: readonly Change[]) => void): () => void;
}

function canTake(waiter: Waiter, teamId: string, task: TaskStatusReport): boolean {
  if (waiter.teamId !== undefined && waiter.teamId !== teamId) return false;
  if (task.targetRuntime !== null) return task.targetRuntime === waiter.runtime;
  if (waiter.capabilities === undefined) return false;
  const can = waiter.capabilities;
  return task.requiredCapabilities?.every((needed) => can.includes(needed)) ?? true;
}

export class ClaimWaiters {
  /** In the order they parked: the first that can take a task is woken. */
  private readonly waiting = new Set<Waiter>();
  private untap: (() => void) | null = null;
  private closed = false;
  /** Claims woken by a task since the hub started. */
  wakes = 0;

  constructor(private readonly feed: ChangeTap) {}

  get parked(): number {
    return this.waiting.size;
  }

  enter(key: ClaimWaiterKey): ClaimTicket {
    const waiter: Waiter = { ...key, woken: this.closed, settle: null };
    if (!this.closed) {
      this.waiting.add(waiter);
      this.untap ??= this.feed.tap((changes) => this.offer(changes));
    }
    const leave = () => this.leave(waiter);
    return {
      get woken() {
        return waiter.woken;
      },
      wait: (ms, signal) => this.wait(waiter, ms, signal),
      leave,
    };
  }

  /** Ends every parked claim (answered with no task) and watches nothing more. */
  close(): void {
    this.closed = true;
    for (const waiter of [...this.waiting]) this.settle(waiter, false);
    this.untap?.();
    this.untap = null;
  }

  private wait(waiter: Waiter, ms: number, signal?: AbortSignal): Promise<boolean> {
    if (waiter.woken || this.closed || ms <= 0 || signal?.aborted) {
      this.leave(waiter);
      return Promise.resolve(waiter.woken && !this.closed);
    }
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => this.settle(waiter, false), ms);
      const aborted = () => this.settle(waiter, false);
      signal?.addEventListener('abort', aborted, { once: true });
      waiter.settle = (woken) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', aborted);
        resolve(woken);
      };
    });
  }

  private settle(waiter: Waiter, woken: boolean): void {
    const settle = waiter.settle;
    waiter.settle = null;
    this.leave(waiter);
    settle?.(woken);
  }

  private leave(waiter: Waiter): void {
    this.waiting.delete(waiter);
    if (this.waiting.size === 0) {
      this.untap?.();
      this.untap = null;
    }
  }

  private offer(changes: readonly Change[]): void {
    for (const change of changes) {
      if (change.kind !== 'added') continue;
      const task = taskStatusOf(change.item);
      if (task?.state === 'SUBMITTED') this.wakeOne(change.teamId, task);
    }
  }

  private wakeOne(teamId: string, task: TaskStatusReport): void {
    for (const waiter of this.waiting) {
      if (!canTake(waiter, teamId, task)) continue;
      waiter.woken = true;
      this.wakes += 1;
      this.settle(waiter, true);
      return;
    }
  }
}
