import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { DEFAULT_POSTGRES_SCHEMA, describeLocation } from '../postgres/postgres-connection.js';

// The PostgreSQL server the tests and measurement scripts use, and throw-away schemas on it.

/** Tried in order when CTXBUS_TEST_POSTGRES_URL is not set: the local server's `test` database. */
const DEFAULT_URLS = [
  'postgres://postgres@127.0.0.1:5432/test',
  // The OS user's role (libpq's default), for servers without a `postgres` role.
  'postgres://127.0.0.1:5432/test',
];

export type ServerProbe = { url: string } | { url: null; tried: string; reason: string };

/** The first URL that answers `SELECT 1`, or why none did. */
export async function probePostgres(): Promise<ServerProbe> {
  const configured = process.env.CTXBUS_TEST_POSTGRES_URL;
  const urls = configured ? [configured] : DEFAULT_URLS;
  let reason = 'no URL to try';
  for (const url of urls) {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
    try {
      await client.connect();
      await client.query('SELECT 1');
      return { url };
    } catch (error) {
      reason = error instanceof Error ? error.message || error.name : String(error);
    } finally {
      await client.end().catch(() => {});
    }
  }
  // Never a password in a test name or a log.
  const tried = urls
    .map((url) => describeLocation({ connectionString: url }, DEFAULT_POSTGRES_SCHEMA))
    .join(' and ');
  return { url: null, tried, reason };
}

/** Whether a missing server must fail the run rather than skip it. */
export function postgresRequired(): boolean {
  return process.env.CI === 'true' || process.env.CTXBUS_REQUIRE_POSTGRES === '1';
}

/** Unique schema names for one test run, dropped together at the end. */
export class ScratchSchemas {
  private readonly prefix = `ctxbus_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  private readonly created: string[] = [];
  private readonly url: string;

  constructor(url: string) {
    this.url = url;
  }

  next(label = 's'): string {
    const name = `${this.prefix}_${label}${this.created.length}`;
    this.created.push(name);
    return name;
  }

  async dropAll(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url });
    await client.connect();
    try {
      for (const name of this.created)
        await client.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
    } finally {
      await client.end();
    }
  }
}
