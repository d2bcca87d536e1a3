import type { Task } from '@ctxbus/core';

// What a reader sees of a task. A WORKING task's fencing token belongs to the worker instance
// whose claim it answered: the claim's (and renew's) answer carries it, and no read shows it,
// not even to the holder's own runtime (a second worker, or an agent holding that runtime's
// token, reads as that runtime too). The token is random (store: newFencingToken), so the
// instance that claimed a task is the only one that can report on it.

/** `task` as a reader sees it: the lease without its fencing token. */
export function taskView<T extends Task | null>(task: T): T {
  if (task === null || task.lease === null || task.lease.token === null) return task;
  return { ...task, lease: { ...task.lease, token: null } };
}

/** Each task as a reader sees it. */
export function taskViews(tasks: readonly Task[]): Task[] {
  return tasks.map((task) => taskView(task));
}
