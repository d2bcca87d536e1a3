import type {
  AuditEvent,
  AuditRecord,
  Logger,
  RoutingDecision,
  Task,
  TaskError,
  TaskState,
} from '@ctxbus/core';
import { hashValue } from '@ctxbus/core';
import type { AuditLog } from '@ctxbus/store';

// The one place the hub writes the audit log (issue 12): routing decisions, task state changes
// (routes and the sweeper), execution results, and approvals (`record`, for the approval flow).
//
// An audit append runs after the task change it records has committed, in its own transaction.
// If it fails, the task change stands (the caller already has it; failing the request would
// make a worker retry a completion that happened, and be refused as stale) and the failure is
// logged at error level with the whole event, so an operator can see what the log is missing.
// The chain itself stays intact: a missed record is absent, never a forged one.

/** Longest note or error message copied into a record. */
const TEXT_CHARS = 1_000;

const clip = (text: string | null | undefined): string | null =>
  text == null ? null : text.length > TEXT_CHARS ? `${text.slice(0, TEXT_CHARS)}…` : text;

export interface AuditRecorderDeps {
  store: Pick<AuditLog, 'appendAudit'>;
  clock: () => Date;
  logger: Logger;
}

export interface StateChange {
  from: TaskState | null;
  /** Who moved it: a runtime, or the hub's own name for sweeps. */
  by: string;
  note?: string | null;
}

export type ExecutionOutcome =
  | { outcome: 'completed'; result: unknown }
  | { outcome: 'failed' | 'requeued'; error: TaskError };

export class AuditRecorder {
  /** Appends that failed since the hub started (also logged, each with its event). */
  failures = 0;

  constructor(private readonly deps: AuditRecorderDeps) {}

  /**
   * Appends one event to `teamId`'s chain. Never throws: a failure is logged (error level,
   * with the event) and counted, and null returned.
   */
  async record(teamId: string, event: AuditEvent): Promise<AuditRecord | null> {
    try {
      return await this.deps.store.appendAudit(teamId, event, this.deps.clock().toISOString());
    } catch (error) {
      this.failures += 1;
      this.deps.logger.error(
        { err: error, teamId, audit: event },
        'AUDIT LOG APPEND FAILED: this event is missing from the audit log',
      );
      return null;
    }
  }

  /** A new task and the decision that placed it. */
  async taskRouted(task: Task, routing: RoutingDecision, actor: string): Promise<void> {
    await this.record(task.teamId, {
      kind: 'task.routed',
      actor,
      subject: task.id,
      data: {
        title: task.title,
        requiredCapabilities: task.requiredCapabilities,
        origin: task.origin,
        kind: routing.kind,
        runtime: task.targetRuntime,
        reason: routing.reason,
        requiresApproval: routing.requiresApproval,
        approvalReason: routing.approvalReason,
        state: task.state,
      },
    });
  }

  /** A task's state change (from null: its creation). */
  async taskState(task: Task, change: StateChange): Promise<void> {
    await this.record(task.teamId, {
      kind: 'task.state',
      actor: change.by,
      subject: task.id,
      data: {
        from: change.from,
        to: task.state,
        by: change.by,
        note: clip(change.note),
        attempts: task.attempts,
        // The holder, not its fencing token: the audit log is readable by the whole team.
        ...(task.lease && { workerId: task.lease.workerId, holder: task.lease.runtime }),
        ...(task.error && { error: { code: task.error.code, message: clip(task.error.message) } }),
      },
    });
  }

  /**
   * An approval step of a task (for the approval flow): `requested` when a command waits for a
   * human, `granted` / `denied` by whom, `expired` when nobody answered, `refused` when a
   * runtime that may not decide tried to (not an approver, or the task's origin or executor). `data` says what was
   * approved (argv, cwd, script hash, expiry); it is recorded as given.
   */
  async approval(
    task: Pick<Task, 'id' | 'teamId'>,
    step: 'requested' | 'granted' | 'denied' | 'expired' | 'refused',
    actor: string,
    data: Record<string, unknown> = {},
  ): Promise<AuditRecord | null> {
    return this.record(task.teamId, {
      kind: `approval.${step}`,
      actor,
      subject: task.id,
      data,
    });
  }

  /** What a worker reported for a claimed task: its command's exit and duration, or why not. */
  async executionFinished(task: Task, by: string, execution: ExecutionOutcome): Promise<void> {
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
    await this.record(task.teamId, {
      kind: 'execution.finished',
      actor: by,
      subject: task.id,
      data,
    });
  }
}
