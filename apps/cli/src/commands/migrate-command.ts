import type { Command } from 'commander';
import { assertNoHub, databasePath, defaultDataDir } from '../data-dir.js';
import { printLine } from '../output.js';

export function registerMigrate(
  program: Command,
  run: (action: () => Promise<void>) => Promise<void>,
) {
  program
    .command('migrate')
    .description(
      'apply pending schema migrations to a data directory (serve also does this on start)',
    )
    .option('-d, --data <dir>', 'data directory (default: $CTXBUS_DATA or the per-user one)')
    .action((options: { data?: string }) =>
      run(async () => {
        const dataDir = options.data ?? defaultDataDir();
        assertNoHub(dataDir);
        const { openSqliteStore, SQLITE_SCHEMA_VERSION } = await import('@ctxbus/store');
        const store = openSqliteStore({ path: databasePath(dataDir) });
        await store.close();
        printLine(`${databasePath(dataDir)} is at schema version ${SQLITE_SCHEMA_VERSION}`);
      }),
    );
}
