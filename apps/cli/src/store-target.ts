import { existsSync } from 'node:fs';
import { makeDirectory } from '@ctxbus/client/files';
import { CtxbusError } from '@ctxbus/core/light';
import type { Store } from '@ctxbus/store';
import { assertNoHub, databasePath, defaultDataDir } from './data-dir.js';

/** Where a command's store lives: the embedded database in a data directory, or PostgreSQL. */
export type StoreTarget =
  | { kind: 'sqlite'; dataDir: string }
  | { kind: 'postgres'; connectionString: string; schema?: string; display: string };

/**
 * `--store` (or $CTXBUS_STORE) names a PostgreSQL database (`postgres://user@host:5432/db`, with
 * `?schema=name` to pick the schema); without it the embedded store in `--data` is used.
 */
export function storeTarget(
  options: { store?: string; data?: string },
  env: NodeJS.ProcessEnv = process.env,
): StoreTarget {
  if (options.store && options.data) {
    throw new CtxbusError('validation_failed', 'give --store or --data, not both');
  }
  // An explicit --data wins over $CTXBUS_STORE.
  const store = options.store ?? (options.data ? undefined : env.CTXBUS_STORE);
  if (!store) return { kind: 'sqlite', dataDir: options.data ?? defaultDataDir(env) };
  let url: URL;
  try {
    url = new URL(store);
  } catch {
    throw new CtxbusError(
      'validation_failed',
      `--store must be a postgres:// URL (got "${store}")`,
    );
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new CtxbusError(
      'validation_failed',
      `--store must be a postgres:// URL (got ${url.protocol}//...)`,
    );
  }
  const schema = url.searchParams.get('schema') ?? undefined;
  url.searchParams.delete('schema');
  // As the store describes itself: no password, ever.
  const user = url.username ? `${url.username}@` : '';
  const display = `postgres://${user}${url.host}${url.pathname}${schema ? `?schema=${schema}` : ''}`;
  return { kind: 'postgres', connectionString: url.toString(), display, ...(schema && { schema }) };
}

/** Opens the target's store. `migrate`: apply pending migrations (PostgreSQL only asks). */
export async function openStore(
  target: StoreTarget,
  options: { migrate: boolean },
): Promise<Store> {
  if (target.kind === 'sqlite') {
    const { openSqliteStore } = await import('@ctxbus/store');
    return openSqliteStore({ path: databasePath(target.dataDir) });
  }
  const { openPostgresStore } = await import('@ctxbus/store/postgres');
  return openPostgresStore({
    connectionString: target.connectionString,
    migrate: options.migrate,
    ...(target.schema && { schema: target.schema }),
  });
}

/** Opens a store for an offline command: a data directory a hub holds is refused. */
export async function withOfflineStore<T>(
  target: StoreTarget,
  work: (store: Store) => Promise<T>,
): Promise<T> {
  if (target.kind === 'sqlite') {
    assertNoHub(target.dataDir);
    makeDataDirectory(target.dataDir);
  }
  const store = await openStore(target, { migrate: target.kind === 'sqlite' });
  try {
    return await work(store);
  } finally {
    await store.close();
  }
}

export function describeTarget(target: StoreTarget): string {
  return target.kind === 'sqlite'
    ? `${databasePath(target.dataDir)} (embedded SQLite)`
    : `${target.display} (PostgreSQL)`;
}

/** The data directory made (0700), or why it cannot be, as one error. */
function makeDataDirectory(dataDir: string): void {
  try {
    makeDirectory(dataDir, 0o700);
  } catch (error) {
    throw new CtxbusError(
      'internal',
      `cannot use the data directory ${dataDir}: ${(error as Error).message}`,
      { retryable: false },
    );
  }
}

/** A list, a revoke or an audit check reads a store that exists: a mistyped --data makes none. */
export function assertStoreExists(target: StoreTarget): void {
  if (target.kind === 'sqlite' && !existsSync(databasePath(target.dataDir))) {
    throw new CtxbusError(
      'not_found',
      `no ctxbus database in ${target.dataDir} (${databasePath(target.dataDir)}): check --data`,
    );
  }
}
