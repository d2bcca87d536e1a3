import { CtxbusError } from '@ctxbus/core/light';
import type { Command } from 'commander';
import { printJson, printLine } from '../output.js';
import { storeTarget } from '../store-target.js';

const MIGRATE_HELP = `
With --supabase (PostgreSQL only), the Supabase setup follows the migrations: row-level
security so that Supabase users read only the team-visible items of the teams in their JWT
claim app_metadata.ctxbus_teams, nothing else for Supabase's API roles, and the items table in
the supabase_realtime publication. Idempotent; run it again after every upgrade.
\`ctxbus supabase sql\` prints the same script for Supabase's SQL editor.

Examples:
  ctxbus migrate --store 'postgres://user@host:5432/db?schema=ctxbus'
  ctxbus migrate --supabase --store 'postgres://postgres.<ref>:<password>@aws-0-<region>.pooler.supabase.com:5432/postgres'
`;

export function registerMigrate(
  program: Command,
  run: (action: () => Promise<void>) => Promise<void>,
) {
  program
    .command('migrate')
    .description(
      'apply pending schema migrations to a data directory or a PostgreSQL store (serve also does this on start)',
    )
    .option('-d, --data <dir>', 'data directory (default: $CTXBUS_DATA or the per-user one)')
    .option(
      '--store <url>',
      'PostgreSQL: postgres://user@host:5432/db[?schema=name] (default: $CTXBUS_STORE)',
    )
    .option(
      '--supabase',
      'then apply the Supabase setup: row-level security by team, Realtime publication',
    )
    .option('--json', 'print what was done as JSON')
    .addHelpText('after', MIGRATE_HELP)
    .action((options: { data?: string; store?: string; supabase?: boolean; json?: boolean }) =>
      run(async () => {
        const target = storeTarget(options);
        if (options.supabase && target.kind !== 'postgres') {
          throw new CtxbusError(
            'validation_failed',
            '--supabase needs a PostgreSQL store: give --store postgres://... (or $CTXBUS_STORE)',
          );
        }
        if (target.kind === 'postgres') {
          const stores = await import('@ctxbus/store/postgres');
          const connection = {
            connectionString: target.connectionString,
            ...(target.schema && { schema: target.schema }),
          };
          const result = await stores.migratePostgres(connection);
          const supabase = options.supabase ? await stores.setupSupabase(connection) : undefined;
          if (options.json) {
            printJson(supabase ? { ...result, supabase } : result);
            return;
          }
          if (result.applied.length === 0)
            printLine(`${result.location} is at schema version ${result.to} (nothing to do)`);
          else {
            const names = result.applied.map((step) => `${step.version} ${step.name}`).join(', ');
            printLine(
              `${result.location}: schema version ${result.from} -> ${result.to} (${names})`,
            );
          }
          printLine(
            result.vectors.vectorIndex === 'pgvector'
              ? `vector search: pgvector${result.vectors.created ? ' (extension created)' : ''}`
              : `vector search: exact scan (${result.vectors.reason ?? 'no pgvector'})`,
          );
          if (supabase) {
            const was = supabase.from === 0 ? 'first time' : `was ${supabase.from}`;
            printLine(
              `${supabase.location}: Supabase setup version ${supabase.to} applied (${was}): row-level security by team, items in the ${supabase.publication} publication`,
            );
          }
          return;
        }
        const { assertNoHub, databasePath } = await import('../data-dir.js');
        // A serving hub migrated its database when it started.
        assertNoHub(
          target.dataDir,
          'it migrated the database when it started (stop it to migrate here)',
        );
        const stores = await import('@ctxbus/store');
        const store = stores.openSqliteStore({ path: databasePath(target.dataDir) });
        await store.close();
        const path = databasePath(target.dataDir);
        if (options.json) printJson({ location: path, to: stores.SQLITE_SCHEMA_VERSION });
        else printLine(`${path} is at schema version ${stores.SQLITE_SCHEMA_VERSION}`);
      }),
    );
}
