import { createInterface } from 'node:readline/promises';
import { createClient } from '@ctxbus/client';
import type { Task } from '@ctxbus/core/contract';
import { CtxbusError, TASK_STATES } from '@ctxbus/core/contract';
import { commandDigest } from '@ctxbus/exec';
import type { Command } from 'commander';
import { hubCredentials } from '../credentials.js';
import { findAdminToken, hubUrl } from '../hub-target.js';
import { printJson, printLine } from '../output.js';

// `ctxbus tasks [--state S]`, `ctxbus task ID`: what is routed where; `ctxbus approve ID` and
// `ctxbus deny ID`: a human's answer to a task waiting for approval of its exact command.
//
// An agent with a shell can run this CLI with its user's saved credentials, so `approve` wants a
// person: it runs only at a terminal (stdin and stdout TTYs; there is no --yes), shows the exact
// command and its digest, and approves only when the first 6 characters of the digest are
// typed back; the hub then checks the digest too. `deny` stays non-interactive: denying never
// runs anything, and a script or an agent that denies only stops work. The hub still decides who
// may answer (an approver runtime such as cli, or an admin token): see packages/exec/README.md.

interface Connection {
  url?: string;
  token?: string;
  adminToken?: string;
  team?: string;
  json?: boolean;
}

/** Characters of the digest a person types to approve. */
export const CONFIRM_CHARS = 6;

/**
 * A runtime token (flag, env, saved) or else the admin token, which must name a team. For a
 * decision, an explicit --admin-token wins, and $CTXBUS_APPROVER_TOKEN (a token of an approver
 * runtime such as cli, kept off the agents' machines) comes before the usual ones.
 */
function connect(options: Connection, decision = false) {
  const url = hubUrl(options.url);
  if (decision && !options.token && options.adminToken) {
    if (!options.team) {
      throw new CtxbusError('validation_failed', 'with an admin token, name the team: --team TEAM');
    }
    // Admin tokens do not read tasks: the command shown is read with a runtime token of the team.
    const reader = process.env.CTXBUS_TOKEN || hubCredentials(url).token;
    return {
      client: createClient({ url, token: options.adminToken }),
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
  const admin = findAdminToken(url, options.adminToken);
  if (!admin) {
    throw new CtxbusError(
      'validation_failed',
      `no token for ${url}: pass --token (a runtime token of the team) or --admin-token with --team`,
    );
  }
  if (!options.team) {
    throw new CtxbusError('validation_failed', 'with an admin token, name the team: --team TEAM');
  }
  return { client: createClient({ url, token: admin }), team: options.team, reader: null };
}

function withConnection(command: Command): Command {
  return command
    .option('--url <url>', 'hub URL (default: $CTXBUS_URL, else the hub saved by ctxbus serve)')
    .option('--token <token>', 'runtime token (default: $CTXBUS_TOKEN, else the saved one)')
    .option('--json', 'print JSON');
}

export function taskLine(task: Task): string {
  const where = task.targetRuntime ? ` -> ${task.targetRuntime}` : '';
  return `${task.id}  ${task.state.padEnd(14)} ${task.origin}${where}  ${task.title}`;
}

interface ApprovalRequestView {
  argv?: string[];
  cwd?: string;
  scriptHash?: string | null;
  because?: string;
  digest?: string;
}

/** What a person is asked to approve: every detail the digest covers, then the digest. */
export function confirmationText(task: Task, digest: string): string {
  const approval = task.approval;
  const request = (approval?.request ?? {}) as ApprovalRequestView;
  return [
    `Task ${task.id}: ${task.title}`,
    `  asked by:   ${task.origin}; run by ${approval?.requestedBy ?? '?'}${request.because ? ` (${request.because})` : ''}`,
    `  command:    ${JSON.stringify(request.argv ?? [])}`,
    `  in:         ${request.cwd ?? '?'}`,
    `  script:     ${request.scriptHash ? `sha256 ${request.scriptHash}` : 'none'}`,
    `  answer by:  ${approval?.expiresAt ?? '?'}`,
    `  digest:     ${digest}`,
    '',
    `Approve exactly this, once? Type the first ${CONFIRM_CHARS} characters of the digest (anything else cancels): `,
  ].join('\n');
}

/**
 * Asks the person at the terminal to confirm `task`'s command; returns its digest. Refuses
 * without a terminal, on a command whose digest does not match what the hub recorded, and on
 * any answer but the digest's first characters.
 */
async function confirmAtTerminal(task: Task): Promise<string> {
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

/** Why `ctxbus approve` will not run here, or null at a terminal. */
export function noTerminalReason(stdinTty: boolean, stdoutTty: boolean): string | null {
  if (stdinTty && stdoutTty) return null;
  const missing =
    !stdinTty && !stdoutTty
      ? 'stdin and stdout are not TTYs'
      : `${stdinTty ? 'stdout' : 'stdin'} is not a TTY`;
  return `ctxbus approve needs a person at a terminal (${missing}): run it yourself in a terminal, or answer in Telegram or the dashboard`;
}

function approvalLines(task: Task): string[] {
  const approval = task.approval;
  if (!approval) return [];
  const request = approval.request as { argv?: string[]; cwd?: string; scriptHash?: string | null };
  return [
    `approval: ${approval.status}${approval.decidedBy ? ` by ${approval.decidedBy}` : ''}`,
    `  command: ${(request.argv ?? []).join(' ')}`,
    `  in: ${request.cwd ?? '?'}`,
    ...(request.scriptHash ? [`  script sha256: ${request.scriptHash}`] : []),
    ...(approval.status === 'pending' ? [`  answer by: ${approval.expiresAt}`] : []),
  ];
}

export function registerTaskCommands(
  program: Command,
  run: (action: () => Promise<void>) => Promise<void>,
) {
  withConnection(
    program
      .command('tasks')
      .description("the team's tasks, oldest first")
      .option('--state <states>', `only these states, comma-separated (${TASK_STATES.join(', ')})`)
      .option('--limit <n>', 'at most this many', '50'),
  ).action(
    (options: { url?: string; token?: string; json?: boolean; state?: string; limit: string }) =>
      run(async () => {
        const { client } = connect(options);
        const states = options.state?.split(',').map((state) => state.trim().toUpperCase());
        for (const state of states ?? []) {
          if (!(TASK_STATES as readonly string[]).includes(state)) {
            throw new CtxbusError(
              'validation_failed',
              `--state: "${state}" is not one of ${TASK_STATES.join(', ')}`,
            );
          }
        }
        const page = await client.tasks({
          ...(states && { state: states as Task['state'][] }),
          limit: Number(options.limit),
        });
        if (options.json) printJson(page);
        else for (const task of page.tasks) printLine(taskLine(task));
      }),
  );

  withConnection(
    program
      .command('task')
      .description('one task: its state, routing, result and history')
      .argument('<id>'),
  ).action((id: string, options: Connection) =>
    run(async () => {
      const { client } = connect(options);
      const { task, history } = await client.task(id);
      if (options.json) {
        printJson({ task, history });
        return;
      }
      printLine(taskLine(task));
      const routing = task.routing as { kind?: string; reason?: string } | null;
      if (routing?.reason) printLine(`routing: ${routing.kind}: ${routing.reason}`);
      for (const line of approvalLines(task)) printLine(line);
      if (task.error) printLine(`error: ${task.error.code}: ${task.error.message}`);
      if (task.result !== null) printLine(`result: ${JSON.stringify(task.result)}`);
      for (const event of history) {
        printLine(
          `  ${event.at}  ${event.from ?? '-'} -> ${event.to}  by ${event.by}${event.note ? `: ${event.note}` : ''}`,
        );
      }
    }),
  );

  for (const decision of ['approve', 'deny'] as const) {
    withConnection(
      program
        .command(decision)
        .description(
          decision === 'approve'
            ? 'approve the exact command a task waits on, at a terminal, typing its digest (the hub signs it; it runs once, within 30 min)'
            : 'deny the command a task waits on: the task is REJECTED (no terminal needed)',
        )
        .argument('<task-id>')
        .option('--note <text>', 'why, for the history')
        .option('--admin-token <token>', 'an admin token instead of a runtime token (with --team)')
        .option('--team <team>', "the task's team (with an admin token)")
        .addHelpText(
          'after',
          `
Only people decide. The hub accepts a token of an approver runtime (capabilities.yaml
\`approvers\`, default cli, telegram, web) that neither asked for the task nor runs it, or an
admin token (--admin-token with --team); an agent's token (claude-code, openclaw, ...) is
refused with 403. Keep the approver token off the agents' machines: pass it with --token or
$CTXBUS_APPROVER_TOKEN, e.g. one minted with
  ctxbus token create --team TEAM --runtime cli
${
  decision === 'approve'
    ? `
approve runs only at a terminal (stdin and stdout TTYs; there is no --yes): it shows the
exact command (argv, directory, script hash) and its digest, and approves once you type the
first ${CONFIRM_CHARS} characters of the digest. Without a terminal it exits 2.`
    : `
deny needs no terminal: denying never runs anything.`
}
See what it would run first: ctxbus task <task-id>`,
        ),
    ).action((id: string, options: Connection & { note?: string }) =>
      run(async () => {
        if (decision === 'approve') {
          const why = noTerminalReason(process.stdin.isTTY === true, process.stdout.isTTY === true);
          if (why !== null) throw new CtxbusError('validation_failed', why);
        }
        const { client, team, reader } = connect(options, true);
        let digest: string | undefined;
        if (decision === 'approve') {
          if (reader === null) {
            throw new CtxbusError(
              'validation_failed',
              'with an admin token, set CTXBUS_TOKEN to a runtime token of the team too: it reads the command to show you',
            );
          }
          const { task: waiting } = await reader.task(id);
          digest = await confirmAtTerminal(waiting);
        }
        const task = await client.decideTask(id, decision, {
          ...(options.note !== undefined && { note: options.note }),
          ...(team !== undefined && { team }),
          ...(digest !== undefined && { digest }),
        });
        if (options.json) printJson({ task });
        else {
          printLine(taskLine(task));
          for (const line of approvalLines(task)) printLine(line);
        }
      }),
    );
  }
}
