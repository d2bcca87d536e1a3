// Support for the store-level measurement scripts (measure-*.ts), which run by hand with Node
// against the built packages, outside the test suite and `./dev bench`.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Store } from '@ctxbus/store';
import { openSqliteStore } from '@ctxbus/store';
import { openPostgresStore } from '@ctxbus/store/postgres';
import { probePostgres, ScratchSchemas } from '@ctxbus/store/testing';

// A closed stdout (`| head`) must not end the script before it drops its scratch schema.
process.stdout.on('error', () => {});

/** One line of a measurement report, on stdout. */
export function report(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** Runs `measure` on a fresh SQLite store in a temporary directory, removed afterwards. */
export async function onSqlite(measure: (store: Store) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'ctxbus-measure-'));
  const store = openSqliteStore({ path: join(dir, 'ctxbus.db') });
  try {
    await measure(store);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs `measure` on a PostgreSQL store in a scratch schema, dropped afterwards. */
export async function onPostgres(
  schema: string,
  measure: (store: Store) => Promise<void>,
): Promise<void> {
  const server = await probePostgres();
  if (server.url === null) {
    report(`no PostgreSQL at ${server.tried}: ${server.reason}`);
    process.exit(1);
  }
  const schemas = new ScratchSchemas(server.url);
  const store = await openPostgresStore({
    connectionString: server.url,
    schema: schemas.next(schema),
  });
  try {
    await measure(store);
  } finally {
    await store.close();
    await schemas.dropAll();
  }
}
