import { createClient } from '@ctxbus/client';
import type { ConflictView } from '@ctxbus/core/contract';
import { CtxbusError } from '@ctxbus/core/contract';
import type { Command } from 'commander';
import { hubCredentials } from '../credentials.js';
import { findAdminToken, hubUrl } from '../hub-target.js';
import { printJson, printLine } from '../output.js';

// `ctxbus conflicts`: keys two runtimes wrote with different values within the hub's conflict
// window (the newer value holds the key: last-write-wins), and `ctxbus conflicts resolve ID
// --keep ITEM`: a person keeps one of the two values. Only people pick: the hub accepts a token
// of an approver runtime (capabilities.yaml `approvers`, default cli, telegram, web) or an admin
// token with --team, and refuses an agent's token (403, audited).

interface Connection {
  url?: string;
  token?: string;
  adminToken?: string;
  team?: string;
  json?: boolean;
}

/**
 * --token, else (to resolve) $CTXBUS_APPROVER_TOKEN, else $CTXBUS_TOKEN or the saved runtime
 * token, else the admin token with --team.
 */
function connect(options: Connection, deciding: boolean) {
  const url = hubUrl(options.url);
  const runtime =
    options.token ||
    (deciding ? process.env.CTXBUS_APPROVER_TOKEN : undefined) ||
    (options.adminToken ? undefined : process.env.CTXBUS_TOKEN || hubCredentials(url).token);
  if (runtime) return { client: createClient({ url, token: runtime }), team: undefined };
  const admin = findAdminToken(url, options.adminToken);
  if (!deciding || !admin) {
    throw new CtxbusError(
      'validation_failed',
      `no runtime token for ${url}: pass --token${deciding ? ' (or --admin-token with --team)' : ''}`,
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

export function conflictLines(conflict: ConflictView): string[] {
  const [older, newer] = conflict.values;
  const head = `${conflict.id}  ${conflict.status.padEnd(8)} ${conflict.key}  (${conflict.raisedAt})`;
  const kept = conflict.resolution?.keep;
  const mark = (id: string, holds: boolean) =>
    kept === id ? '  [kept]' : kept === undefined && holds ? '  [holds the key]' : '';
  return [
    head,
    `  1. ${older.id}  ${older.runtime}: ${older.title}${mark(older.id, false)}`,
    `  2. ${newer.id}  ${newer.runtime}: ${newer.title}${mark(newer.id, true)}`,
    ...(conflict.resolution
      ? [`  resolved by ${conflict.resolution.by} at ${conflict.resolution.at}`]
      : []),
  ];
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
        'keep one of the two values of a conflict (people only: cli, telegram, web, or an admin token)',
      )
      .argument('<id>', 'the conflict item id (ctxbus conflicts)')
      .requiredOption('--keep <item>', 'the item id of the value to keep')
      .option('--note <text>', 'why (kept with the resolution)')
      .option('--admin-token <token>', 'decide with an admin token (needs --team)')
      .option('--team <team>', 'the team (with --admin-token)'),
  ).action((id: string, _own: Connection, command: Command) =>
    run(async () => {
      // `conflicts` takes the same connection options: whichever of the two parsed them.
      const options = command.optsWithGlobals() as Connection & { keep: string; note?: string };
      const { client, team } = connect(options, true);
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
