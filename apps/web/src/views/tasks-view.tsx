import type { Task, TaskEvent, WebClient } from '@ctxbus/adapter-web';
import { routingLine, TASK_TAG } from '@ctxbus/adapter-web';
import { routingDecisionSchema, shownJson, visibleText } from '@ctxbus/core/contract';
import { useState } from 'preact/hooks';
import type { LiveBus } from '../live.js';
import { useBus } from '../live.js';
import { Badge, Empty, ErrorBox, Time } from '../ui.js';
import { HUB_RELOAD_MS, useHubData, useThrottled } from '../use-hub-data.js';

/** The most tasks a column shows. */
const SHOWN = 100;

/**
 * The board's columns, each listed on its own (a flood of one state pushes no other off the
 * board): what waits for a person oldest first (none falls off unanswered), the rest newest
 * first.
 */
const COLUMNS: { title: string; states: Task['state'][]; order: 'oldest' | 'newest' }[] = [
  { title: 'Needs a human', states: ['AUTH_REQUIRED', 'INPUT_REQUIRED'], order: 'oldest' },
  { title: 'Waiting', states: ['SUBMITTED'], order: 'newest' },
  { title: 'Working', states: ['WORKING'], order: 'newest' },
  { title: 'Done', states: ['COMPLETED', 'FAILED', 'CANCELED', 'REJECTED'], order: 'newest' },
];

/** The router's decision in one line, or why there is none. */
export function routingOf(task: Task): string {
  const parsed = routingDecisionSchema.safeParse(task.routing);
  return parsed.success ? routingLine(parsed.data) : 'Routing: not recorded for this task.';
}

function commandOf(task: Task): string | null {
  const request = task.approval?.request;
  if (!request) return null;
  // Quoted as JSON with everything outside printable ASCII escaped (shownJson), as every
  // approval surface shows it: an argument's newlines show, nothing is hidden or reordered, and
  // no letter of another script passes for a Latin one.
  const argv = Array.isArray(request.argv) ? shownJson(request.argv.map(String)) : '';
  const cwd = typeof request.cwd === 'string' ? ` (in ${shownJson(request.cwd)})` : '';
  return `${argv}${cwd}`;
}

/** Who answers approvals here: the hub's approver runtimes and the runtime signed in. */
export interface Approvers {
  runtimes: readonly string[];
  runtime: string;
}

/**
 * Why this page may not answer `task`'s approval, or null when it may: the hub accepts only an
 * approver runtime that neither asked for the task nor runs it (and refuses anything else).
 */
export function decisionRefusal(task: Task, approvers: Approvers | null): string | null {
  if (approvers === null) return 'Checking who may answer…';
  const { runtime, runtimes } = approvers;
  if (!runtimes.includes(runtime)) {
    return `Only people answer approvals, through ${runtimes.join(', ') || 'an admin token'}; this dashboard is signed in as ${runtime}, which is not an approver.`;
  }
  if (runtime === task.origin || runtime === task.targetRuntime) {
    return `Signed in as ${runtime}, a party to this task: answer through another approver runtime.`;
  }
  if (runtime === task.approval?.requestedBy) {
    return `Signed in as ${runtime}, which asked for this approval: answer through another approver runtime.`;
  }
  return null;
}

function Approval({
  task,
  client,
  approvers,
  onDone,
}: {
  task: Task;
  client: WebClient;
  approvers: Approvers | null;
  onDone: () => void;
}) {
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const command = commandOf(task);
  const commandId = `command-${task.id}`;
  if (task.state !== 'AUTH_REQUIRED' || task.approval?.status !== 'pending') return null;
  const refusal = decisionRefusal(task, approvers);
  const decide = async (decision: 'approve' | 'deny') => {
    setBusy(true);
    setError(null);
    try {
      // The digest of the command on screen: if the task asked about another one since, the
      // hub refuses, and the board shows the newer one.
      const shown = task.approval?.request.digest;
      await client.decideTask(
        task.id,
        decision,
        `${decision === 'approve' ? 'approved' : 'denied'} from the dashboard`,
        typeof shown === 'string' ? shown : undefined,
      );
      onDone();
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="approval" data-testid="approval">
      <p>
        A worker asks to run exactly this, once:
        <code class="command" id={commandId}>
          {command ?? 'a command'}
        </code>
        {typeof task.approval.request.because === 'string' && (
          <span class="muted"> {task.approval.request.because}</span>
        )}
      </p>
      <p class="muted">
        Until <Time iso={task.approval.expiresAt} />; unanswered, it is denied.
      </p>
      {refusal !== null ? (
        <p class="muted" data-testid="approval-refusal">
          {refusal}
        </p>
      ) : (
        <div class="actions">
          <button
            type="button"
            aria-describedby={commandId}
            disabled={busy}
            onClick={() => decide('approve')}
          >
            Approve once
          </button>
          <button
            type="button"
            class="danger"
            aria-describedby={commandId}
            disabled={busy}
            onClick={() => decide('deny')}
          >
            Deny
          </button>
        </div>
      )}
      <ErrorBox error={error} />
    </div>
  );
}

function History({ client, task }: { client: WebClient; task: Task }) {
  const history = useHubData<TaskEvent[]>(
    async () => (await client.task(task.id)).history,
    [client, task.id, task.updatedAt],
  );
  if (history.error) return <ErrorBox error={history.error} />;
  if (!history.data) return <p aria-busy="true">Loading…</p>;
  return (
    <ol class="history" data-testid="task-history">
      {history.data.map((event) => (
        <li key={event.seq}>
          <Time iso={event.at} />: {event.from ?? 'created'} → <strong>{event.to}</strong> by{' '}
          {event.by}
          {event.note ? ` (${event.note})` : ''}
        </li>
      ))}
    </ol>
  );
}

function TaskCard({
  task,
  client,
  approvers,
  reload,
}: {
  task: Task;
  client: WebClient;
  approvers: Approvers | null;
  reload: () => void;
}) {
  const [open, setOpen] = useState(false);
  return (
    <li
      class={`task task-${task.state.toLowerCase()}`}
      data-testid="task"
      data-id={task.id}
      data-state={task.state}
    >
      <div class="item-head">
        <strong>{visibleText(task.title)}</strong>
        <Badge kind={task.state.toLowerCase()}>{task.state}</Badge>
      </div>
      <p class="item-meta">
        <span>
          {task.origin} → {task.targetRuntime ?? 'any runtime'}
        </span>
        <span>needs {task.requiredCapabilities.join(', ') || 'nothing declared'}</span>
        <Time iso={task.updatedAt} />
      </p>
      <p class="routing" data-testid="routing">
        {routingOf(task)}
      </p>
      {task.error && (
        <p class="error-text">
          {task.error.code}: {task.error.message}
        </p>
      )}
      <Approval task={task} client={client} approvers={approvers} onDone={reload} />
      <button type="button" class="link" aria-expanded={open} onClick={() => setOpen(!open)}>
        {open ? 'Hide history' : 'Show history'}
      </button>
      {open && <History client={client} task={task} />}
    </li>
  );
}

/** Tasks by state: where each went and why, its history, and answers to approval requests. */
export function TasksView({ bus, client }: { bus: LiveBus; client: WebClient }) {
  useBus(bus);
  // The hub names its approver runtimes: buttons only where the hub would accept the answer.
  const capabilities = useHubData(async () => (await client.capabilities()).approvers, [client]);
  const approvers: Approvers | null = capabilities.data
    ? {
        runtimes: capabilities.data.runtimes,
        runtime: capabilities.data.caller.runtime ?? 'an admin token',
      }
    : null;
  // Task status items ride the stream (tag `task`): reload when one arrives.
  const lastTaskSeq = bus.cache.items({ tags: TASK_TAG, includeSuperseded: true })[0]?.seq ?? 0;
  const changes = useThrottled(lastTaskSeq, HUB_RELOAD_MS);
  // Each column its own listing: among the newest 100 tasks alone, a request for approval fell
  // off the board once 100 newer tasks came (and was denied unanswered).
  const tasks = useHubData(
    () =>
      Promise.all(
        COLUMNS.map(({ states, order }) => client.tasks({ state: states, order, limit: SHOWN })),
      ),
    [client, changes],
  );
  return (
    <section aria-labelledby="view-title">
      <h1 id="view-title" tabIndex={-1}>
        Tasks
      </h1>
      <ErrorBox error={tasks.error} />
      {tasks.data?.every((listing) => listing.tasks.length === 0) && (
        <Empty>No tasks yet: a runtime that meets work it cannot do creates one.</Empty>
      )}
      <div class="board">
        {COLUMNS.map((column, index) => {
          const listing = tasks.data?.[index];
          const inColumn = listing?.tasks ?? [];
          const id = `column-${column.title.toLowerCase().replace(/\W+/g, '-')}`;
          return (
            <section key={column.title} class="column" aria-labelledby={id}>
              <h2 id={id}>
                {column.title}{' '}
                <span class="muted">
                  ({inColumn.length}
                  {listing?.nextAfter ? `, the ${column.order} ${SHOWN} shown` : ''})
                </span>
              </h2>
              <ul class="tasks">
                {inColumn.map((task) => (
                  <TaskCard
                    key={task.id}
                    task={task}
                    client={client}
                    approvers={approvers}
                    reload={tasks.reload}
                  />
                ))}
              </ul>
            </section>
          );
        })}
      </div>
    </section>
  );
}
