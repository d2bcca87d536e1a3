import { createInterface } from 'node:readline/promises';
import { createClient } from '@ctxbus/client';
import type { Task } from '@ctxbus/core/contract';
import { CtxbusError, shownJson } from '@ctxbus/core/light';
import { commandDigest } from '@ctxbus/exec';
import { hubCredentials } from '../credentials.js';
import { findAdminToken, hubUrl } from '../hub-target.js';
import { oneLine, terminalSafe } from '../output.js';
import { CONFIRM_CHARS } from './task-confirm.js';

// `ctxbus tasks [--state S]`, `ctxbus task ID`: what is routed where; `ctxbus approve ID` and
// `ctxbus deny ID`: a human's answer to a task waiting for approval of its exact command.
//
// An agent with a shell can run this CLI with its user's saved credentials, so `approve` wants a
// person: it runs only at a terminal (stdin and stdout TTYs; there is no --yes), shows the exact
// command and its digest, and approves only when the first 6 characters of the digest are
// typed back; the hub then checks the digest too. `deny` stays non-interactive: denying never
// runs anything, and a script or an agent that denies only stops work. The hub still decides who
// may answer (an approver runtime such as cli, or an admin token): see packages/exec/README.md.

export interface Connection {
  url?: string;
  token?: string;
  adminToken?: string;
  team?: string;
  json?: boolean;
}

/**
 * The admin token a decision acts with, if any: --admin-token; or, with --team (which only an
 * admin token takes) and no runtime token named for it, $CTXBUS_ADMIN_TOKEN or the saved one.
 */
function decisionAdminToken(url: string, options: Connection): string | undefined {
  if (options.token) return undefined;
  if (options.adminToken) return options.adminToken;
  if (!options.team || process.env.CTXBUS_APPROVER_TOKEN) return undefined;
  return findAdminToken(url, undefined) ?? undefined;
}

/**
 * A runtime token (flag, env, saved) or else the admin token, which must name a team. For a
 * decision, an admin token wins when named (--admin-token, or --team with one in
 * $CTXBUS_ADMIN_TOKEN or saved), and $CTXBUS_APPROVER_TOKEN (a token of an approver runtime such
 * as cli, kept off the agents' machines) comes before the usual ones.
 */
export function connect(options: Connection, decision = false) {
  const url = hubUrl(options.url);
  const deciding = decision ? decisionAdminToken(url, options) : undefined;
  if (deciding) {
    if (!options.team) {
      throw new CtxbusError('validation_failed', 'with an admin token, name the team: --team TEAM');
    }
    // Admin tokens do not read tasks: the command shown is read with a runtime token of the team.
    const reader = process.env.CTXBUS_TOKEN || hubCredentials(url).token;
    return {
      client: createClient({ url, token: deciding }),
      team: options.team,
      reader: reader ? createClient({ url, token: reader }) : null,
    };
  }
  const runtime =
    options.token ||
    (decision ? process.env.CTXBUS_APPROVER_TOKEN : undefined) ||
    process.env.CTXBUS_TOKEN ||
    hubCredentials(url).token;
  if (runtime) {
    const client = createClient({ url, token: runtime });
    return { client, team: options.team, reader: client };
  }
  // Admin tokens read no tasks: only a decision (--admin-token with --team) takes one.
  const admin = decision ? findAdminToken(url, options.adminToken) : undefined;
  if (!admin) {
    throw new CtxbusError(
      'validation_failed',
      `no runtime token for ${url}: pass --token or set CTXBUS_TOKEN (a runtime token of the team), or save the CLI's own with ctxbus token create --team TEAM --runtime cli --save${decision ? '; or pass --admin-token with --team' : ''}`,
    );
  }
  if (!options.team) {
    throw new CtxbusError('validation_failed', 'with an admin token, name the team: --team TEAM');
  }
  return { client: createClient({ url, token: admin }), team: options.team, reader: null };
}

export function taskLine(task: Task): string {
  const where = task.targetRuntime ? ` -> ${task.targetRuntime}` : '';
  return `${task.id}  ${task.state.padEnd(14)} ${task.origin}${where}  ${oneLine(task.title)}`;
}

interface ApprovalRequestView {
  argv?: string[];
  cwd?: string;
  scriptHash?: string | null;
  because?: string;
  /** The asking runtime's own words (a Codex network request: `network-access <target>`). */
  reason?: string;
  digest?: string;
}

export { oneLine };

/**
 * What a person is asked to approve: every detail the digest covers, the asking runtime's
 * reason when it gave one (shown as its words: the digest does not cover it), then the digest.
 */
export function confirmationText(task: Task, digest: string): string {
  const approval = task.approval;
  const request = (approval?.request ?? {}) as ApprovalRequestView;
  const lines = [
    // One line: an agent's newlines in its title would forge lines (a "command:" above the real one).
    `Task ${task.id}: ${oneLine(task.title)}`,
    `  asked by:   ${task.origin}; run by ${approval?.requestedBy ?? '?'}${request.because ? ` (${request.because})` : ''}`,
    `  command:    ${shownJson(request.argv ?? [])}`,
    `  in:         ${shownJson(request.cwd ?? '?')}`,
    ...(request.reason
      ? [
          `  reason:     ${JSON.stringify(oneLine(request.reason))} (${task.origin}'s words, not in the digest)`,
        ]
      : []),
    `  script:     ${request.scriptHash ? `sha256 ${request.scriptHash}` : 'none'}`,
    `  answer by:  ${approval?.expiresAt ?? '?'}`,
    `  digest:     ${digest}`,
    '',
    `Approve exactly this, once? Type the first ${CONFIRM_CHARS} characters of the digest (anything else cancels): `,
  ];
  // The title and the command are an agent's words: shown, never obeyed by the terminal.
  return terminalSafe(lines.join('\n'));
}

/**
 * Whether the hub takes this caller's approval of task `id`, asked before the person reads and
 * types anything: an approval without a digest approves nothing (400 digest_required) once the
 * hub would take the caller's answer, and a caller it refuses (an agent's token, the task's
 * origin) hears why at once (403, audited by the hub).
 */
export async function mayDecide(
  client: ReturnType<typeof createClient>,
  id: string,
  team: string | undefined,
): Promise<void> {
  try {
    await client.decideTask(id, 'approve', { ...(team !== undefined && { team }) });
  } catch (error) {
    // The client keeps the hub's details under details.details (beside the HTTP status).
    const reason = CtxbusError.isInstance(error)
      ? (error.details as { details?: { reason?: unknown } } | undefined)?.details?.reason
      : undefined;
    if (reason === 'digest_required') return;
    throw error;
  }
  throw new CtxbusError('internal', `the hub answered an approval of ${id} without a digest`);
}

/**
 * Asks the person at the terminal to confirm `task`'s command; returns its digest. Refuses
 * without a terminal, on a command whose digest does not match what the hub recorded, and on
 * any answer but the digest's first characters.
 */
export async function confirmAtTerminal(task: Task): Promise<string> {
  const approval = task.approval;
  if (task.state !== 'AUTH_REQUIRED' || approval?.status !== 'pending') {
    throw new CtxbusError('conflict', `task ${task.id} is ${task.state}: it waits for no approval`);
  }
  const request = approval.request as ApprovalRequestView;
  const digest = commandDigest({
    argv: request.argv ?? [],
    cwd: request.cwd ?? '',
    scriptHash: request.scriptHash ?? null,
  });
  if (request.digest !== digest) {
    throw new CtxbusError(
      'conflict',
      `task ${task.id}: the recorded digest does not match its command; not approved`,
    );
  }
  const prompt = createInterface({ input: process.stdin, output: process.stdout, terminal: true });
  let answer: string;
  try {
    answer = await prompt.question(confirmationText(task, digest));
  } finally {
    prompt.close();
  }
  if (answer.trim().toLowerCase() !== digest.slice(0, CONFIRM_CHARS)) {
    throw new CtxbusError(
      'validation_failed',
      `not approved: "${answer.trim()}" is not the first ${CONFIRM_CHARS} characters of the digest`,
    );
  }
  return digest;
}

export function approvalLines(task: Task): string[] {
  const approval = task.approval;
  if (!approval) return [];
  const request = approval.request as { argv?: string[]; cwd?: string; scriptHash?: string | null };
  return [
    `approval: ${approval.status}${approval.decidedBy ? ` by ${approval.decidedBy}` : ''}`,
    // Quoted as JSON, as approve shows it: an argument's newlines cannot forge lines.
    `  command: ${shownJson(request.argv ?? [])}`,
    `  in: ${shownJson(request.cwd ?? '?')}`,
    ...(request.scriptHash ? [`  script sha256: ${request.scriptHash}`] : []),
    ...(approval.status === 'pending' ? [`  answer by: ${approval.expiresAt}`] : []),
  ];
}
