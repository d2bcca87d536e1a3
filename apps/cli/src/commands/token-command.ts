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
      .option('--team <team>', 'team the token belongs to')
      .option('--runtime <runtime>', 'runtime the token acts as (claude-code, openclaw, web, ...)')
      .option('--label <label>', 'a note to recognise it by')
      .option('--admin', 'mint an admin token instead (offline only; for recovery)')
      .option(
        '--save',
        "keep the token in this machine's credentials: the CLI's own commands then use it for this hub",
      ),
  ).action(
    (
      options: TargetOptions & {
        team?: string;
        runtime?: string;
        label?: string;
        admin?: boolean;
        save?: boolean;
      },
    ) =>
      run(async () => {
        const {
          offline,
          parseOrThrow,
          runtimeNameSchema,
          saveHubCredentials,
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
        if (!options.team || !options.runtime) {
          throw new CtxbusError(
            'validation_failed',
            'token create needs --team and --runtime (or --admin)',
          );
        }
        const teamId = parseOrThrow(teamIdSchema, options.team, '--team');
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
        if (options.save) {
          if (where.kind !== 'online') {
            throw new CtxbusError(
              'validation_failed',
              '--save needs a running hub (--url, $CTXBUS_URL or the one ctxbus serve saved): the token is saved for its URL',
            );
          }
          const path = saveHubCredentials(where.url, { token: created.token, teamId, runtime });
          process.stderr.write(
            `saved for ${where.url} in ${path}: write, read, search, shared and watch use it\n`,
          );
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
