import type {
  AuditEvent,
  AuditRecord,
  CapabilitiesFile,
  CreateTaskRequest,
  RoutingDecision,
  Task,
  TaskError,
  TaskState,
  UpdateTaskRequest,
  Viewer,
} from '@ctxbus/core';
import {
  assertNoSecretInJson,
  CtxbusError,
  createTaskRequestSchema,
  isTerminalTaskState,
  notLeaseHolderError,
  personRefusal,
  prepareParsedItem,
  redactJson,
  redactSecrets,
  routeTask,
  staleLeaseError,
  taskOutputKey,
  taskStatusItem,
  UPDATE_TASK_STATES,
  updateTaskRequestSchema,
} from '@ctxbus/core';
import type {
  ClaimTaskOptions,
  CreateTaskOutcome,
  Store,
  TaskTransition,
  UpdateTaskPatch,
  WriteOutcome,
} from '@ctxbus/store';
import type { CapabilitiesSource } from '../capabilities/capabilities-source.js';
import type { PresenceRegistry } from '../capabilities/presence-registry.js';
import type { ClaimWaiters } from './claim-waiters.js';

// The task lifecycle: the hub's only caller of the task store's changes (create, claim, renew,
// start, complete, fail, update, cancel, the sweeps). Routes, A2A, approvals and the sweeper call
// it. Each change commits with its event (the store's outbox); what every runtime sees (the
// status item) and the audit records are the relay's, derived from that event, once. A change
// wakes the relay and waits for its pass, so in the normal path the status item is written
// before the caller answers; when the relay fails, the change stands and the relay retries.
// A worker's own reports (its claim, completion and failure) answer once committed and leave
// the announcement to the relay's next pass: waiting for it held every claim and completion
// for one to two passes (a claim and a completion took ~100 ms each under load, against 20 ms
// for the start that has no event), and the worker's slot idled meanwhile. Nothing of the
// worker's next step depends on the announcement; the relay's order and retries are the same.

/** How long a running command's output line stays in the feed after its last update. */
const OUTPUT_LINE_SECONDS = 10 * 60;

/** What the lifecycle works with. */
export interface TaskLifecycleDeps {
  store: Store;
  capabilities: CapabilitiesSource;
  presence: PresenceRegistry;
  clock: () => Date;
  /** Hands written items to this hub's live streams. */
  committed(outcomes: readonly WriteOutcome[]): void;
  /** The relay: relays what is committed, resolving after its pass (never rejects). */
  relay: { wake(): Promise<void> };
  /** The audit records a refusal became (the audit anchor checkpoints them). */
  onAudit?(teamId: string, records: readonly AuditRecord[]): void;
  /** Where claims with `waitMs` park (none: a claim answers at once). */
  waiters?: ClaimWaiters;
}

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

/** A note for a task that has ended: refused, since it would be recorded nowhere. */
function ended(task: Task): CtxbusError {
  return new CtxbusError(
    'conflict',
    `task ${task.id} has ended (${task.state}): a note goes on an open task only; nothing was recorded`,
    { details: { reason: 'task_ended', state: task.state } },
  );
}

/** A task's text (title, description, notes, error messages), its secrets redacted. */
const redacted = (text: string): string => redactSecrets(text, 'task').text;
const nullableRedacted = (text: string | undefined): string | null =>
  text === undefined ? null : redacted(text);

/**
 * A move's free text with its secrets redacted: its note, and its approval's note and reason
 * (the command itself, which a person approves as shown, is refused when it holds a secret).
 */
function redactedPatch(patch: UpdateTaskPatch): UpdateTaskPatch {
  const { approval } = patch;
  const reason = approval?.request.reason;
  return {
    ...patch,
    ...(patch.note !== undefined && { note: redacted(patch.note) }),
    ...(approval && {
      approval: {
        ...approval,
        note: approval.note === null ? null : redacted(approval.note),
        request: {
          ...approval.request,
          ...(typeof reason === 'string' && { reason: redacted(reason) }),
        },
      },
    }),
  };
}

/** Why a secret in a task's input is refused rather than redacted. */
const INPUT_SECRET =
  "a task's input is run as given and kept where the team reads it: give the worker the secret through its own environment instead";

/**
 * Who may add a note to a task (an update to its own state), which becomes its status item:
 * while it is WORKING only the worker holding its lease, with the claim's fencing token
 * (another's "all tests passed" would be read as the worker's), otherwise its origin or the runtime it is routed to (a note
 * on a task waiting for approval, "approved, go ahead", must not come from a bystander).
 */
function assertMayNote(task: Task, runtime: string, token: number | undefined): void {
  if (task.state === 'WORKING') {
    if (task.lease?.runtime !== runtime) {
      throw notLeaseHolderError(task.id, runtime, task.lease?.runtime ?? null);
    }
    // The holder's runtime is not the holder: an agent of that runtime beside its worker would
    // otherwise post "all tests passed" on the worker's task. The claim's token says who it is.
    if (token === undefined || token !== task.lease.token) {
      throw staleLeaseError(
        task.id,
        token === undefined
          ? "a note on a WORKING task needs the claim's fencing token (token)"
          : `token ${token} is not the current claim's token`,
      );
    }
    return;
  }
  if (runtime === task.origin || runtime === task.targetRuntime) return;
  throw new CtxbusError(
    'forbidden',
    `task ${task.id}: runtime ${runtime} is neither its origin (${task.origin}) nor the runtime it is routed to (${task.targetRuntime ?? 'none yet'}); only they add notes to it`,
    { details: { reason: 'not_task_party', taskId: task.id } },
  );
}

/**
 * Who may move a task (fail it, put it back, ask for input) or cancel it: its origin, the
 * runtime it is routed to or that holds it, and people (an approver runtime: the CLI, the
 * dashboard, the bot). Another agent of the team is refused (403, reason not_task_party): a
 * prompt-injected agent cannot end the work of others.
 */
function assertMayMove(task: Task, runtime: string, matrix: CapabilitiesFile): void {
  if (runtime === task.origin || runtime === task.targetRuntime) return;
  if (task.lease?.runtime === runtime) return;
  if (personRefusal(matrix, runtime) === null) return;
  throw new CtxbusError(
    'forbidden',
    `task ${task.id}: runtime ${runtime} is neither its origin (${task.origin}), the runtime it is routed to (${task.targetRuntime ?? 'none yet'}) nor a person's (an approver runtime); only they move or cancel it`,
    { details: { reason: 'not_task_party', taskId: task.id } },
  );
}

export class TaskLifecycle {
  /**
   * Claim attempts (store claims) since the hub started, how many took a task, and how many of
   * those a completion made (`next`: the worker's next task in its completion's call).
   */
  readonly claims = { attempts: 0, taken: 0, takenWithCompletion: 0 };

  constructor(private readonly deps: TaskLifecycleDeps) {}

  /** Waiting claims woken by a task since the hub started, and those waiting now. */
  get waiting(): { wakes: number; parked: number } {
    return { wakes: this.deps.waiters?.wakes ?? 0, parked: this.deps.waiters?.parked ?? 0 };
  }

  /** Routes and stores a new task from `viewer`'s runtime. */
  async create(
    viewer: Viewer,
    raw: CreateTaskRequest,
  ): Promise<CreateTaskOutcome & { routing: RoutingDecision }> {
    const request = createTaskRequestSchema.parse(raw);
    const { store, capabilities, presence } = this.deps;
    const live = await presence.summary(viewer.teamId);
    const routing = routeTask(
      {
        requiredCapabilities: request.requiredCapabilities,
        origin: viewer.runtime,
        ...(request.preferences && { preferences: request.preferences }),
        ...(request.constraints && { constraints: request.constraints }),
      },
      capabilities.matrix(),
      live,
      { team: viewer.teamId },
    );
    const { state, targetRuntime } = placement(routing, viewer.runtime);
    assertNoSecretInJson(request.input, 'input', INPUT_SECRET);
    const outcome = await this.relayed(
      store.createTask(viewer.teamId, {
        title: redacted(request.title),
        ...(request.description !== undefined && { description: redacted(request.description) }),
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
      }),
    );
    const stored = (outcome.task.routing as RoutingDecision | null) ?? routing;
    return { ...outcome, routing: stored };
  }

  /**
   * An update from a runtime of the team (the origin or the doer): its note alone when `state`
   * is the task's current one (not terminal), else a move to one of UPDATE_TASK_STATES as the
   * store allows it (a WORKING task only with its fencing token, except to CANCELED).
   */
  async update(viewer: Viewer, id: string, raw: UpdateTaskRequest): Promise<Task> {
    const request = updateTaskRequestSchema.parse(raw);
    const current = await this.find(viewer.teamId, id);
    if (request.state === current.state && !isTerminalTaskState(current.state)) {
      assertMayNote(current, viewer.runtime, request.token);
      await this.announce(current, viewer.runtime, nullableRedacted(request.note));
      return current;
    }
    if (request.state === current.state && request.note !== undefined) throw ended(current);
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
    // A WORKING task moves only with its holder's token, which the store checks (and names
    // the holder in its refusal); a cancel needs none, so it is checked here too.
    if (current.state !== 'WORKING' || request.state === 'CANCELED') {
      assertMayMove(current, viewer.runtime, this.deps.capabilities.matrix());
    }
    if (request.state === 'CANCELED') {
      return this.cancel(viewer.teamId, id, viewer.runtime, request.note);
    }
    return this.move(viewer.teamId, id, {
      state: request.state,
      by: viewer.runtime,
      ...(request.note !== undefined && { note: redacted(request.note) }),
      ...(request.token !== undefined && { token: request.token }),
      holder: viewer.runtime,
    });
  }

  /** Any move an update patch can make (approvals: the request, its answer). */
  move(teamId: string, id: string, patch: UpdateTaskPatch): Promise<Task> {
    return this.relayed(this.deps.store.updateTask(teamId, id, redactedPatch(patch)));
  }

  /** `cancel` as a runtime asks it: only a party to the task (see assertMayMove). */
  async cancelAs(viewer: Viewer, id: string, note?: string): Promise<Task> {
    const current = await this.find(viewer.teamId, id);
    assertMayMove(current, viewer.runtime, this.deps.capabilities.matrix());
    return this.cancel(viewer.teamId, id, viewer.runtime, note);
  }

  /**
   * Any non-terminal state -> CANCELED; a canceled task is returned as it is, unless the cancel
   * carries a note (which would be lost unseen: 409).
   */
  async cancel(teamId: string, id: string, by: string, note?: string): Promise<Task> {
    if (note !== undefined) {
      const current = await this.find(teamId, id);
      if (current.state === 'CANCELED') throw ended(current);
    }
    return this.relayed(
      this.deps.store.cancelTask(teamId, id, by, note === undefined ? note : redacted(note)),
    );
  }

  /**
   * A worker takes the next task routed to its runtime (or one it can do), or null. With
   * `wait`, when none is waiting the claim parks until a task it can take is announced (then
   * looks again), `wait.ms` runs out or `wait.signal` aborts (the worker went away).
   */
  async claim(
    options: ClaimTaskOptions,
    wait?: { ms: number; signal?: AbortSignal },
  ): Promise<Task | null> {
    const waiters = this.deps.waiters;
    if (!wait || wait.ms <= 0 || !waiters) return this.claimOnce(options);
    const deadline = performance.now() + wait.ms;
    for (;;) {
      // Registered before looking, so a task announced during the look wakes it.
      const ticket = waiters.enter(options);
      const task = await this.claimOnce(options).catch((error: unknown) => {
        ticket.leave();
        throw error;
      });
      if (task !== null) {
        ticket.leave();
        return task;
      }
      if (!(await ticket.wait(deadline - performance.now(), wait.signal))) return null;
    }
  }

  /** A claim made with the caller's completion (`next`): at once, never waiting. */
  async claimWithCompletion(options: ClaimTaskOptions): Promise<Task | null> {
    const task = await this.claimOnce(options);
    if (task !== null) this.claims.takenWithCompletion += 1;
    return task;
  }

  private async claimOnce(options: ClaimTaskOptions): Promise<Task | null> {
    this.claims.attempts += 1;
    // A claim that found nothing changed nothing: no event to relay.
    const task = await this.deps.store.claimTask(options);
    if (task !== null) {
      this.claims.taken += 1;
      void this.deps.relay.wake();
    }
    return task;
  }

  /** Extends a claim's lease (only its holder, `holder`): no event, nothing to announce. */
  renew(teamId: string, id: string, token: number, leaseMs: number, holder: string): Promise<Task> {
    return this.deps.store.renewLease(teamId, id, token, leaseMs, { holder });
  }

  /**
   * The holder is about to start the command (only its holder, `holder`): the lease records
   * it, one light write with no event, nothing to announce. From then on a lost lease fails the
   * task (worker_lost) instead of requeueing it, so the command never runs twice.
   */
  start(teamId: string, id: string, token: number, holder: string): Promise<Task> {
    return this.deps.store.startTask(teamId, id, token, { holder });
  }

  /** The holder finishes the task with its result (`actor`: the worker's runtime). */
  complete(teamId: string, id: string, token: number, result: unknown, actor: string) {
    // The output is kept on the task, read by the team: its secrets go before it is stored.
    const kept = redactJson(result, 'result').value;
    return this.relayedLater(
      this.deps.store.completeTask(teamId, id, token, kept, { actor, holder: actor }),
    );
  }

  /** The holder gives up (or, with `retry`, puts the task back while attempts remain). */
  fail(
    teamId: string,
    id: string,
    token: number,
    error: TaskError,
    options: { retry?: boolean; actor: string },
  ): Promise<Task> {
    const told =
      typeof error?.message === 'string' ? { ...error, message: redacted(error.message) } : error;
    return this.relayedLater(
      this.deps.store.failTask(teamId, id, token, told, { ...options, holder: options.actor }),
    );
  }

  /**
   * An act that is no task event, audited at once so the log shows who did or tried what: a
   * refusal that changed nothing (a runtime that may not decide an approval, a report from a
   * runtime that does not hold the lease), or a removal of a key's history. A failure to
   * record it fails the request.
   */
  async recordAudit(teamId: string, event: AuditEvent): Promise<void> {
    const record = await this.deps.store.appendAudit(
      teamId,
      event,
      this.deps.clock().toISOString(),
    );
    this.deps.onAudit?.(teamId, [record]);
  }

  /** The sweeps: lost leases, tasks past their wait, approval requests nobody answered. */
  async sweep(now: string): Promise<TaskTransition[]> {
    const { store } = this.deps;
    return this.relayed(
      (async () => [
        ...(await store.expireLeases(now)),
        ...(await store.expireWaiting(now)),
        ...(await store.expireApprovals(now)),
      ])(),
    );
  }

  /**
   * A status item that is no change of the task (a note, a running command's output): written
   * as `by` with the task's scope key, not audited. A command's output replaces the task's
   * previous output line (its key), and leaves the feed a while after the last one.
   */
  async announce(
    task: Task,
    by: string,
    note: string | null,
    output?: { tail: string; end?: number },
  ): Promise<void> {
    const input = taskStatusItem(task, note, output?.tail, output?.end);
    const item = prepareParsedItem(
      output === undefined
        ? input
        : { ...input, key: taskOutputKey(task.id), expiresAfterSeconds: OUTPUT_LINE_SECONDS },
      { teamId: task.teamId, runtime: by },
      { now: this.deps.clock() },
    );
    this.deps.committed(await this.deps.store.writeItems([item]));
  }

  private async find(teamId: string, id: string): Promise<Task> {
    const found = await this.deps.store.getTask(teamId, id);
    if (!found) {
      throw new CtxbusError('not_found', `no task ${id} in your team`, { details: { id } });
    }
    return found.task;
  }

  /** Waits for the change, then wakes the relay and answers without waiting for its pass. */
  private async relayedLater<T>(change: Promise<T>): Promise<T> {
    try {
      return await change;
    } finally {
      void this.deps.relay.wake();
    }
  }

  /** Waits for the change, then for the relay's pass (which announces and audits it). */
  private async relayed<T>(change: Promise<T>): Promise<T> {
    try {
      return await change;
    } finally {
      await this.deps.relay.wake();
    }
  }
}
