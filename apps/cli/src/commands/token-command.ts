import { CtxbusError } from '@ctxbus/core/light';
import type { Command } from 'commander';
import { printJson, printLine } from '../output.js';
import type { TargetOptions } from './token.js';

// `ctxbus token`: the command and its options; what it does (token.ts) loads when it runs.

function addTargetOptions(command: Command): Command {
  return command
    .option(
      '--url <url>',
      'a running hub (default: $CTXBUS_URL, else the hub saved by ctxbus serve); without one, the data directory is used',
    )
    .option(
      '--admin-token <token>',
      'admin token for the hub (default: $CTXBUS_ADMIN_TOKEN, else the one saved by ctxbus serve)',
    )
    .option(
      '-d, --data <dir>',
      'data directory to open when no hub runs (default: $CTXBUS_DATA or the per-user one)',
    )
    .option('--store <url>', 'a PostgreSQL store to open directly (default: $CTXBUS_STORE)')
    .option('--json', 'print JSON');
}

export function registerToken(
  program: Command,
  run: (action: () => Promise<void>) => Promise<void>,
) {
  const token = program
    .command('token')
    .description(
      'create, list and revoke tokens (against a hub with --url, or directly on the store)',
    );

  addTargetOptions(
    token
      .command('create')
      .description('mint a token and print it alone on stdout (the hub keeps only its hash)')
      .option(
        '--team <team>',
        "team the token belongs to (default with a hub: the team this machine's saved tokens act in, as ctxbus connect wired them, else your user name)",
      )
      .option('--runtime <runtime>', 'runtime the token acts as (claude-code, openclaw, web, ...)')
      .option('--label <label>', 'a note to recognise it by')
      .option('--admin', 'mint an admin token instead (offline only; for recovery)')
      .option(
        '--save',
        "keep the token in this machine's credentials for its runtime (a worker's or the Telegram bot's); a cli token is also whom the CLI's own commands act as",
      )
      .option('--as-cli', "with --save: the CLI's own commands act as this token too"),
  ).action(
    (
      options: TargetOptions & {
        team?: string;
        runtime?: string;
        label?: string;
        admin?: boolean;
        save?: boolean;
        asCli?: boolean;
      },
    ) =>
      run(async () => {
        const {
          defaultTeam,
          offline,
          hubCredentials,
          parseOrThrow,
          runtimeNameSchema,
          saveRuntimeToken,
          target,
          teamIdSchema,
        } = await import('./token.js');
        const where = target(options);
        if (options.admin) {
          if (where.kind === 'online') {
            throw new CtxbusError(
              'validation_failed',
              '--admin works offline only: pass --data (with the hub stopped) or --store',
            );
          }
          const minted = await (await offline()).createOffline(where.store, {
            role: 'admin',
            teamId: null,
            runtime: null,
            label: options.label ?? null,
          });
          if (options.json) printJson(minted);
          else printLine(minted.token);
          return;
        }
        if (!options.runtime) {
          throw new CtxbusError('validation_failed', 'token create needs --runtime (or --admin)');
        }
        if (!options.team && where.kind !== 'online') {
          throw new CtxbusError(
            'validation_failed',
            'token create on the store needs --team (a hub gives the team its runtimes act in)',
          );
        }
        const team = options.team ?? (where.kind === 'online' ? defaultTeam(where.url) : '');
        const teamId = parseOrThrow(teamIdSchema, team, '--team');
        const runtime = parseOrThrow(runtimeNameSchema, options.runtime, '--runtime');
        const created =
          where.kind === 'online'
            ? await where.client.createToken({
                teamId,
                runtime,
                ...(options.label && { label: options.label }),
              })
            : await (await offline()).createOffline(where.store, {
                role: 'runtime',
                teamId,
                runtime,
                label: options.label ?? null,
              });
        if (options.asCli && !options.save) {
          throw new CtxbusError('validation_failed', '--as-cli goes with --save');
        }
        if (options.save) {
          if (where.kind !== 'online') {
            throw new CtxbusError(
              'validation_failed',
              '--save needs a running hub (--url, $CTXBUS_URL or the one ctxbus serve saved): the token is saved for its URL',
            );
          }
          const saved = saveRuntimeToken(
            where.url,
            { token: created.token, teamId, runtime },
            { asCli: options.asCli === true },
          );
          const cli = hubCredentials(where.url);
          process.stderr.write(
            saved.cli
              ? `saved for ${where.url} in ${saved.path}: the CLI's own commands act as ${teamId}/${runtime}${saved.replaced ? ` (they acted as ${saved.replaced})` : ''}\n`
              : `saved for ${where.url} in ${saved.path} as ${runtime}'s token (ctxbus worker, ctxbus telegram); the CLI's own commands ${cli.token ? `still act as ${cli.teamId}/${cli.runtime}` : 'act as no one yet: save a cli token, or add --as-cli'}\n`,
          );
          const { identities, teamMismatch } = await import('./whoami.js');
          const mismatch = teamMismatch(identities(where.url));
          if (mismatch !== null) process.stderr.write(`note: ${mismatch}\n`);
        }
        if (options.json) printJson(created);
        else printLine(created.token);
      }),
  );

  addTargetOptions(
    token
      .command('list')
      .description('list tokens (never their secrets)')
      .option('--team <team>', 'only this team')
      .option('--all', 'include revoked tokens'),
  ).action((options: TargetOptions & { team?: string; all?: boolean }) =>
    run(async () => {
      const { offline, target, tokenRow } = await import('./token.js');
      const where = target(options);
      const params = {
        ...(options.team && { team: options.team }),
        includeRevoked: options.all === true,
      };
      const tokens =
        where.kind === 'online'
          ? await where.client.listTokens(params)
          : await (await offline()).listOffline(where.store, {
              ...(options.team && { teamId: options.team }),
              includeRevoked: options.all === true,
            });
      if (options.json) printJson({ tokens });
      else if (tokens.length === 0) printLine('no tokens');
      else for (const info of tokens) printLine(tokenRow(info));
    }),
  );

  addTargetOptions(
    token
      .command('revoke')
      .description('revoke a token by id')
      .argument('<id>', 'token id (tok_...)'),
  ).action((id: string, options: TargetOptions) =>
    run(async () => {
      const { offline, target } = await import('./token.js');
      const where = target(options);
      const revoked =
        where.kind === 'online'
          ? await where.client.revokeToken(id)
          : await (await offline()).revokeOffline(where.store, id);
      if (options.json) printJson({ token: revoked });
      else printLine(`revoked ${revoked.id}`);
    }),
  );
}
