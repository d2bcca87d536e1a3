import type {
  CreateTaskRequest,
  RoutingDecision,
  Task,
  TaskState,
  TaskStatusEvent,
} from '@ctxbus/core/contract';
import {
  followTaskStatus,
  healthSeq,
  isTerminalTaskState,
  TASK_TAG,
  taskScopeKey,
} from '@ctxbus/core/contract';
import type { StreamOptions } from './live-stream.js';
import type { WebClient } from './web-client.js';

/** The tag of every task status item, and the scope key of one task's. */
/** The task status item's tag and decoder are core's (the hub writes what core encodes). */
export { TASK_TAG, taskScopeKey, taskStatusOf } from '@ctxbus/core/contract';

export const isTerminalState = (state: TaskState) => isTerminalTaskState(state);

export interface CapabilityRequest {
  title: string;
  requiredCapabilities: string[];
  /** What the doer needs (for `code_execution`: `{ argv, cwd }`). */
  input?: CreateTaskRequest['input'];
  /**
   * Derived from the page's own turn or message id: a retried turn finds its task instead of
   * making a second one.
   */
  idempotencyKey: string;
  description?: string;
  ttlSeconds?: number;
  /** The router's preferences and constraints (`{ network: true }`, `{ seconds: 120 }`). */
  preferences?: CreateTaskRequest['preferences'];
  constraints?: CreateTaskRequest['constraints'];
}

/** One change of the task, as its status item on the stream (core's follower decodes it). */
export type TaskStatusUpdate = TaskStatusEvent;

export interface CapabilityRequestHandle {
  task: Task;
  routing: RoutingDecision;
  /** The routing decision in one line, for the user: kind, runtime and why. */
  routingLine: string;
  /**
   * The task's status items from the stream (scope key `task:<id>`, tag `task`), from its
   * creation on; ends after a terminal state (COMPLETED, FAILED, CANCELED, REJECTED) or when
   * `signal` aborts. An AUTH_REQUIRED update waits for `approve()` or `deny()`. A retried
   * request that found an older task starts where this one did (`task.state` is its state
   * then); `since: 0` replays its whole history.
   */
  follow(
    options?: Pick<StreamOptions, 'signal' | 'backoff' | 'onState' | 'since'>,
  ): AsyncGenerator<TaskStatusUpdate>;
  /**
   * A person's answer, sent with the page's token: the hub accepts it only from an approver
   * runtime (capabilities.yaml `approvers`, default cli, telegram, web) that is neither the
   * task's origin nor its executor; a page whose runtime asked for the task is refused (403,
   * approver_required) and must send its user to another approver channel.
   */
  approve(note?: string): Promise<Task>;
  deny(note?: string): Promise<Task>;
}

/** Where the router sent a task, in one line a page can show its user. */
export function routingLine(routing: RoutingDecision): string {
  const runtime = routing.runtime ?? 'no runtime';
  const approval = routing.requiresApproval ? '; a human must approve it first' : '';
  return `Routing: ${routing.kind} -> ${runtime}: ${routing.reason.replace(/\.$/, '')}${approval}.`;
}

/**
 * What the web runtime cannot do itself becomes a routed task (checklist step 6): the hub
 * routes it with the capability matrix and live presence, and the page follows it on the
 * stream. The web runtime only asks; it never runs a worker.
 */
export async function requestCapability(
  client: WebClient,
  request: CapabilityRequest,
): Promise<CapabilityRequestHandle> {
  // Before the task exists: following from here replays its first status item too.
  const since = healthSeq(await client.health());
  const { task, routing } = await client.createTask({
    title: request.title,
    requiredCapabilities: request.requiredCapabilities,
    idempotencyKey: request.idempotencyKey,
    ...(request.input !== undefined && { input: request.input }),
    ...(request.description !== undefined && { description: request.description }),
    ...(request.ttlSeconds !== undefined && { ttlSeconds: request.ttlSeconds }),
    ...(request.preferences !== undefined && { preferences: request.preferences }),
    ...(request.constraints !== undefined && { constraints: request.constraints }),
  });
  return {
    task,
    routing,
    routingLine: routingLine(routing),
    follow(options = {}) {
      const events = client.stream({
        ...options,
        since: options.since ?? since,
        scopeKey: taskScopeKey(task.id),
        tags: TASK_TAG,
      });
      return followTaskStatus(events, task.id, isTerminalState);
    },
    approve: (note) => client.decideTask(task.id, 'approve', note),
    deny: (note) => client.decideTask(task.id, 'deny', note),
  };
}
