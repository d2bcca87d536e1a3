import { createClient } from '@ctxbus/client';
import type { Task } from '@ctxbus/core/contract';
import { CtxbusError, TASK_STATES } from '@ctxbus/core/contract';
import type { Command } from 'commander';
import { hubCredentials } from '../credentials.js';
import { findAdminToken, hubUrl } from '../hub-target.js';
import { printJson, printLine } from '../output.js';

// `ctxbus tasks [--state S]`, `ctxbus task ID`: what is routed where; `ctxbus approve ID` and
// `ctxbus deny ID`: a human's answer to a task waiting for approval of its exact command.

interface Connection {
  url?: string;
  token?: string;
  adminToken?: string;
  team?: string;
  json?: boolean;
}

/** A runtime token (flag, env, saved) or else the admin token, which must name a team. */
function connect(options: Connection) {
  const url = hubUrl(options.url);
  const runtime = options.token || process.env.CTXBUS_TOKEN || hubCredentials(url).token;
  if (runtime) return { client: createClient({ url, token: runtime }), team: options.team };
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
  return { client: createClient({ url, token: admin }), team: options.team };
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
            ? 'approve the exact command a task waits on (the hub signs it; it runs once, within 30 min)'
            : 'deny the command a task waits on: the task is REJECTED',
        )
        .argument('<task-id>')
        .option('--note <text>', 'why, for the history')
        .option('--admin-token <token>', 'an admin token instead of a runtime token (with --team)')
        .option('--team <team>', "the task's team (with an admin token)")
        .addHelpText('after', `\nSee what it would run first: ctxbus task <task-id>`),
    ).action((id: string, options: Connection & { note?: string }) =>
      run(async () => {
        const { client, team } = connect(options);
        const task = await client.decideTask(id, decision, {
          ...(options.note !== undefined && { note: options.note }),
          ...(team !== undefined && { team }),
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
