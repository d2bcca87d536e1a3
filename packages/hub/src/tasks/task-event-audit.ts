import type { AuditEvent, Task, TaskError } from '@ctxbus/core';
import { hashValue } from '@ctxbus/core';
import type { TaskOutboxEvent } from '@ctxbus/store';

// The audit records of one task event (issue 12), derived from the event alone (the outbox
// holds the task as the change left it): routing decisions, state changes, execution results
// and approval steps. Pure: the relay appends what this returns, once per event.

/** Longest note or error message copied into a record. */
const TEXT_CHARS = 1_000;

const clip = (text: string | null | undefined): string | null =>
  text == null ? null : text.length > TEXT_CHARS ? `${text.slice(0, TEXT_CHARS)}…` : text;

/** The records of one task event, in the order they are appended. */
export function taskEventAudit(outbox: TaskOutboxEvent): AuditEvent[] {
  const state = stateRecord(outbox);
  const { task, event } = outbox;
  switch (outbox.kind) {
    case 'created':
      return [routedRecord(outbox), state];
    case 'completed':
      return [state, executionRecord(outbox, { outcome: 'completed', result: task.result })];
    case 'failed': {
      const outcome = event.to === 'SUBMITTED' ? 'requeued' : 'failed';
      return [state, executionRecord(outbox, { outcome, error: reportedError(outbox) })];
    }
    case 'approval-expired':
      return [state, approvalRecord(outbox, 'expired', {})];
    case 'updated':
      return [...approvalStep(outbox, state)];
    default:
      return [state];
  }
}

/** A task's state change (from null: its creation). */
function stateRecord({ task, event, actor }: TaskOutboxEvent): AuditEvent {
  return {
    kind: 'task.state',
    actor,
    subject: task.id,
    data: {
      from: event.from,
      to: event.to,
      by: actor,
      note: clip(event.note),
      attempts: task.attempts,
      // The holder, not its fencing token: the audit log is readable by the whole team.
      ...(task.lease && { workerId: task.lease.workerId, holder: task.lease.runtime }),
      ...(task.error && { error: { code: task.error.code, message: clip(task.error.message) } }),
    },
  };
}

/** A new task and the decision that placed it. */
function routedRecord({ task, actor }: TaskOutboxEvent): AuditEvent {
  const routing = (task.routing ?? {}) as Record<string, unknown>;
  return {
    kind: 'task.routed',
    actor,
    subject: task.id,
    data: {
      title: task.title,
      requiredCapabilities: task.requiredCapabilities,
      origin: task.origin,
      kind: routing.kind ?? null,
      runtime: task.targetRuntime,
      reason: routing.reason ?? null,
      requiresApproval: routing.requiresApproval ?? null,
      approvalReason: routing.approvalReason ?? null,
      state: task.state,
    },
  };
}

/** An update that answers or asks for an approval records the step with the state change. */
function approvalStep(outbox: TaskOutboxEvent, state: AuditEvent): AuditEvent[] {
  const { task, event } = outbox;
  const approval = task.approval;
  const request = (approval?.request ?? {}) as Record<string, unknown>;
  if (event.to === 'AUTH_REQUIRED' && approval?.status === 'pending') {
    return [
      state,
      approvalRecord(outbox, 'requested', {
        argv: request.argv,
        cwd: request.cwd,
        scriptHash: request.scriptHash,
        because: request.because,
        digest: request.digest,
        expiresAt: approval.expiresAt,
      }),
    ];
  }
  if (event.from === 'AUTH_REQUIRED' && approval && approval.status !== 'pending') {
    const step = approval.status === 'approved' ? 'granted' : 'denied';
    return [
      approvalRecord(outbox, step, { digest: request.digest ?? null, note: approval.note }),
      state,
    ];
  }
  return [state];
}

function approvalRecord(
  { task, actor }: TaskOutboxEvent,
  step: 'requested' | 'granted' | 'denied' | 'expired',
  data: Record<string, unknown>,
): AuditEvent {
  return { kind: `approval.${step}`, actor, subject: task.id, data };
}

/** The error a worker reported: on the task when it failed, in the note when it was requeued. */
function reportedError({ task, event }: TaskOutboxEvent): TaskError {
  if (task.error) return task.error;
  const reported = (event.note ?? '').replace(/^retry: /, '');
  const split = reported.indexOf(': ');
  return split < 0
    ? { code: 'failed', message: reported }
    : { code: reported.slice(0, split), message: reported.slice(split + 2) };
}

type Execution =
  | { outcome: 'completed'; result: Task['result'] }
  | { outcome: 'failed' | 'requeued'; error: TaskError };

/** What a worker reported for a claimed task: its command's exit and duration, or why not. */
function executionRecord({ task, actor }: TaskOutboxEvent, execution: Execution): AuditEvent {
  const data: Record<string, unknown> = { outcome: execution.outcome, state: task.state };
  if (execution.outcome === 'completed') {
    const result = execution.result;
    if (result !== null && typeof result === 'object' && !Array.isArray(result)) {
      const fields = result as Record<string, unknown>;
      for (const key of ['argv', 'cwd', 'exitCode', 'signal', 'durationMs', 'timedOut']) {
        if (fields[key] !== undefined) data[key] = fields[key];
      }
      if (fields.sandboxed !== undefined) data.sandboxed = fields.sandboxed;
    }
    // The whole result (output included) is kept on the task; its hash is kept here.
    data.resultHash = hashValue(result ?? null);
  } else {
    data.code = execution.error.code;
    data.message = clip(execution.error.message);
  }
  return { kind: 'execution.finished', actor, subject: task.id, data };
}
