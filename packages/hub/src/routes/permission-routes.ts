import type { Task, TaskApproval, Viewer } from '@ctxbus/core';
import {
  assertNoSecretInJson,
  commandDigest,
  PERMISSION_REQUEST_BECAUSE,
  type PermissionRequestBody,
  shownJson,
} from '@ctxbus/core';
import type { HubServices } from '../hub-services.js';
import { implement } from '../route-definition.js';
import { taskView } from '../tasks/task-view.js';
import { approvalNote } from './approval-note.js';

// A runtime that runs commands itself (Codex: its PermissionRequest hook) asks the team's people
// to approve one exact command, through the approvals a worker's command goes through. No new
// way to decide: the request is a task from and for the asking runtime, waiting in AUTH_REQUIRED
// with the command's digest, so `POST /api/tasks/:id/approve|deny` (approval-routes.ts) refuse
// the asking runtime's own token (a party to the task) and any agent runtime, audit every
// refusal, and take a person's answer from the CLI, Telegram or the dashboard. The runtime
// follows the task and lets its command run only on an approval of that same command.
//
// The task's input names the command under `permission`, not `argv`: a worker never runs it
// (the runtime runs it itself, once approved). After an approval the task is back in
// SUBMITTED for the asking runtime only; the runtime closes it (cancel, with a note), and its
// short wait is the backstop when the runtime went away.

/** How long an approved request stays queued when the asking runtime never closes it. */
const APPROVED_WAIT_SECONDS = 120;

const TITLE_CHARS = 300;

function title(runtime: string, argv: readonly string[]): string {
  const text = `${runtime} asks to run: ${shownJson(argv)}`;
  return text.length <= TITLE_CHARS ? text : `${text.slice(0, TITLE_CHARS - 1)}…`;
}

/**
 * The command as the hub keeps and shows it. A person approves exactly what they are shown:
 * a command holding a secret (a token in a header, a password, or anything redaction would
 * hide) cannot be shown, so it is refused (400 secret_in_identifier) rather than shown
 * redacted and signed as sent.
 */
function shown(body: PermissionRequestBody): { argv: string[]; cwd: string } {
  assertNoSecretInJson(
    { argv: body.request.argv, cwd: body.request.cwd },
    'request',
    'a person approves exactly the command shown, and a secret would be hidden from them: pass it through the environment instead',
  );
  return { argv: [...body.request.argv], cwd: body.request.cwd };
}

/** The approval request as a person sees it, with the digest the hub binds the answer to. */
function pendingApproval(
  viewer: Viewer,
  body: PermissionRequestBody,
  services: HubServices,
): TaskApproval {
  const { tool, reason } = body.request;
  const { argv, cwd } = shown(body);
  const now = services.clock();
  const waitMs = Math.min(body.waitSeconds * 1000, services.approvalTtlMs);
  return {
    status: 'pending',
    request: {
      argv,
      cwd,
      scriptHash: null,
      because: PERMISSION_REQUEST_BECAUSE,
      tool,
      ...(reason !== undefined && { reason }),
      digest: commandDigest({ argv: body.request.argv, cwd: body.request.cwd, scriptHash: null }),
    },
    requestedBy: viewer.runtime,
    requestedAt: now.toISOString(),
    expiresAt: new Date(now.getTime() + waitMs).toISOString(),
    decidedBy: null,
    decidedAt: null,
    note: null,
    token: null,
  };
}

/** Stores the request (or finds it by its key) and puts it before the team's people. */
async function askPeople(
  viewer: Viewer,
  body: PermissionRequestBody,
  services: HubServices,
): Promise<{ task: Task; status: 'created' | 'existing' }> {
  const { tool } = body.request;
  const { argv, cwd } = shown(body);
  const outcome = await services.store.createTask(viewer.teamId, {
    title: title(viewer.runtime, argv),
    requiredCapabilities: ['code_execution'],
    origin: viewer.runtime,
    input: { permission: { tool, command: argv, cwd } },
    idempotencyKey: body.idempotencyKey,
    ttlSeconds: APPROVED_WAIT_SECONDS,
    maxAttempts: 1,
    targetRuntime: viewer.runtime,
    initialState: 'SUBMITTED',
  });
  // A retry after the create but before the move finds the task still SUBMITTED: move it now.
  if (outcome.task.state !== 'SUBMITTED' || outcome.task.approval !== null) return outcome;
  const task = await services.tasks.move(viewer.teamId, outcome.task.id, {
    state: 'AUTH_REQUIRED',
    by: viewer.runtime,
    note: body.note ?? approvalNote(argv, cwd, ` (asked by ${viewer.runtime})`),
    approval: pendingApproval(viewer, body, services),
  });
  return { task, status: outcome.status };
}

export const permissionRoutes = [
  implement('requestPermission', {
    summary: "A runtime asks the team's people to approve a command it runs itself",
    description:
      "For a runtime that runs commands in its own session (Codex's PermissionRequest hook). The hub stores a task from and for the caller's runtime, waiting in AUTH_REQUIRED with the command's digest (`approval.request`, because `permission_request`) until a person approves or denies it through `POST /api/tasks/:id/approve|deny` (the caller's own token, and any runtime not in `approvers`, is refused there and audited) or `waitSeconds` pass (REJECTED, approval_expired). The caller follows the task and runs the command only when `approval.status` is approved for the same argv and directory; then it cancels the task (approved requests are never run by a worker: the input has no argv). The same idempotency key returns the task already stored (200).",
    tags: ['tasks'],
    statuses: {
      200: 'A request with this idempotency key exists.',
      201: 'The request, waiting for a person.',
    },
    async handler({ body, viewer, services }) {
      const { task, status } = await askPeople(viewer, body, services);
      return { status: status === 'created' ? 201 : 200, body: { task: taskView(task), status } };
    },
  }),
];
