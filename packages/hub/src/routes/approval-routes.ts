import type { Task, TaskApproval } from '@ctxbus/core';
import { CtxbusError, personRefusal, redactSecrets, visibleText } from '@ctxbus/core';
import { commandDigest, signApproval } from '@ctxbus/exec';
import type { Caller } from '../caller.js';
import type { HubServices } from '../hub-services.js';
import { implement } from '../route-definition.js';
import { approvalNote } from './approval-note.js';
import { heldTask } from './task-routes.js';

// A human approves exactly one command: the worker that was refused it asks (the task waits in
// AUTH_REQUIRED, showing the command to every runtime as a blocking item), a person answers
// through one of the approver runtimes capabilities.yaml names (`approvers`, default cli,
// telegram, web: people's channels, never an agent's), or with an admin token, and the hub
// signs the command's digest so that the worker runs that command and nothing else. Nobody
// answering in time is a deny.
//
// Agents hold runtime tokens where their own shell can read them, so an agent's token must
// never release a command: a runtime that is not an approver is refused, and so are the task's
// origin and the runtime that runs it (or asked for the approval), even when they are
// approvers. Every refusal is audited (approval.refused).

type Decision = 'approve' | 'deny';

interface Decider {
  teamId: string;
  by: string;
  /** The deciding runtime; null for an admin token. */
  runtime: string | null;
}

/** The refusal of a decision from a runtime that may not decide (403, approver_required). */
function approverRequired(message: string, details: Record<string, unknown>): CtxbusError {
  return new CtxbusError('forbidden', message, {
    details: { reason: 'approver_required', ...details },
  });
}

async function refused(
  services: HubServices,
  teamId: string,
  taskId: string,
  decision: Decision,
  runtime: string,
  error: CtxbusError,
): Promise<never> {
  // Audit (issue 12): who tried to decide what, and why it was refused.
  await services.tasks.recordAudit(teamId, {
    kind: 'approval.refused',
    actor: runtime,
    subject: taskId,
    data: {
      decision,
      runtime,
      ...(error.details as Record<string, unknown>),
      message: error.message,
    },
  });
  throw error;
}

/**
 * Who decides, for which team: an admin naming the team, or an approver runtime acting for its
 * own. A runtime token that is not an approver is refused (and audited) before the task is
 * read.
 */
async function decider(
  caller: Caller,
  team: string | undefined,
  services: HubServices,
  taskId: string,
  decision: Decision,
): Promise<Decider> {
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
  await refuseAgent(caller, services, taskId, decision);
  return { teamId: caller.teamId, by: caller.runtime, runtime: caller.runtime };
}

/**
 * Refuses (and audits) a runtime token that is no person's: not an approver runtime, or a
 * restricted one. Before the body is read too, so a malformed attempt is audited as one.
 */
async function refuseAgent(
  caller: Caller,
  services: HubServices,
  taskId: string,
  decision: Decision,
): Promise<void> {
  if (caller.role === 'admin' || caller.teamId === null || caller.runtime === null) return;
  const refusal = personRefusal(services.capabilities.matrix(), caller.runtime);
  if (refusal?.role === 'not_an_approver') {
    const { approvers, source, declared } = refusal;
    await refused(
      services,
      caller.teamId,
      taskId,
      decision,
      caller.runtime,
      approverRequired(
        `runtime ${caller.runtime} cannot ${decision} commands: only people decide, through an approver runtime (${approvers.join(', ') || 'none'}${source === 'default' ? ', the default' : ', from capabilities.yaml approvers'}) or an admin token${declared ? '' : `; ${caller.runtime} is not even declared in capabilities.yaml`}`,
        { runtime: caller.runtime, role: 'not_an_approver', approvers },
      ),
    );
  }
  if (refusal?.role === 'restricted') {
    await refused(
      services,
      caller.teamId,
      taskId,
      decision,
      caller.runtime,
      approverRequired(`runtime ${caller.runtime} is restricted: it cannot decide on commands`, {
        runtime: caller.runtime,
        role: 'restricted',
      }),
    );
  }
}

/**
 * Refuses (and audits) a decision by a party to the task: its origin, the runtime it is routed
 * to, or the runtime that asked for the approval (the worker that will run the command).
 */
async function refuseParty(
  services: HubServices,
  who: Decider,
  task: Task,
  decision: Decision,
): Promise<void> {
  if (who.runtime === null) return;
  const approval = task.approval as TaskApproval;
  const role =
    who.runtime === task.origin
      ? 'origin'
      : who.runtime === approval.requestedBy || who.runtime === task.targetRuntime
        ? 'executor'
        : null;
  if (role === null) return;
  await refused(
    services,
    who.teamId,
    task.id,
    decision,
    who.runtime,
    approverRequired(
      `runtime ${who.runtime} ${role === 'origin' ? 'asked for this task' : 'runs this command'}: it cannot ${decision} it; a person answers through another approver runtime or an admin token`,
      { runtime: who.runtime, role },
    ),
  );
}

/** Refuses (and audits) a decision about another command than the one the person was shown. */
async function checkDigest(
  services: HubServices,
  who: Decider,
  task: Task,
  decision: Decision,
  digest: string | undefined,
): Promise<void> {
  const pending = (task.approval as TaskApproval).request.digest;
  // An approval is of one exact command: the one the person read. Without its digest, a
  // command asked for since (a worker's new request) would be approved unread.
  if (digest === undefined && decision === 'approve') {
    throw new CtxbusError(
      'validation_failed',
      `body.digest: an approval names the digest of the command the person was shown (approval.request.digest of task ${task.id}); nothing approved`,
      { details: { reason: 'digest_required', field: 'body.digest' } },
    );
  }
  if (digest === undefined || digest === pending) return;
  await refused(
    services,
    who.teamId,
    task.id,
    decision,
    who.runtime ?? who.by,
    new CtxbusError(
      'conflict',
      `task ${task.id} waits on another command than the one shown (digest ${digest.slice(0, 12)}…, pending ${String(pending).slice(0, 12)}…): nothing decided`,
      { details: { reason: 'digest_mismatch' } },
    ),
  );
}

/** One argv element as a message shows it: quoted, invisible characters escaped, cut short. */
function shownArg(arg: unknown): string {
  const text = typeof arg === 'string' ? arg : String(JSON.stringify(arg));
  return visibleText(JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}…` : text));
}

/**
 * Refuses a worker's approval request for anything but its task's own command: the `argv` asked
 * about must be the task's `input.argv`, element by element. People are shown the request under
 * the task's title, origin and history, so a token that claimed a task (any holder of the
 * runtime's token: an injected agent shares its runtime's with the worker) must not get another
 * command approved in its name. The worker asks about the input's argv unchanged (prepareExecution
 * binds `input.argv` as it is, and TaskWorker.refuse sends that), so nothing legitimate differs.
 * A task whose input has no argv array (a permission request, a task that is no command) has
 * nothing a worker may ask about. The working directory cannot be checked here: the worker
 * sends the real path it resolved `input.cwd` to on its own machine (symlinks, `~`), which
 * only it can see; it binds the command to that path, and the digest the person approves
 * covers it.
 */
function checkRequestedCommand(task: Task, argv: readonly string[]): void {
  const own = task.input?.argv;
  if (!Array.isArray(own)) {
    throw new CtxbusError(
      'conflict',
      `task ${task.id} has no command to approve (its input has no argv): only a code_execution task's own command is asked about; nothing asked`,
      { details: { reason: 'command_mismatch', taskId: task.id } },
    );
  }
  let index = 0;
  while (index < own.length && index < argv.length && own[index] === argv[index]) index++;
  if (index === own.length && index === argv.length) return;
  const difference =
    index === argv.length
      ? `the request's argv stops after ${index} element(s) where the task's goes on with argv[${index}] ${shownArg(own[index])}`
      : index === own.length
        ? `the request's argv goes on after the task's ${index} element(s) with argv[${index}] ${shownArg(argv[index])}`
        : `the request's argv[${index}] is ${shownArg(argv[index])} where the task's is ${shownArg(own[index])}`;
  throw new CtxbusError(
    'conflict',
    `task ${task.id}: an approval is asked only for the task's own command (input.argv), and ${difference}; nothing asked`,
    { details: { reason: 'command_mismatch', taskId: task.id, index } },
  );
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
  implement('approvalKey', {
    summary: "The hub's public key: workers verify signed approvals with it",
    tags: ['tasks'],
    statuses: { 200: 'The Ed25519 public key.' },
    handler({ services }) {
      return {
        status: 200,
        body: { algorithm: 'ed25519', publicKey: services.approvalKey.publicKeyPem },
      };
    },
  }),
  implement('requestApproval', {
    summary: 'Worker: ask a human to approve the exact command it was refused',
    description:
      "The task (WORKING, held by the caller's runtime with this fencing token; anything else is refused and audited, a task in the queue too) moves to AUTH_REQUIRED and waits, showing the command to every runtime as a blocking item, until a human approves (it returns to the queue with a signed approval) or denies it, or the request lapses (REJECTED, approval_expired). The request is about the task's own command only: an `argv` that is not the task's `input.argv` element by element, or a task whose input has no argv, is refused with 409 (reason `command_mismatch`) and the task stays as it was. `cwd` is the real directory the worker resolved the input's `cwd` to, which only the worker can check.",
    tags: ['tasks'],
    statuses: {
      200: 'The task, waiting.',
      403: "The caller's runtime does not hold the task (reason not_lease_holder).",
      409: "The task is not WORKING or the fencing token is stale (reason stale_lease), or another command than the task's (reason command_mismatch).",
    },
    async handler({ params, body, viewer, services }) {
      // Only the worker holding the task asks, about the task's own command: anyone else
      // (another runtime, a task in the queue) is refused and audited before the command is
      // compared, so only the holder learns how its request differs.
      const held = await heldTask(services, viewer, params.id, body.token, 'approval-request');
      checkRequestedCommand(held, body.request.argv);
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
      const note = body.note ?? approvalNote(request.argv, request.cwd);
      const task = await services.tasks.move(viewer.teamId, params.id, {
        state: 'AUTH_REQUIRED',
        by: viewer.runtime,
        token: body.token,
        holder: viewer.runtime,
        note,
        approval,
      });
      return { status: 200, body: { task } };
    },
  }),
  implement('approveTask', {
    summary: "A human approves the task's exact command, once",
    description:
      "The hub signs the digest of the command the worker asked about (argv, real working directory, the hash of the script it runs; valid 30 min) and puts the task back in the queue. Only people decide: a token of an approver runtime (capabilities.yaml `approvers`, default cli, telegram, web) that is neither the task's origin nor the runtime that runs it, or an admin token naming the team. Anything else is refused with 403 (reason `approver_required`) and audited (approval.refused).",
    tags: ['tasks'],
    statuses: {
      200: 'The task, approved and queued.',
      403: 'Not an approver, or a party to the task (reason approver_required).',
      409: 'It waits for no approval.',
    },
    beforeBody: ({ params, caller, services }) =>
      refuseAgent(caller, services, params.id, 'approve'),
    async handler({ params, body, caller, services }) {
      const who = await decider(caller, body.team, services, params.id, 'approve');
      const task = await pendingTask(services, who.teamId, params.id);
      await refuseParty(services, who, task, 'approve');
      await checkDigest(services, who, task, 'approve', body.digest);
      const approval = task.approval as TaskApproval;
      const now = services.clock();
      // The hub signs only the digest of the command every approver is shown: one stored
      // with the request that the shown command does not hash to is refused (and audited).
      const digest = commandDigest(
        approval.request as unknown as Parameters<typeof commandDigest>[0],
      );
      if (typeof approval.request.digest === 'string' && approval.request.digest !== digest) {
        await refused(
          services,
          who.teamId,
          task.id,
          'approve',
          who.runtime ?? who.by,
          new CtxbusError(
            'conflict',
            `task ${task.id}: the command shown is not the one its digest covers; nothing approved`,
            { details: { reason: 'digest_mismatch' } },
          ),
        );
      }
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
  implement('recordRefusedDecision', {
    summary: "A people's channel records a decision it refused before asking the hub",
    description:
      "For an approver runtime (the Telegram bot, say) that refuses a person's tap itself: someone who is not one of its approvers, a button on another message, a message that showed another command than the one the task waits on. The hub audits it as approval.refused (decision, the channel, who tried, why), as it audits its own refusals. Only an approver runtime may record one (any other is refused and audited itself), for a task of its team.",
    tags: ['tasks'],
    statuses: {
      200: 'Recorded in the audit log.',
      403: 'Not an approver runtime (reason approver_required).',
      404: 'No such task in the team.',
    },
    async handler({ params, body, caller, services }) {
      const who = await decider(caller, undefined, services, params.id, body.decision);
      if (!(await services.store.getTask(who.teamId, params.id))) {
        throw new CtxbusError('not_found', `no task ${params.id} in team ${who.teamId}`, {
          details: { id: params.id },
        });
      }
      await services.tasks.recordAudit(who.teamId, {
        kind: 'approval.refused',
        actor: who.by,
        subject: params.id,
        data: {
          decision: body.decision,
          runtime: who.by,
          role: 'refused_by_channel',
          reason: body.reason,
          // One line, nothing invisible: a channel's words cannot forge an audit line.
          by: visibleText(redactSecrets(body.by.replace(/\s+/g, ' '), 'by').text),
          ...(body.message !== undefined && {
            message: redactSecrets(body.message, 'message').text,
          }),
        },
      });
      return { status: 200, body: { recorded: true } };
    },
  }),
  implement('denyTask', {
    summary: "A human denies the task's command: the task is REJECTED",
    description:
      'Who may deny is who may approve (an approver runtime that is not a party to the task, or an admin token): a refusal is 403 (reason `approver_required`), audited.',
    tags: ['tasks'],
    statuses: {
      200: 'The task, rejected.',
      403: 'Not an approver, or a party to the task (reason approver_required).',
      409: 'It waits for no approval.',
    },
    beforeBody: ({ params, caller, services }) => refuseAgent(caller, services, params.id, 'deny'),
    async handler({ params, body, caller, services }) {
      const who = await decider(caller, body.team, services, params.id, 'deny');
      const task = await pendingTask(services, who.teamId, params.id);
      await refuseParty(services, who, task, 'deny');
      await checkDigest(services, who, task, 'deny', body.digest);
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
