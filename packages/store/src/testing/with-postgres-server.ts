import { it } from 'vitest';
import { postgresRequired, probePostgres } from './postgres-test-server.js';

/**
 * Defines `define(url)`'s tests when a PostgreSQL server answers. Without one they are skipped
 * with the reason printed, unless CI=true or CTXBUS_REQUIRE_POSTGRES=1: then a failing test
 * says why (CI must never skip them silently).
 */
export async function withPostgresServer(
  name: string,
  define: (url: string) => void | Promise<void>,
): Promise<void> {
  const server = await probePostgres();
  if (server.url !== null) {
    await define(server.url);
    return;
  }
  const why = `no PostgreSQL at ${server.tried} (${server.reason}); set CTXBUS_TEST_POSTGRES_URL`;
  if (postgresRequired()) {
    it(`${name}: a PostgreSQL server is required (CI=true or CTXBUS_REQUIRE_POSTGRES=1)`, () => {
      throw new Error(`${name} cannot run: ${why}`);
    });
  } else {
    it.skip(`${name} (skipped: ${why}, or CTXBUS_REQUIRE_POSTGRES=1 to fail instead)`, () => {});
  }
}
