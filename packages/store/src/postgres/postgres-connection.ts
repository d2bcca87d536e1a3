import type { Logger } from '@ctxbus/core';
import { CtxbusError, silentLogger } from '@ctxbus/core';
import type { Pool, PoolConfig, QueryResultRow } from 'pg';
import { loadPg } from './load-pg.js';

/** The store logs through core's Logger (a subset of pino's); the name stays for callers. */
export type PostgresLogger = Logger;

/** Where the store lives: a connection string (the store owns the pool) or a pool of yours. */
export interface PostgresConnectionOptions {
  /** `postgres://user:password@host:port/database`; the store creates and closes its pool. */
  connectionString?: string;
  /** A pool you own (the store never ends it); for custom TLS, sizes or auth. */
  pool?: Pool;
  /** Schema holding ctxbus's tables (default `ctxbus`): several stores can share a database. */
  schema?: string;
  logger?: PostgresLogger;
}

export const DEFAULT_POSTGRES_SCHEMA = 'ctxbus';

const SCHEMA_RE = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * Refuses anything but a plain lowercase identifier, so that the name can be spliced into SQL
 * (quoted) without escaping. `field` names the option in the message.
 */
export function assertPlainName(name: string, field: string): void {
  if (!SCHEMA_RE.test(name)) {
    throw new CtxbusError(
      'validation_failed',
      `${field} ${JSON.stringify(name)} is not a plain PostgreSQL name (lowercase letters, digits and _, at most 63, not starting with a digit)`,
      { details: { field } },
    );
  }
}

/**
 * One statement through the store's pool, its failure a CtxbusError saying what was being done
 * (`action`); `prepared`: planned once per connection (named statement).
 */
export type PostgresQuery = <R extends QueryResultRow>(
  action: string,
  text: string,
  values?: unknown[],
  prepared?: boolean,
) => Promise<R[]>;

/** What every domain of the PostgreSQL store shares. */
export interface PostgresContext {
  /** The quoted schema, safe to splice into SQL. */
  s: string;
  location: string;
  clock: () => Date;
  query: PostgresQuery;
  /** Throws `unavailable` once the store is closed. */
  assertOpen(): void;
}

/** A live connection target: the pool, the quoted schema, and a password-free description. */
export interface PostgresTarget {
  pool: Pool;
  ownsPool: boolean;
  schema: string;
  /** `"schema"`, safe to splice into SQL (validated and quoted). */
  quotedSchema: string;
  /** The server and schema without credentials, for messages and `StoreInfo.location`. */
  location: string;
  logger: PostgresLogger;
}

/**
 * Checks the options and opens (or adopts) the pool; nothing is sent to the server yet. `pg`
 * is loaded here, on first use, so that importing @ctxbus/store for SQLite does not load it.
 */
export async function connectPostgres(options: PostgresConnectionOptions): Promise<PostgresTarget> {
  const schema = options.schema ?? DEFAULT_POSTGRES_SCHEMA;
  assertPlainName(schema, 'schema');
  const given = [options.connectionString, options.pool].filter((value) => value !== undefined);
  if (given.length !== 1) {
    throw new CtxbusError(
      'validation_failed',
      'give the PostgreSQL store either connectionString or pool (exactly one)',
      { details: { field: 'connectionString' } },
    );
  }
  const logger = options.logger ?? silentLogger;
  let pool: Pool;
  let ownsPool: boolean;
  let config: PoolConfig;
  if (options.pool) {
    pool = options.pool;
    ownsPool = false;
    config = (pool as unknown as { options?: PoolConfig }).options ?? {};
  } else {
    const connectionString = options.connectionString ?? '';
    if (!/^postgres(ql)?:\/\//.test(connectionString)) {
      throw new CtxbusError(
        'validation_failed',
        'a PostgreSQL connection string starts with postgres:// or postgresql://',
        { details: { field: 'connectionString' } },
      );
    }
    config = { connectionString, max: 10, application_name: 'ctxbus' };
    const pg = await loadPg();
    pool = new pg.Pool(config);
    ownsPool = true;
  }
  // An idle client's error (server restart, network) is emitted on the pool; unhandled, it
  // would end the process (a pool given to the store too). The next query gets a fresh one.
  pool.on('error', (error) => {
    logger.warn({ err: error }, 'postgres: idle connection failed');
  });
  // A checked-out client loses the pool's listener: one whose connection ends between its
  // queries (the server restarted, its backend terminated) emits an error nobody hears, which
  // ended the hub. Heard here; its next query fails (a retryable error) and the pool replaces it.
  pool.on('connect', (client) => {
    client.on('error', (error) => {
      logger.warn({ err: error }, 'postgres: a connection in use failed');
    });
  });
  return {
    pool,
    ownsPool,
    schema,
    quotedSchema: `"${schema}"`,
    location: describeLocation(config, schema),
    logger,
  };
}

/** `postgres://user@host:port/database` plus the schema; never a password. */
export function describeLocation(config: PoolConfig, schema: string): string {
  let user = config.user;
  let host = config.host;
  let port = config.port;
  let database = config.database;
  if (config.connectionString) {
    try {
      const url = new URL(config.connectionString);
      user ??= decodeURIComponent(url.username) || undefined;
      host ??= url.hostname || undefined;
      port ??= url.port ? Number(url.port) : undefined;
      database ??= decodeURIComponent(url.pathname.replace(/^\//, '')) || undefined;
    } catch {
      // A connection string pg accepts but URL does not: describe what we know.
    }
  }
  const server = `${host ?? 'localhost'}${port ? `:${port}` : ''}`;
  const base = `postgres://${user ? `${encodeURIComponent(user)}@` : ''}${server}/${database ?? ''}`;
  return schema === DEFAULT_POSTGRES_SCHEMA ? base : `${base}?schema=${schema}`;
}
