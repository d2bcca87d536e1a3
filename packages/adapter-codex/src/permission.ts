import {
  commandDigest,
  MAX_PERMISSION_WAIT_SECONDS,
  MIN_PERMISSION_WAIT_SECONDS,
} from '@ctxbus/core/light';
import type { PermissionHub, PermissionTask } from './permission-hub.js';

// Codex's PermissionRequest hook (installed with `ctxbus install codex --approvals`): when Codex
// would ask its user to approve a command, the hook asks the team's people through the hub
// instead (POST /api/approvals: a task waiting for a person, answered with `ctxbus approve`,
// Telegram or the dashboard, never by an agent's token), follows the task on the hub's stream,
// and answers Codex:
// - a person approved this exact command (same argv and directory): allow;
// - a person denied it: deny, with who and why (Codex tells the model);
// - nobody answered in time, the request lapsed, the hub is down or refused: no decision, so
//   Codex asks its own user as it would without ctxbus. Never an allow without a person.
// Codex's contract (codex-rs/hooks/src/events/permission_request.rs, checked with 0.171.0's
// app-server): stdout `{hookSpecificOutput: {hookEventName, decision: {behavior, message}}}`;
// empty stdout is no decision; a hook killed at its timeout is no decision either.
// Network requests (a sandboxed command reaching a host outside Codex's network allowlist)
// come as this tool too (0.171.0, codex-rs/core/src/tools/approvals.rs): the command that
// opened the connection (or `network-access <target>` when Codex cannot tie it to one) and the
// description `network-access <protocol>://<host>:<port>`. People approve that command in that
// directory, as for any command; the destination is only Codex's description (for a shell
// command the description is the model's justification), so it is shown, never bound. An
// allow then lets that command's connection through once: less than running it.

/** What Codex sends the hook (the fields used). */
export interface CodexPermissionInput {
  session_id: string;
  turn_id: string;
  cwd: string;
  tool_name: string;
  command: string;
  description: string;
}

/** The hook's answer: a decision, a line for the person, or neither (Codex asks its user). */
export interface PermissionOutput {
  decision?: { behavior: 'allow' } | { behavior: 'deny'; message: string };
  systemMessage?: string;
}

export interface PermissionContext {
  /** The hub, or null when no hub or token is configured. */
  hub: PermissionHub | null;
  /** How long people have to answer (the hub's request lapses then too). */
  waitSeconds: number;
  /** A new idempotency key's unique part (default: a random UUID). */
  nonce?: () => string;
  /** The clock the wait is measured on (default Date.now; tests turn it). */
  now?: () => number;
}

/** How long people have to answer when the install does not say (`--approval-wait`). */
export const DEFAULT_APPROVAL_WAIT_SECONDS = 300;
/** The hook command's `--approval-wait <seconds>`, within the bounds; else the default. */
export function approvalWaitSeconds(argv: readonly string[]): number {
  const at = argv.indexOf('--approval-wait');
  const value = at >= 0 ? Number(argv[at + 1]) : Number.NaN;
  if (!Number.isInteger(value)) return DEFAULT_APPROVAL_WAIT_SECONDS;
  return Math.min(MAX_PERMISSION_WAIT_SECONDS, Math.max(MIN_PERMISSION_WAIT_SECONDS, value));
}

/**
 * The tool whose permission requests go to the team: Codex's shell commands, and its network
 * requests, which Codex 0.171.0 sends under this name (any other name gets no decision).
 */
export const PERMISSION_TOOL = 'Bash';

const text = (value: unknown): string => (typeof value === 'string' ? value : '');

/** The PermissionRequest input for a shell command, or null (any other event or tool). */
export function parsePermissionInput(value: unknown): CodexPermissionInput | null {
  if (value === null || typeof value !== 'object') return null;
  const raw = value as Record<string, unknown>;
  const toolInput = (raw.tool_input ?? {}) as Record<string, unknown>;
  const input = {
    session_id: text(raw.session_id),
    turn_id: text(raw.turn_id),
    cwd: text(raw.cwd),
    tool_name: text(raw.tool_name),
    command: text(toolInput.command),
    description: text(toolInput.description),
  };
  if (raw.hook_event_name !== 'PermissionRequest' || input.tool_name !== PERMISSION_TOOL) {
    return null;
  }
  return input.session_id && input.command && input.cwd.startsWith('/') ? input : null;
}

const notice = (line: string): PermissionOutput => ({ systemMessage: `ctxbus: ${line}` });

/**
 * True when `task`'s approval is for exactly this command in this directory: its digest (the
 * hub shows the command with secrets redacted, and binds the answer to the digest of the one
 * sent).
 */
function sameCommand(task: PermissionTask, input: CodexPermissionInput): boolean {
  const digest = task.approval?.request?.digest;
  return (
    typeof digest === 'string' &&
    digest === commandDigest({ argv: [input.command], cwd: input.cwd, scriptHash: null })
  );
}

const answered = (task: PermissionTask) =>
  task.approval !== null && task.approval.status !== 'pending';

/**
 * Follows the task on the hub's stream until a person answers or `deadline` passes; reads the
 * task once the stream is live and after each of its changes. A stream that fails or ends
 * early (the hub restarted) is opened again while time is left.
 */
export async function waitForAnswer(
  hub: PermissionHub,
  first: PermissionTask,
  deadline: number,
  now: () => number = Date.now,
): Promise<PermissionTask> {
  let task = first;
  while (!answered(task) && now() < deadline) {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), deadline - now());
    const look = () =>
      hub.task(task.id).then(
        (read) => {
          task = read;
          if (answered(read) || now() >= deadline) controller.abort();
        },
        () => undefined,
      );
    try {
      await hub.follow(task.id, controller.signal, () => void look());
    } catch {
      // aborted (answered, or out of time) or the stream failed: look again below
    } finally {
      clearTimeout(timer);
    }
    if (!answered(task)) await look();
    if (!answered(task) && !controller.signal.aborted) {
      await new Promise((resolve) => setTimeout(resolve, Math.min(1_000, deadline - now())));
    }
  }
  return task;
}

async function closeQuietly(hub: PermissionHub, id: string, note: string): Promise<void> {
  await hub.cancel(id, note).catch(() => undefined);
}

/** Turns a person's answer (or its absence) into Codex's answer. */
async function decide(
  hub: PermissionHub,
  task: PermissionTask,
  input: CodexPermissionInput,
): Promise<PermissionOutput> {
  const approval = task.approval;
  if (approval?.status === 'approved' && sameCommand(task, input)) {
    await closeQuietly(hub, task.id, `allowed: codex runs it in session ${input.session_id}`);
    return { decision: { behavior: 'allow' } };
  }
  if (approval?.status === 'denied') {
    const why = approval.note ? `: ${approval.note}` : '';
    return {
      decision: {
        behavior: 'deny',
        message: `Denied by ${approval.decidedBy ?? 'a person'} through ctxbus (task ${task.id})${why}`,
      },
    };
  }
  if (approval?.status === 'approved') {
    return notice(`task ${task.id} was approved for another command; Codex asks you instead`);
  }
  if (approval?.status === 'pending') {
    await closeQuietly(hub, task.id, 'nobody answered in time: Codex asks its own user');
  }
  return notice(`nobody on the team answered task ${task.id} in time; Codex asks you instead`);
}

/** node:crypto's UUID, loaded when a request is asked: loading it costs every hook run ~5 ms. */
const randomUuid = (): string => process.getBuiltinModule('node:crypto').randomUUID();

/**
 * Asks the team's people about Codex's command and answers Codex. Never throws: anything that
 * goes wrong leaves the decision to Codex's own prompt, with one line saying why.
 */
export async function runPermissionRequest(
  input: CodexPermissionInput,
  context: PermissionContext,
): Promise<PermissionOutput> {
  const { hub } = context;
  if (!hub) return notice('no hub or token for Codex; run `ctxbus install codex --approvals`');
  const now = context.now ?? Date.now;
  const deadline = now() + context.waitSeconds * 1000;
  let task: PermissionTask;
  try {
    task = await hub.ask({
      request: {
        argv: [input.command],
        cwd: input.cwd,
        tool: input.tool_name,
        ...(input.description && { reason: input.description.slice(0, 2_000) }),
      },
      idempotencyKey:
        `codex-permission:${input.session_id}:${input.turn_id}:${(context.nonce ?? randomUuid)()}`.slice(
          0,
          200,
        ),
      waitSeconds: context.waitSeconds,
    });
  } catch (error) {
    return notice(`could not ask the team (${(error as Error).message}); Codex asks you instead`);
  }
  return decide(hub, await waitForAnswer(hub, task, deadline, now), input);
}
