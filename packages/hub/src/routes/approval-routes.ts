import type { Task, TaskApproval } from '@ctxbus/core';
import {
  approvalDecisionBodySchema,
  approvalKeyResponseSchema,
  approvalRequestBodySchema,
  CtxbusError,
  taskIdParamsSchema,
  taskResponseSchema,
} from '@ctxbus/core';
import { commandDigest, signApproval } from '@ctxbus/exec';
import type { Caller } from '../caller.js';
import type { HubServices } from '../hub-services.js';
import { defineRoute } from '../route-definition.js';

// A human approves exactly one command: the worker that was refused it asks (the task waits in
// AUTH_REQUIRED, showing the command to every runtime as a blocking item), a person answers
// through any runtime but the one that asked for the work (or an admin token), and the hub
// signs the command's digest so that the worker runs that command and nothing else. Nobody
// answering in time is a deny.

/** Who decides, for which team: an admin naming the team, or a runtime acting for its own. */
function decider(caller: Caller, team: string | undefined, services: HubServices) {
  if (caller.role === 'admin') {
    if (team === undefined) {
      throw new CtxbusError(
        'validation_failed',
        "body.team: an admin token must name the task's team",
      );
    }
    return { teamId: team, by: `admin:${caller.tokenId}`, runtime: null };
  }
  if (caller.teamId === null || caller.runtime === null) {
    throw new CtxbusError('forbidden', 'this token acts for no team');
  }
  if (team !== undefined && team !== caller.teamId) {
    throw new CtxbusError(
      'forbidden',
      `a runtime token decides for its own team (${caller.teamId}) only`,
    );
  }
  const trust = services.capabilities.matrix().runtimes[caller.runtime]?.trust;
  if (trust === 'restricted') {
    throw new CtxbusError(
      'forbidden',
      `runtime ${caller.runtime} is restricted: it cannot approve commands`,
    );
  }
  return { teamId: caller.teamId, by: caller.runtime, runtime: caller.runtime };
}

async function pendingTask(services: HubServices, teamId: string, id: string): Promise<Task> {
  const found = await services.store.getTask(teamId, id);
  if (!found)
    throw new CtxbusError('not_found', `no task ${id} in team ${teamId}`, { details: { id } });
  const { task } = found;
  if (task.state !== 'AUTH_REQUIRED' || task.approval?.status !== 'pending') {
    throw new CtxbusError('conflict', `task ${id} is ${task.state}: it waits for no approval`, {
      details: { reason: 'no_pending_approval', state: task.state },
    });
  }
  return task;
}

export const approvalRoutes = [
  defineRoute({
    method: 'GET',
    path: '/api/approvals/key',
    operationId: 'approvalKey',
    summary: "The hub's public key: workers verify signed approvals with it",
    tags: ['tasks'],
    auth: 'any-token',
    responses: {
      200: { description: 'The Ed25519 public key.', schema: approvalKeyResponseSchema },
    },
    handler({ services }) {
      return {
        status: 200,
        body: { algorithm: 'ed25519', publicKey: services.approvalKey.publicKeyPem },
      };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/tasks/:id/approval-request',
    operationId: 'requestApproval',
    summary: 'Worker: ask a human to approve the exact command it was refused',
    description:
      'The task (WORKING, with this fencing token) moves to AUTH_REQUIRED and waits, showing the command to every runtime as a blocking item, until a human approves (it returns to the queue with a signed approval) or denies it, or the request lapses (REJECTED, approval_expired).',
    tags: ['tasks'],
    auth: 'runtime',
    params: taskIdParamsSchema,
    body: approvalRequestBodySchema,
    responses: {
      200: { description: 'The task, waiting.', schema: taskResponseSchema },
      409: { description: 'A stale fencing token.' },
    },
    async handler({ params, body, viewer, services }) {
      const now = services.clock();
      const request = { ...body.request, digest: commandDigest(body.request) };
      const approval: TaskApproval = {
        status: 'pending',
        request,
        requestedBy: viewer.runtime,
        requestedAt: now.toISOString(),
        expiresAt: new Date(now.getTime() + services.approvalTtlMs).toISOString(),
        decidedBy: null,
        decidedAt: null,
        note: null,
        token: null,
      };
      const note = body.note ?? `approve or deny: ${request.argv.join(' ')} in ${request.cwd}`;
      const task = await services.tasks.move(viewer.teamId, params.id, {
        state: 'AUTH_REQUIRED',
        by: viewer.runtime,
        token: body.token,
        note,
        approval,
      });
      return { status: 200, body: { task } };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/tasks/:id/approve',
    operationId: 'approveTask',
    summary: "A human approves the task's exact command, once",
    description:
      'The hub signs the digest of the command the worker asked about (argv, real working directory, the hash of the script it runs; valid 30 min) and puts the task back in the queue. Any runtime token of the team may answer except a restricted runtime; an admin token names the team.',
    tags: ['tasks'],
    auth: 'any-token',
    params: taskIdParamsSchema,
    body: approvalDecisionBodySchema,
    responses: {
      200: { description: 'The task, approved and queued.', schema: taskResponseSchema },
      409: { description: 'It waits for no approval.' },
    },
    async handler({ params, body, caller, services }) {
      const who = decider(caller, body.team, services);
      const task = await pendingTask(services, who.teamId, params.id);
      const approval = task.approval as TaskApproval;
      const now = services.clock();
      const digest = commandDigest(
        approval.request as unknown as Parameters<typeof commandDigest>[0],
      );
      const token = signApproval(
        services.approvalKey.privateKey,
        {
          taskId: task.id,
          digest,
          approvedBy: who.by,
          expiresAt: now.getTime() + services.approvalTtlMs,
        },
        now.getTime(),
      );
      const updated = await services.tasks.move(who.teamId, task.id, {
        state: 'SUBMITTED',
        by: who.by,
        note: body.note ?? 'approved',
        approval: {
          ...approval,
          status: 'approved',
          decidedBy: who.by,
          decidedAt: now.toISOString(),
          note: body.note ?? null,
          token,
        },
      });
      return { status: 200, body: { task: updated } };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/tasks/:id/deny',
    operationId: 'denyTask',
    summary: "A human denies the task's command: the task is REJECTED",
    tags: ['tasks'],
    auth: 'any-token',
    params: taskIdParamsSchema,
    body: approvalDecisionBodySchema,
    responses: {
      200: { description: 'The task, rejected.', schema: taskResponseSchema },
      409: { description: 'It waits for no approval.' },
    },
    async handler({ params, body, caller, services }) {
      const who = decider(caller, body.team, services);
      const task = await pendingTask(services, who.teamId, params.id);
      const approval = task.approval as TaskApproval;
      const now = services.clock();
      const updated = await services.tasks.move(who.teamId, task.id, {
        state: 'REJECTED',
        by: who.by,
        note: body.note ?? 'denied',
        error: { code: 'approval_denied', message: body.note ?? `denied by ${who.by}` },
        approval: {
          ...approval,
          status: 'denied',
          decidedBy: who.by,
          decidedAt: now.toISOString(),
          note: body.note ?? null,
        },
      });
      return { status: 200, body: { task: updated } };
    },
  }),
];
