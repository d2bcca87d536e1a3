import type { Viewer } from '@ctxbus/core';
import { CtxbusError, notLeaseHolderError, staleLeaseError } from '@ctxbus/core';
import type { HubServices } from '../hub-services.js';
import { implement } from '../route-definition.js';
import { taskView, taskViews } from '../tasks/task-view.js';

function notFound(id: string): CtxbusError {
  return new CtxbusError('not_found', `no task ${id} in your team`, { details: { id } });
}

/** The refusals of a report that are audited: not the holder's runtime, or not its claim. */
const AUDITED_REFUSALS: ReadonlySet<unknown> = new Set([
  'not_lease_holder',
  'not_task_party',
  'stale_lease',
]);

type ReportAction =
  | 'renew'
  | 'start'
  | 'progress'
  | 'complete'
  | 'fail'
  | 'update'
  | 'cancel'
  | 'approval-request';

/**
 * Rethrows `error`; a refusal because the caller does not hold the lease is audited first
 * (`task.report-refused`: who tried what on whose task, and why), since it is a worker that
 * lost its lease, a bug, or an attempt to forge a result (another runtime, or another process
 * of the holder's runtime guessing the claim's token).
 */
export async function refusedReport(
  services: HubServices,
  viewer: Viewer,
  id: string,
  action: ReportAction,
  error: unknown,
): Promise<never> {
  const reason = CtxbusError.isInstance(error)
    ? (error.details as { reason?: unknown } | undefined)?.reason
    : undefined;
  if (CtxbusError.isInstance(error) && AUDITED_REFUSALS.has(reason)) {
    await services.tasks.recordAudit(viewer.teamId, {
      kind: 'task.report-refused',
      actor: viewer.runtime,
      subject: id,
      data: { action, runtime: viewer.runtime, reason: String(reason), message: error.message },
    });
  }
  throw error;
}

/**
 * The task `id`, WORKING and held by `viewer`'s runtime with fencing token `token`: else the
 * refusal (403 not_lease_holder, 409 stale_lease), audited.
 */
export async function heldTask(
  services: HubServices,
  viewer: Viewer,
  id: string,
  token: number,
  action: ReportAction,
) {
  const found = await services.store.getTask(viewer.teamId, id);
  if (!found) throw notFound(id);
  const { task } = found;
  const lease = task.lease;
  if (task.state === 'WORKING' && lease !== null && lease.runtime !== viewer.runtime) {
    await refusedReport(
      services,
      viewer,
      id,
      action,
      notLeaseHolderError(task.id, viewer.runtime, lease.runtime),
    );
  }
  if (task.state !== 'WORKING' || lease === null || lease.token !== token) {
    const why =
      task.state === 'WORKING'
        ? `token ${token} is not the current claim's token`
        : `the task is ${task.state}, not held by anyone`;
    return refusedReport(services, viewer, id, action, staleLeaseError(task.id, why));
  }
  if (Date.parse(lease.expiresAt) <= services.clock().getTime()) {
    throw staleLeaseError(task.id, `the lease ended at ${lease.expiresAt}`);
  }
  return task;
}

const STALE =
  'A stale fencing token or an expired lease (reason `stale_lease`), or an illegal move.';
const NOT_HOLDER =
  "The caller's runtime did not claim the task (reason `not_lease_holder`): only the worker holding the lease reports on it, whatever token another runtime presents.";

export const taskRoutes = [
  implement('createTask', {
    summary: 'Create a task; the hub routes it to a runtime that can do it',
    description:
      "The origin is the caller's runtime. The hub routes the task with the capability matrix and live presence (`routing` in the response says why) and stores it SUBMITTED for the chosen runtime, AUTH_REQUIRED when a human must approve first, or REJECTED when no runtime can. The same request again with the same `idempotencyKey` returns the task already created (200); another request with that key (another title, description, capability set, scope, input, maxAttempts or ttlSeconds) is refused with 409 `conflict`, `details.reason` `idempotency_key_reused` and the fields that differ. Every change is also a status item (tag `task`, scope key `task:<id>`).",
    tags: ['tasks'],
    statuses: { 200: 'A task with this idempotency key exists.', 201: 'The task, routed.' },
    async handler({ body, viewer, services }) {
      const outcome = await services.tasks.create(viewer, body);
      return {
        status: outcome.status === 'created' ? 201 : 200,
        body: {
          task: taskView(outcome.task),
          status: outcome.status,
          routing: outcome.routing,
        },
      };
    },
  }),
  implement('listTasks', {
    summary: "The team's tasks, oldest first (or newest first with order=newest)",
    tags: ['tasks'],
    statuses: { 200: 'Tasks.' },
    async handler({ query, viewer, services }) {
      const tasks = await services.store.listTasks(viewer.teamId, {
        limit: query.limit,
        ...(query.state && { states: query.state }),
        ...(query.target !== undefined && { targetRuntime: query.target }),
        ...(query.origin !== undefined && { origin: query.origin }),
        ...(query.after !== undefined && { after: query.after }),
        order: query.order,
      });
      const last = tasks.at(-1);
      return {
        status: 200,
        body: {
          tasks: taskViews(tasks),
          nextAfter: tasks.length === query.limit && last ? last.id : null,
        },
      };
    },
  }),
  implement('getTask', {
    summary: 'One task with its history',
    tags: ['tasks'],
    statuses: { 200: 'The task.' },
    async handler({ params, viewer, services }) {
      const found = await services.store.getTask(viewer.teamId, params.id);
      if (!found) throw notFound(params.id);
      return { status: 200, body: { ...found, task: taskView(found.task) } };
    },
  }),
  implement('cancelTask', {
    summary: 'Cancel a task that has not ended',
    tags: ['tasks'],
    description:
      "From its origin, the runtime it is routed to or that holds it, or a person's runtime (an approver: the CLI, the dashboard, the bot); another runtime of the team is refused (403, reason not_task_party; audited).",
    statuses: {
      200: 'The canceled task.',
      403: 'The caller is no party to the task (reason `not_task_party`).',
      409: 'The task already ended otherwise.',
    },
    async handler({ params, body, viewer, services }) {
      const task = await services.tasks
        .cancelAs(viewer, params.id, body.note)
        .catch((error: unknown) => refusedReport(services, viewer, params.id, 'cancel', error));
      return { status: 200, body: { task: taskView(task) } };
    },
  }),
  implement('claimTask', {
    summary: "Worker: take the oldest task routed to the caller's runtime",
    description:
      'Moves it to WORKING under a lease (default 30 s) and returns it with its fencing token (`task.lease.token`), which every renew, start, progress report, complete and fail must carry. Only this answer (and a renew) shows the token: reads never do, so keep it. Renew at a third of the lease, and say when the command starts (POST /api/tasks/:id/start). A lease that runs out before that start puts the task back in the queue (or dead-letters it after its last attempt); after it, the task ends FAILED (`worker_lost`) and is never run twice. `task` is null when none is waiting (with `waitMs`, when none came in that time): a worker long-polls with `waitMs` instead of polling, and each new task wakes one waiting claim that can take it.',
    tags: ['tasks'],
    statuses: { 200: 'The claimed task, or null.' },
    async handler({ body, viewer, services, context }) {
      const task = await services.tasks.claim(
        {
          teamId: viewer.teamId,
          runtime: viewer.runtime,
          workerId: body.workerId,
          leaseMs: body.leaseMs,
          ...(body.capabilities && { capabilities: body.capabilities }),
        },
        { ms: body.waitMs, signal: context.req.raw.signal },
      );
      return { status: 200, body: { task } };
    },
  }),
  implement('renewTask', {
    summary: "Worker: extend a claim's lease",
    tags: ['tasks'],
    statuses: { 200: 'The task with its new lease.', 403: NOT_HOLDER, 409: STALE },
    async handler({ params, body, viewer, services }) {
      const task = await services.tasks
        .renew(viewer.teamId, params.id, body.token, body.leaseMs, viewer.runtime)
        .catch((error: unknown) => refusedReport(services, viewer, params.id, 'renew', error));
      return { status: 200, body: { task } };
    },
  }),
  implement('startTask', {
    summary: "Worker: say the claimed task's command is about to start",
    description:
      'Send it just before starting the command (after every check, so a refused or held command never counts as started). The lease records the time (`task.lease.startedAt`; no event, nothing announced; a repeat keeps the first time, so a worker that lost the answer may send it again). From then on the hub never runs the command again by itself: if the lease runs out (the worker died, hung or lost the hub for longer than the lease), the task ends FAILED with code `worker_lost`, since the command may or may not have run; its origin may create it again. A claimed task whose lease runs out before this call goes back to the queue (or dead-letters after its last attempt). Does not renew the lease.',
    tags: ['tasks'],
    statuses: { 200: 'The task, its lease started.', 403: NOT_HOLDER, 409: STALE },
    async handler({ params, body, viewer, services }) {
      const task = await services.tasks
        .start(viewer.teamId, params.id, body.token, viewer.runtime)
        .catch((error: unknown) => refusedReport(services, viewer, params.id, 'start', error));
      return { status: 200, body: { task } };
    },
  }),
  implement('taskProgress', {
    summary: "Worker: the latest output of a claimed task's command, for the origin to watch",
    description:
      "Published as the task's status item (same scope key), so the origin and every stream see it live. Needs the current fencing token and the runtime that claimed the task; does not renew the lease.",
    tags: ['tasks'],
    statuses: { 200: 'The task.', 403: NOT_HOLDER, 409: STALE },
    async handler({ params, body, viewer, services }) {
      const task = await heldTask(services, viewer, params.id, body.token, 'progress');
      await services.tasks.announce(task, viewer.runtime, null, {
        tail: body.output,
        ...(body.outputEnd !== undefined && { end: body.outputEnd }),
      });
      return { status: 200, body: { task } };
    },
  }),
  implement('completeTask', {
    summary: 'Worker: finish a claimed task with its result',
    tags: ['tasks'],
    description:
      "With `next`, the same call also claims the caller's next task once the completion is committed (as a claim without `waitMs`): `next` in the answer is that task with its lease, or null. A claim that fails leaves the completion standing and answers null.",
    statuses: {
      200: 'The completed task (and, with `next`, the next claimed task or null).',
      403: NOT_HOLDER,
      409: STALE,
    },
    async handler({ params, body, viewer, services }) {
      const task = await services.tasks
        .complete(viewer.teamId, params.id, body.token, body.result, viewer.runtime)
        .catch((error: unknown) => refusedReport(services, viewer, params.id, 'complete', error));
      if (!body.next) return { status: 200, body: { task } };
      const { workerId, leaseMs, capabilities } = body.next;
      // The completion stands whatever the claim does: a failed claim answers null, and the
      // worker claims as usual.
      const next = await services.tasks
        .claimWithCompletion({
          teamId: viewer.teamId,
          runtime: viewer.runtime,
          workerId,
          leaseMs,
          ...(capabilities && { capabilities }),
        })
        .catch((error: unknown) => {
          services.logger.warn(
            { err: error, taskId: task.id },
            'the claim made with a completion failed',
          );
          return null;
        });
      return { status: 200, body: { task, next } };
    },
  }),
  implement('failTask', {
    summary: 'Worker: give up on a claimed task (or put it back with retry)',
    tags: ['tasks'],
    statuses: { 200: 'The failed (or requeued) task.', 403: NOT_HOLDER, 409: STALE },
    async handler({ params, body, viewer, services }) {
      const task = await services.tasks
        .fail(viewer.teamId, params.id, body.token, body.error, {
          ...(body.retry !== undefined && { retry: body.retry }),
          actor: viewer.runtime,
        })
        .catch((error: unknown) => refusedReport(services, viewer, params.id, 'fail', error));
      return { status: 200, body: { task } };
    },
  }),
  implement('updateTask', {
    summary:
      'Record progress on a task, or move it (input required, back to the queue, failed, canceled)',
    description:
      "For the origin or the doer. `state` equal to the task's current state (not terminal) records the note only, as the task's status item: while the task is WORKING from the runtime holding the lease (403, reason not_lease_holder) with the claim's fencing token (`token`; 409, reason stale_lease), else from its origin or the runtime it is routed to (403, reason not_task_party); refusals are audited. Otherwise the task moves to SUBMITTED (input given, or a holder hands it back), INPUT_REQUIRED, FAILED or CANCELED as its state allows, asked by its origin, the runtime it is routed to or held by, or a person's (approver) runtime (else 403, reason not_task_party; audited); a WORKING task moves only with its holder's fencing token (`token`), sent by the runtime that claimed it, except to CANCELED. WORKING (a claim), COMPLETED (complete, with the result), AUTH_REQUIRED and REJECTED (the hub) are never set here, and a task waiting for approval leaves AUTH_REQUIRED only through an approval.",
    tags: ['tasks'],
    statuses: {
      200: 'The task after the update.',
      409: `${STALE} Or a state an update never sets.`,
    },
    async handler({ params, body, viewer, services }) {
      const task = await services.tasks
        .update(viewer, params.id, body)
        .catch((error: unknown) => refusedReport(services, viewer, params.id, 'update', error));
      return { status: 200, body: { task: taskView(task) } };
    },
  }),
];
