import type { Command } from 'commander';
import { printJson, printLine } from '../output.js';
import { storeTarget } from '../store-target.js';

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
    .option('--json', 'print what was done as JSON')
    .action((options: { data?: string; store?: string; json?: boolean }) =>
      run(async () => {
        const target = storeTarget(options);
        const stores = await import('@ctxbus/store');
        if (target.kind === 'postgres') {
          const result = await stores.migratePostgres({
            connectionString: target.connectionString,
            ...(target.schema && { schema: target.schema }),
          });
          if (options.json) printJson(result);
          else if (result.applied.length === 0)
            printLine(`${result.location} is at schema version ${result.to} (nothing to do)`);
          else {
            const names = result.applied.map((step) => `${step.version} ${step.name}`).join(', ');
            printLine(
              `${result.location}: schema version ${result.from} -> ${result.to} (${names})`,
            );
          }
          return;
        }
        const { assertNoHub, databasePath } = await import('../data-dir.js');
        assertNoHub(target.dataDir);
        const store = stores.openSqliteStore({ path: databasePath(target.dataDir) });
        await store.close();
        const path = databasePath(target.dataDir);
        if (options.json) printJson({ location: path, to: stores.SQLITE_SCHEMA_VERSION });
        else printLine(`${path} is at schema version ${stores.SQLITE_SCHEMA_VERSION}`);
      }),
    );
}
