import type {
  ContextItemInput,
  CreateTaskRequest,
  RoutingDecision,
  Task,
  TaskState,
  UpdateTaskRequest,
  Urgency,
  Viewer,
} from '@ctxbus/core';
import {
  CtxbusError,
  createTaskRequestSchema,
  isTerminalTaskState,
  prepareParsedItem,
  routeTask,
  UPDATE_TASK_STATES,
  updateTaskRequestSchema,
} from '@ctxbus/core';
import type { CreateTaskOutcome } from '@ctxbus/store';
import type { HubServices } from '../hub-services.js';

// The hub's side of tasks: route a new task with the capability matrix and live presence,
// store it in the state the decision implies, and publish every change as a status item so
// that each runtime's shared context and live stream sees it.

/** The runtime name the hub writes its own status items as (sweeps: lost leases, expiries). */
export const HUB_RUNTIME = 'ctxbus';

/** The tag every task status item carries; a worker's stream filters on it. */
export const TASK_TAG = 'task';

/**
 * Where a decision leaves a new task: its first state and the runtime that does it. A decision
 * that needs a human's approval still queues the task: the worker that takes it turns the
 * request into one exact command (argv, real directory, script hash) and asks for approval of
 * that (AUTH_REQUIRED), since only it can see the files the command would run.
 */
export function placement(decision: RoutingDecision, origin: string) {
  if (decision.kind === 'escalate') {
    return { state: 'REJECTED' as const, targetRuntime: null };
  }
  const targetRuntime =
    decision.kind === 'proxy' || decision.kind === 'queue' ? decision.runtime : origin;
  return { state: 'SUBMITTED' as const, targetRuntime };
}

const URGENCY: Record<TaskState, Urgency> = {
  SUBMITTED: 'background',
  WORKING: 'background',
  COMPLETED: 'background',
  CANCELED: 'background',
  INPUT_REQUIRED: 'attention',
  FAILED: 'attention',
  AUTH_REQUIRED: 'blocking',
  REJECTED: 'blocking',
};

/** Tags the shared context reads as "finished" (DONE_TAGS) for terminal states. */
const DONE_TAG: Partial<Record<TaskState, string>> = {
  COMPLETED: 'completed',
  CANCELED: 'cancelled',
  FAILED: 'closed',
  REJECTED: 'closed',
};

function statusText(task: Task, note: string | null, output?: string): string {
  const lines = [
    `State: ${task.state}${task.targetRuntime ? ` (runtime: ${task.targetRuntime})` : ''}`,
    `Needs: ${task.requiredCapabilities.join(', ')}; from ${task.origin}`,
  ];
  const reason = typeof task.routing?.reason === 'string' ? task.routing.reason : null;
  if (reason) lines.push(`Routing: ${reason}`);
  if (note) lines.push(`Note: ${note}`);
  const request = task.approval?.request as
    | { argv?: string[]; cwd?: string; scriptHash?: string | null }
    | undefined;
  if (task.approval && request?.argv) {
    lines.push(
      `Approval ${task.approval.status}: \`${request.argv.join(' ')}\` in ${request.cwd ?? '?'}${request.scriptHash ? ` (script sha256 ${request.scriptHash.slice(0, 12)}…)` : ''}`,
    );
    if (task.approval.status === 'pending') {
      lines.push(
        `Answer by ${task.approval.expiresAt}: ctxbus approve ${task.id}  |  ctxbus deny ${task.id}`,
      );
    }
  }
  if (task.error) lines.push(`Error (${task.error.code}): ${task.error.message}`);
  if (output) lines.push('', 'Output so far:', '```', output.replaceAll('```', "'''"), '```');
  if (task.description) lines.push('', task.description);
  return lines.join('\n');
}

/** The status item a task change is published as (one live per task: its scope key). */
export function taskStatusItem(task: Task, note: string | null, output?: string): ContextItemInput {
  const done = DONE_TAG[task.state];
  return {
    type: 'status',
    title: `Task ${task.state}: ${task.title}`.slice(0, 300),
    content: statusText(task, note, output),
    scope: 'task',
    scopeKey: `task:${task.id}`,
    relevanceTags: [
      TASK_TAG,
      `task-${task.state.toLowerCase().replaceAll('_', '-')}`,
      ...(done ? [done] : []),
    ],
    urgency: URGENCY[task.state],
    sourceTaskId: task.id,
    runtimeOptions: {
      task: {
        id: task.id,
        state: task.state,
        targetRuntime: task.targetRuntime,
        origin: task.origin,
      },
    },
  };
}

/** Why an update cannot set `state`, and what does. */
function updateRefusal(task: Task, state: TaskState): string {
  const how: Partial<Record<TaskState, string>> = {
    WORKING: 'a worker claims it (POST /api/tasks/claim)',
    COMPLETED:
      'its holder completes it with the result and fencing token (POST /api/tasks/:id/complete)',
    AUTH_REQUIRED: 'the hub sets it when a human must approve',
    REJECTED: 'the router sets it when no runtime can do the task',
  };
  const why = isTerminalTaskState(task.state)
    ? `it is ${task.state}, which is terminal`
    : (how[state] ?? `an update sets only ${UPDATE_TASK_STATES.join(', ')}`);
  return `task ${task.id} cannot be updated to ${state}: ${why}`;
}

export class TaskService {
  constructor(private readonly services: HubServices) {}

  /** Routes and stores a new task from `viewer`'s runtime, and publishes it. */
  async create(
    viewer: Viewer,
    raw: CreateTaskRequest,
  ): Promise<CreateTaskOutcome & { routing: RoutingDecision }> {
    const request = createTaskRequestSchema.parse(raw);
    const { store, capabilities, presence } = this.services;
    const routing = routeTask(
      {
        requiredCapabilities: request.requiredCapabilities,
        origin: viewer.runtime,
        ...(request.preferences && { preferences: request.preferences }),
        ...(request.constraints && { constraints: request.constraints }),
      },
      capabilities.matrix(),
      presence.summary(viewer.teamId),
    );
    const { state, targetRuntime } = placement(routing, viewer.runtime);
    const outcome = await store.createTask(viewer.teamId, {
      title: request.title,
      ...(request.description !== undefined && { description: request.description }),
      requiredCapabilities: request.requiredCapabilities,
      origin: viewer.runtime,
      ...(request.scope !== undefined && { scope: request.scope }),
      ...(request.input !== undefined && { input: request.input }),
      ...(request.idempotencyKey !== undefined && { idempotencyKey: request.idempotencyKey }),
      ...(request.ttlSeconds !== undefined && { ttlSeconds: request.ttlSeconds }),
      ...(request.maxAttempts !== undefined && { maxAttempts: request.maxAttempts }),
      targetRuntime,
      routing: routing as unknown as Record<string, never>,
      initialState: state,
    });
    if (outcome.status === 'created') {
      await this.publish(outcome.task, viewer.runtime, routing.approvalReason ?? routing.reason);
      // Audit (issue 12): the decision, then the task's first state.
      await this.services.audit.taskRouted(outcome.task, routing, viewer.runtime);
      await this.services.audit.taskState(outcome.task, { from: null, by: viewer.runtime });
    }
    const stored = (outcome.task.routing as RoutingDecision | null) ?? routing;
    return { ...outcome, routing: stored };
  }

  /**
   * An update from a runtime of the team (the origin or the doer): its note alone when `state`
   * is the task's current one (not terminal), else a move to one of UPDATE_TASK_STATES as the
   * store allows it (a WORKING task only with its fencing token, except to CANCELED). Each
   * accepted update is published as the task's status item, with the note.
   */
  async update(viewer: Viewer, id: string, raw: UpdateTaskRequest): Promise<Task> {
    const request = updateTaskRequestSchema.parse(raw);
    const { store } = this.services;
    const found = await store.getTask(viewer.teamId, id);
    if (!found) {
      throw new CtxbusError('not_found', `no task ${id} in your team`, { details: { id } });
    }
    const current = found.task;
    const note = request.note ?? null;
    if (request.state === current.state && !isTerminalTaskState(current.state)) {
      await this.publish(current, viewer.runtime, note);
      return current;
    }
    if (!(UPDATE_TASK_STATES as readonly string[]).includes(request.state)) {
      throw new CtxbusError('conflict', updateRefusal(current, request.state), {
        details: { reason: 'illegal_transition', from: current.state, to: request.state },
      });
    }
    if (current.state === 'AUTH_REQUIRED' && request.state === 'SUBMITTED') {
      throw new CtxbusError(
        'conflict',
        `task ${id} waits for a human's approval: only an approval moves it on (or cancel it)`,
        { details: { reason: 'illegal_transition', from: current.state, to: request.state } },
      );
    }
    const task =
      request.state === 'CANCELED'
        ? await store.cancelTask(viewer.teamId, id, viewer.runtime, request.note)
        : await store.updateTask(viewer.teamId, id, {
            state: request.state,
            by: viewer.runtime,
            ...(request.note !== undefined && { note: request.note }),
            ...(request.token !== undefined && { token: request.token }),
            holder: viewer.runtime,
          });
    if (task.state !== current.state) {
      // Audit (issue 12): every state change is recorded.
      await this.services.audit.taskState(task, {
        from: current.state,
        by: viewer.runtime,
        ...(note !== null && { note }),
      });
      await this.publish(task, viewer.runtime, note);
    }
    return task;
  }

  /**
   * Writes the task's status item as `by` (a runtime of the task's team) and hands it to the
   * live streams. A failure to publish is logged, never undoes the task change.
   */
  async publish(task: Task, by: string, note: string | null, output?: string): Promise<void> {
    try {
      const item = prepareParsedItem(
        taskStatusItem(task, note, output),
        { teamId: task.teamId, runtime: by },
        { now: this.services.clock() },
      );
      const outcomes = await this.services.store.writeItems([item]);
      this.services.feed.committed(outcomes);
    } catch (error) {
      this.services.logger.warn({ err: error, taskId: task.id }, 'task status item not written');
    }
  }
}
