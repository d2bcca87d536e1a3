import type { Command } from 'commander';
import { printLine } from '../output.js';

// `ctxbus supabase ...`: what a Supabase deployment needs that the hub does not do itself.

const SQL_HELP = `
Prints the Supabase setup for a ctxbus schema, to paste into Supabase's SQL editor (or pipe to
psql) after the hub has created its tables. \`ctxbus migrate --store <url> --supabase\` applies
the same script directly. It refuses a database without Supabase's roles and auth.jwt().

Supabase users read, through the Data API and Realtime, the items of the teams in their JWT
claim app_metadata.ctxbus_teams (e.g. ["acme"]; set it with the admin API or an auth hook),
only those visible to the whole team and not expired. Private items and every other table
stay invisible, and nobody writes through Supabase: writes go through the hub.

Example:
  ctxbus supabase sql --schema ctxbus > ctxbus-supabase.sql
`;

export function registerSupabase(
  program: Command,
  run: (action: () => Promise<void>) => Promise<void>,
) {
  const supabase = program
    .command('supabase')
    .description('Supabase deployments: the setup script for row-level security and Realtime');
  supabase
    .command('sql')
    .description('print the Supabase setup SQL for a ctxbus schema (for the SQL editor)')
    .option('--schema <name>', 'the ctxbus schema (default: ctxbus)')
    .option('--publication <name>', 'the Realtime publication (default: supabase_realtime)')
    .addHelpText('after', SQL_HELP)
    .action((options: { schema?: string; publication?: string }) =>
      run(async () => {
        const { supabaseSetupSql } = await import('@ctxbus/store/postgres');
        printLine(
          supabaseSetupSql(options.schema, {
            ...(options.publication !== undefined && { publication: options.publication }),
          }).trimEnd(),
        );
      }),
    );
}
