import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { errorCode } from '../postgres/postgres-errors.js';

// For tests only: the parts of a Supabase database that the Supabase setup relies on, on a
// plain PostgreSQL server. Never part of the setup itself (a real Supabase project has them).

/** A throw-away database shaped like a Supabase project's, and how to reach it. */
export interface SupabaseStandIn {
  /** The database's name. */
  database: string;
  /**
   * As the stand-in for Supabase's `postgres` role: a login role that owns the database, is
   * no superuser and cannot bypass row-level security, and is a member of anon, authenticated
   * and service_role (so it can `SET ROLE` to them, as Supabase's SQL editor and PostgREST
   * do). What the hub connects as.
   */
  ownerUrl: string;
  /** The same database as the server's administrator (the URL the stand-in was made from). */
  adminUrl: string;
  /** The owner role's name. */
  owner: string;
  /** Drops the database and the owner role; the API roles stay (they are cluster-wide). */
  drop(): Promise<void>;
}

/** Cluster-wide, so shared by every test run on the server: created once, never dropped. */
const API_ROLES = [
  { name: 'anon', attributes: 'NOLOGIN NOINHERIT' },
  { name: 'authenticated', attributes: 'NOLOGIN NOINHERIT' },
  { name: 'service_role', attributes: 'NOLOGIN NOINHERIT BYPASSRLS' },
] as const;

// Supabase's definition (its auth service's migrations): the claims PostgREST and Realtime put
// in the `request.jwt.claims` setting (or the older `request.jwt.claim`), as jsonb.
const AUTH_JWT = `
  CREATE SCHEMA auth;
  CREATE FUNCTION auth.jwt() RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT coalesce(
      nullif(current_setting('request.jwt.claim', true), ''),
      nullif(current_setting('request.jwt.claims', true), '')
    )::jsonb
  $$;
  GRANT USAGE ON SCHEMA auth TO anon, authenticated, service_role;
`;

async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** Creates Supabase's API roles where they are missing; safe with parallel test runs. */
export async function ensureSupabaseRoles(adminUrl: string): Promise<void> {
  await withClient(adminUrl, async (client) => {
    // Advisory locks are per database: runs on other databases of the server may still race,
    // hence the duplicate checks too.
    await client.query('BEGIN');
    await client.query("SELECT pg_advisory_xact_lock(hashtextextended('ctxbus-test-roles', 0))");
    for (const role of API_ROLES) {
      const { rows } = await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role.name]);
      if (rows.length > 0) continue;
      await client.query('SAVEPOINT role');
      try {
        await client.query(`CREATE ROLE ${role.name} ${role.attributes}`);
        await client.query('RELEASE SAVEPOINT role');
      } catch (error) {
        // 42710: created meanwhile; 23505: the same, caught by the catalog's unique index.
        if (!['42710', '23505'].includes(errorCode(error) ?? '')) throw error;
        await client.query('ROLLBACK TO SAVEPOINT role');
      }
    }
    await client.query('COMMIT');
  });
}

/** `url` with another user, password and database. */
function retarget(url: string, database: string, user?: { name: string; password: string }) {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  if (user) {
    parsed.username = user.name;
    parsed.password = user.password;
  }
  return parsed.toString();
}

/**
 * Makes a fresh database with Supabase's API roles, an `auth.jwt()` like Supabase's, and a
 * non-superuser owner role. `adminUrl` must be a superuser's (the local test server's is).
 */
export async function createSupabaseStandIn(adminUrl: string): Promise<SupabaseStandIn> {
  const suffix = `${process.pid}_${randomBytes(4).toString('hex')}`;
  const database = `ctxbus_test_supabase_${suffix}`;
  const owner = `ctxbus_test_owner_${suffix}`;
  const password = randomBytes(18).toString('hex');
  await ensureSupabaseRoles(adminUrl);
  await withClient(adminUrl, async (client) => {
    const { rows } = await client.query<{ rolsuper: boolean }>(
      'SELECT rolsuper FROM pg_roles WHERE rolname = current_user',
    );
    if (!rows[0]?.rolsuper) {
      throw new Error('the Supabase stand-in needs a superuser connection to create roles');
    }
    await client.query(
      `CREATE ROLE ${owner} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEROLE PASSWORD '${password}'`,
    );
    await client.query(`GRANT anon, authenticated, service_role TO ${owner}`);
    await client.query(`CREATE DATABASE ${database} OWNER ${owner} TEMPLATE template0`);
  });
  const admin = retarget(adminUrl, database);
  await withClient(admin, (client) => client.query(AUTH_JWT));
  return {
    database,
    owner,
    adminUrl: admin,
    ownerUrl: retarget(adminUrl, database, { name: owner, password }),
    async drop() {
      await withClient(adminUrl, async (client) => {
        await client.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
        await client.query(`DROP ROLE IF EXISTS ${owner}`);
      });
    },
  };
}

/** What a statement run as a Supabase role gave: its rows, or the SQLSTATE it failed with. */
export type SupabaseRoleOutcome = { rows: Record<string, unknown>[] } | { denied: string };

/**
 * Runs `text` as Supabase's PostgREST and Realtime run a user's queries: in a transaction
 * with `SET LOCAL ROLE role` and the JWT's claims (`role` added) in `request.jwt.claims`;
 * `claims` null sets none. Rolled back afterwards. `url` must be a member of the role (the
 * stand-in's owner is).
 */
export async function queryAsSupabaseRole(
  url: string,
  role: 'anon' | 'authenticated' | 'service_role',
  claims: Record<string, unknown> | null,
  text: string,
): Promise<SupabaseRoleOutcome> {
  return withClient(url, async (client) => {
    await client.query('BEGIN');
    try {
      await client.query(`SET LOCAL ROLE ${role}`);
      if (claims) {
        await client.query("SELECT set_config('request.jwt.claims', $1, true)", [
          JSON.stringify({ role, ...claims }),
        ]);
      }
      return { rows: (await client.query(text)).rows };
    } catch (error) {
      const code = errorCode(error);
      if (!code) throw error;
      return { denied: code };
    } finally {
      await client.query('ROLLBACK');
    }
  });
}
