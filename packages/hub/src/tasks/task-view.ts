import type { Task } from '@ctxbus/core';

// What a reader sees of a task. The fencing token of a WORKING task's lease is the holder's:
// the claim's answer carries it, and reads by the runtime that claimed the task show it; every
// other reader (another runtime, an admin token) sees `token: null`. The token alone no longer
// lets anyone report on a task (the hub checks the holder's runtime too), but it is nobody
// else's business, and a counter shown to everyone invites guessing the next one.

/** `task` as `runtime` (null: an admin token) may see it. */
export function taskViewFor<T extends Task | null>(task: T, runtime: string | null): T {
  if (task === null || task.lease === null || task.lease.token === null) return task;
  if (runtime !== null && task.lease.runtime === runtime) return task;
  return { ...task, lease: { ...task.lease, token: null } };
}

/** Each task as `runtime` may see it. */
export function taskViewsFor(tasks: readonly Task[], runtime: string | null): Task[] {
  return tasks.map((task) => taskViewFor(task, runtime));
}
