import { CtxbusError } from '@ctxbus/core/light';
import type { Command } from 'commander';
import { printJson, printLine } from '../output.js';
import type { Connection } from './conflicts.js';
import { noTerminalReason } from './task-confirm.js';

// `ctxbus conflicts`: keys two runtimes wrote with different values within the hub's conflict
// window (the newer value holds the key: last-write-wins), and `ctxbus conflicts resolve ID
// --keep ITEM`: a person keeps one of the two values. Only people pick: the hub accepts a token
// of an approver runtime (capabilities.yaml `approvers`, default cli, telegram, web) or an admin
// token with --team, and refuses an agent's token (403, audited). conflicts.ts (the hub client)
// loads when one runs.

function withConnection(command: Command): Command {
  return command
    .option('--url <url>', 'hub URL (default: $CTXBUS_URL, else the hub saved by ctxbus serve)')
    .option('--token <token>', 'runtime token (default: $CTXBUS_TOKEN, else the saved one)')
    .option('--json', 'print JSON');
}

export function registerConflictCommands(
  program: Command,
  run: (action: () => Promise<void>) => Promise<void>,
) {
  const conflicts = withConnection(
    program
      .command('conflicts')
      .description(
        'keys two runtimes wrote with different values within the conflict window; resolve: keep one',
      )
      .option('--all', 'also the resolved ones')
      .option('--limit <n>', 'at most this many conflict items read', '50'),
  ).action((options: Connection & { all?: boolean; limit: string }) =>
    run(async () => {
      const limit = Number(options.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 200) {
        throw new CtxbusError('validation_failed', '--limit must be an integer from 1 to 200');
      }
      const { connect, conflictLines } = await import('./conflicts.js');
      const { client } = connect(options, false);
      const list = await client.conflicts({ status: options.all ? 'all' : 'open', limit });
      if (options.json) printJson({ conflicts: list });
      else if (list.length === 0) printLine(options.all ? 'No conflicts.' : 'No open conflicts.');
      else for (const conflict of list) for (const line of conflictLines(conflict)) printLine(line);
    }),
  );
  withConnection(
    conflicts
      .command('resolve')
      .description(
        'keep one of the two values of a conflict, at a terminal (people only: cli, telegram, web, or an admin token)',
      )
      .argument('<id>', 'the conflict item id (ctxbus conflicts)')
      .requiredOption('--keep <item>', 'the item id of the value to keep')
      .option('--note <text>', 'why (kept with the resolution)')
      .option('--admin-token <token>', 'decide with an admin token (needs --team)')
      .option('--team <team>', 'the team (with --admin-token)')
      .addHelpText(
        'after',
        `
Only a person at a terminal: it shows both values and keeps one once you type the last 6
characters of its item id (an agent's shell has no terminal; Telegram's Keep buttons and the
dashboard are the other ways).`,
      ),
  ).action((id: string, _own: Connection, command: Command) =>
    run(async () => {
      // `conflicts` takes the same connection options: whichever of the two parsed them.
      const options = command.optsWithGlobals() as Connection & { keep: string; note?: string };
      const why = noTerminalReason(
        process.stdin.isTTY === true,
        process.stdout.isTTY === true,
        'ctxbus conflicts resolve',
      );
      if (why) throw new CtxbusError('validation_failed', why);
      const { confirmKeep, connect } = await import('./conflicts.js');
      const { client, team } = connect(options, true);
      const found = (await client.conflicts({ status: 'all', limit: 200 })).find(
        (conflict) => conflict.id === id,
      );
      await confirmKeep(id, found, options.keep);
      const answer = await client.resolveConflict(id, {
        keep: options.keep,
        ...(options.note !== undefined && { note: options.note }),
        ...(team !== undefined && { team }),
      });
      if (options.json) printJson(answer);
      else {
        printLine(
          `Kept ${options.keep} as ${answer.conflict.key} (${answer.kept.id === options.keep ? 'it held the key' : `restored as ${answer.kept.id}`}); conflict ${id} resolved.`,
        );
      }
    }),
  );
}
