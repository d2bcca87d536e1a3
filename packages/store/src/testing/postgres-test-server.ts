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

/**
 * Migrated scratch schemas used again, for test files that want a fresh, empty store per test
 * (the conformance cases). Creating and migrating a schema costs the server about half a
 * second, and dropping it another quarter; emptying a migrated one costs milliseconds: every
 * table emptied, its identities restarted, and the rows a migration leaves (the counter, the
 * relay's cursor) copied from a schema migrated once and never opened; then a VACUUM, so that the dead rows
 * of earlier tests weigh on no scan. A schema is used again
 * only after every store opened on it was closed, and only after the test that used it
 * (`recycle()`, from the file's `afterEach`): within a test each `open` is a schema of its own.
 */
export class ReusedSchemas {
  private readonly schemas: ScratchSchemas;
  private readonly url: string;
  private readonly migrate: (schema: string) => Promise<void>;
  /** Stores open on each schema handed out. */
  private readonly openStores = new Map<string, number>();
  private readonly free: string[] = [];
  private emptying: Promise<string> | null = null;
  private tables: string[] = [];

  /** `migrate` brings a new schema to the code's version (`migratePostgres`). */
  constructor(schemas: ScratchSchemas, url: string, migrate: (schema: string) => Promise<void>) {
    this.schemas = schemas;
    this.url = url;
    this.migrate = migrate;
  }

  /** Opens a store (`openOn`) on an empty, migrated schema: a recycled one, else a new one. */
  async open<S extends { close(): Promise<void> }>(
    openOn: (schema: string) => Promise<S>,
  ): Promise<S> {
    const reused = this.free.pop();
    if (reused !== undefined) await this.empty(reused);
    const schema = reused ?? this.schemas.next();
    return this.track(schema, await openOn(schema));
  }

  /** Counts `store` as open on `schema` until its `close()` (a reopened or sibling store). */
  track<S extends { close(): Promise<void> }>(schema: string, store: S): S {
    this.openStores.set(schema, (this.openStores.get(schema) ?? 0) + 1);
    const close = store.close.bind(store);
    let counted = true;
    store.close = async () => {
      await close();
      if (!counted) return;
      counted = false;
      this.openStores.set(schema, (this.openStores.get(schema) ?? 1) - 1);
    };
    return store;
  }

  /** Makes the schemas whose stores are all closed available again (call after each test). */
  recycle(): void {
    for (const [schema, open] of this.openStores) {
      if (open > 0) continue;
      this.openStores.delete(schema);
      this.free.push(schema);
    }
  }

  /** The SQL that empties a schema, from the pristine one (migrated once, never opened). */
  private emptyingSql(): Promise<string> {
    this.emptying ??= (async () => {
      const pristine = this.schemas.next('pristine');
      await this.migrate(pristine);
      const client = new pg.Client({ connectionString: this.url });
      await client.connect();
      try {
        const tables = await client.query<{ name: string }>(
          `SELECT tablename AS name FROM pg_tables
            WHERE schemaname = $1 AND tablename <> 'schema_migrations' ORDER BY tablename`,
          [pristine],
        );
        const sequences = await client.query<{ name: string }>(
          'SELECT sequencename AS name FROM pg_sequences WHERE schemaname = $1',
          [pristine],
        );
        this.tables = tables.rows.map(({ name }) => name);
        const seeded: string[] = [];
        for (const { name } of tables.rows) {
          const rows = await client.query(`SELECT 1 FROM "${pristine}"."${name}" LIMIT 1`);
          if (rows.rowCount) seeded.push(name);
        }
        return [
          'BEGIN',
          ...tables.rows.map(({ name }) => `DELETE FROM "{schema}"."${name}"`),
          ...sequences.rows.map(({ name }) => `ALTER SEQUENCE "{schema}"."${name}" RESTART`),
          ...seeded.map(
            (name) =>
              `INSERT INTO "{schema}"."${name}" OVERRIDING SYSTEM VALUE SELECT * FROM "${pristine}"."${name}"`,
          ),
          'COMMIT',
        ].join(';\n');
      } finally {
        await client.end();
      }
    })();
    return this.emptying;
  }

  private async empty(schema: string): Promise<void> {
    const sql = (await this.emptyingSql()).replaceAll('{schema}', schema);
    const client = new pg.Client({ connectionString: this.url });
    await client.connect();
    try {
      await client.query(sql);
      // Without it the dead rows of earlier tests stay in every scan and index of the next.
      await client.query(`VACUUM ${this.tables.map((name) => `"${schema}"."${name}"`).join(', ')}`);
    } finally {
      await client.end();
    }
  }
}
