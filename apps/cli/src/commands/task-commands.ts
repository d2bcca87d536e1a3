import type { Task } from '@ctxbus/core/contract';
import { CtxbusError, TASK_STATES } from '@ctxbus/core/light';
import type { Command } from 'commander';
import { printJson, printLine } from '../output.js';
import type { DelegateOptions } from './delegate.js';
import { CONFIRM_CHARS, noTerminalReason } from './task-confirm.js';
import type { Connection } from './tasks.js';

// `ctxbus task ...`: the commands; tasks.ts (the hub client) loads when one runs.

function withConnection(command: Command): Command {
  return command
    .option('--url <url>', 'hub URL (default: $CTXBUS_URL, else the hub saved by ctxbus serve)')
    .option('--token <token>', 'runtime token (default: $CTXBUS_TOKEN, else the saved one)')
    .option('--json', 'print JSON');
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
      .option('--limit <n>', 'at most this many (1-200)', '50'),
  ).action(
    (options: { url?: string; token?: string; json?: boolean; state?: string; limit: string }) =>
      run(async () => {
        const { connect, taskLine } = await import('./tasks.js');
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
        else if (page.tasks.length === 0) {
          printLine(states ? `no tasks ${states.join(', ')}` : 'no tasks');
        } else for (const task of page.tasks) printLine(taskLine(task));
      }),
  );

  withConnection(
    program
      .command('task')
      .description('one task: its state, routing, result and history')
      .argument('<id>'),
  ).action((id: string, options: Connection) =>
    run(async () => {
      const { approvalLines, connect, oneLine, taskLine } = await import('./tasks.js');
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
          `  ${event.at}  ${event.from ?? '-'} -> ${event.to}  by ${event.by}${event.note ? `: ${oneLine(event.note)}` : ''}`,
        );
      }
    }),
  );

  withConnection(
    program
      .command('delegate')
      .description(
        'hand a command to the runtime that can run it (a task the hub routes), follow it to its end and print its output; Ctrl-C cancels it',
      )
      .argument('<command...>', 'the command and its arguments, after -- (no shell)')
      .option('--cwd <dir>', 'the directory to run it in, on the worker (default: this one)')
      .option('--title <text>', "the task's title (default: the command)")
      .option('--to <runtime>', 'prefer this runtime (the router may still pick another)')
      .option('--network', 'the command needs the network')
      .option(
        '--key <key>',
        'an idempotency key: the same command again with it finds the same task (another command with it is refused)',
      )
      .option('--no-wait', 'print the task and its routing, and do not follow it')
      .option('--live', 'show the output while the command runs (default on a terminal)')
      .option('--no-live', 'print the output once, at the end, both streams apart')
      .addHelpText(
        'after',
        `
The worker's own capabilities.yaml decides (deny by default): a command outside its
allow-list waits for a person to approve it (ctxbus approve TASK at a terminal with an
approver token, Telegram or the dashboard), never for the runtime that asked. So does every
command from a runtime the hub's capabilities.yaml does not declare: the CLI's own token
(runtime cli) waits unless the file names cli.
Output: on a terminal (or with --live) it is shown as it comes, both streams together, about
once a second; otherwise it is printed at the end, stdout and stderr apart, as the worker kept
it. Either way the task's result keeps it (ctxbus task ID).
Exit: 0 when the command completed, 1 when the task failed, was refused, rejected or canceled
(one line says why).

Examples:
  ctxbus delegate -- npm test
  ctxbus delegate --cwd ~/projects/app --to claude-code -- pytest -q
  ctxbus delegate --no-wait --json -- make build`,
      ),
  ).action((argv: string[], options: Connection & Omit<DelegateOptions, keyof Connection>) =>
    run(async () => {
      const { delegate } = await import('./delegate.js');
      await delegate(argv, options);
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
        .option(
          '--team <team>',
          "the task's team, answering with an admin token (--admin-token, else $CTXBUS_ADMIN_TOKEN or the saved one)",
        )
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
        const { approvalLines, confirmAtTerminal, connect, mayDecide, taskLine } = await import(
          './tasks.js'
        );
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
          await mayDecide(client, id, team);
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
