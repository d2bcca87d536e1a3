import { CtxbusError } from '@ctxbus/core';

type PgModule = typeof import('pg').default;

/**
 * The `pg` driver, loaded when a PostgreSQL store opens: it is an optional peer of
 * @ctxbus/store, so a SQLite-only install pulls no PostgreSQL driver. Missing, it is a clear
 * `unavailable` error that says what to install, not a module-resolution stack.
 */
export async function loadPg(importer: () => Promise<{ default: PgModule }> = () => import('pg')) {
  try {
    return (await importer()).default;
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') throw error;
    throw new CtxbusError(
      'unavailable',
      'PostgreSQL support needs the pg package, which is not installed: run `npm install pg` beside @ctxbus/store (the ctxbus package includes it)',
      { cause: error },
    );
  }
}
