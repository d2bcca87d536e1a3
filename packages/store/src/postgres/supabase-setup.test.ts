import type { ContextItemInput, Viewer } from '@ctxbus/core';
import { CtxbusError, prepareItem } from '@ctxbus/core';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScratchSchemas } from '../testing/postgres-test-server.js';
import type { SupabaseRoleOutcome, SupabaseStandIn } from '../testing/supabase-stand-in.js';
import { createSupabaseStandIn, queryAsSupabaseRole } from '../testing/supabase-stand-in.js';
import { withPostgresServer } from '../testing/with-postgres-server.js';
import { migratePostgres } from './postgres-migrations.js';
import type { PostgresStore } from './postgres-store.js';
import { openPostgresStore } from './postgres-store.js';
import { SUPABASE_SETUP_VERSION, setupSupabase, supabaseSetupSql } from './supabase-setup.js';

// The Supabase setup on a plain PostgreSQL server, in a throw-away database with stand-ins for
// Supabase's roles and auth.jwt() (supabase-stand-in.ts). Users are played as PostgREST and
// Realtime play them: SET LOCAL ROLE plus the JWT's claims in `request.jwt.claims`.

async function rejection(promise: Promise<unknown>): Promise<CtxbusError> {
  try {
    await promise;
  } catch (error) {
    expect(CtxbusError.isInstance(error), String(error)).toBe(true);
    return error as CtxbusError;
  }
  throw new Error('expected a rejection');
}

describe('supabaseSetupSql', () => {
  it('is one transaction for the named schema, recording its version', () => {
    const script = supabaseSetupSql('team_bus');
    expect(script.startsWith(`-- ctxbus Supabase setup, version ${SUPABASE_SETUP_VERSION}`)).toBe(
      true,
    );
    expect(script).toContain('\nBEGIN;\n');
    expect(script.trimEnd().endsWith('COMMIT;')).toBe(true);
    expect(script).toContain('ALTER PUBLICATION "supabase_realtime" ADD TABLE "team_bus".items');
    expect(script).toContain(`INSERT INTO "team_bus".supabase_setup (version) VALUES (1)`);
    expect(script).not.toContain('"ctxbus"');
    expect(script).not.toMatch(/FORCE ROW LEVEL SECURITY/);
    expect(supabaseSetupSql('ctxbus', { publication: 'my_realtime' })).toContain(
      'ALTER PUBLICATION "my_realtime" ADD TABLE "ctxbus".items',
    );
  });

  it('refuses public, Supabase schemas and names that are not plain identifiers', () => {
    for (const schema of ['public', 'auth', 'realtime', 'storage']) {
      expect(() => supabaseSetupSql(schema)).toThrow(/refuses the schema/);
    }
    expect(() => supabaseSetupSql('public')).toThrow(/every privilege on new tables/);
    for (const schema of ['Ctxbus', 'a"; DROP TABLE x; --', '1abc', '']) {
      expect(() => supabaseSetupSql(schema)).toThrow(/not a plain PostgreSQL name/);
    }
    expect(() => supabaseSetupSql('ctxbus', { publication: "x'y" })).toThrow(
      /publication .* not a plain PostgreSQL name/,
    );
  });
});

await withPostgresServer('supabase setup', async (url) => {
  const walLevel = new pg.Client({ connectionString: url });
  await walLevel.connect();
  const level = (await walLevel.query<{ wal_level: string }>('SHOW wal_level')).rows[0]?.wal_level;
  await walLevel.end();
  defineSupabaseTests(url, level ?? 'unknown');
});

interface Claims {
  [claim: string]: unknown;
}

type SupabaseRole = Parameters<typeof queryAsSupabaseRole>[1];

function defineSupabaseTests(url: string, walLevel: string): void {
  let standIn: SupabaseStandIn;
  let store: PostgresStore;
  const schema = 'ctxbus';

  const acme: Viewer = { teamId: 'acme', runtime: 'claude-code' };
  const acmeWeb: Viewer = { teamId: 'acme', runtime: 'web' };
  const globex: Viewer = { teamId: 'globex', runtime: 'claude-code' };

  async function write(viewer: Viewer, input: Partial<ContextItemInput>): Promise<string> {
    const item = prepareItem({ type: 'discovery', title: 'untitled', ...input }, viewer, {
      now: new Date(),
    });
    const [outcome] = await store.writeItems([item]);
    if (!outcome) throw new Error('write failed');
    return outcome.item.id;
  }

  async function withClient<T>(connection: string, work: (client: pg.Client) => Promise<T>) {
    const client = new pg.Client({ connectionString: connection });
    await client.connect();
    try {
      return await work(client);
    } finally {
      await client.end();
    }
  }

  const as = (role: SupabaseRole, claims: Claims | null, text: string) =>
    queryAsSupabaseRole(standIn.ownerUrl, role, claims, text);

  const titles = (outcome: SupabaseRoleOutcome) => {
    if ('denied' in outcome) throw new Error(`denied: ${outcome.denied}`);
    return outcome.rows.map((row) => row.title as string).sort();
  };
  const teams = (list: unknown) => ({ sub: 'user-1', app_metadata: { ctxbus_teams: list } });

  beforeAll(async () => {
    standIn = await createSupabaseStandIn(url);
  });

  afterAll(async () => {
    await store?.close();
    await standIn?.drop();
  });

  describe('supabase setup on a Supabase-like database', () => {
    it('refuses a schema ctxbus has not migrated, saying what to run', async () => {
      const error = await rejection(
        setupSupabase({ connectionString: standIn.ownerUrl, schema: 'not_there' }),
      );
      expect(error.code).toBe('unavailable');
      expect(error.message).toContain('there are no ctxbus tables in the schema "not_there"');
      expect(error.message).toContain('ctxbus migrate --store');
    });

    it('applies after the migrations, as the non-superuser owner, creating the publication', async () => {
      await migratePostgres({ connectionString: standIn.ownerUrl, schema });
      const publications = await withClient(standIn.adminUrl, (client) =>
        client.query("SELECT 1 FROM pg_publication WHERE pubname = 'supabase_realtime'"),
      );
      expect(publications.rows).toHaveLength(0);
      const result = await setupSupabase({ connectionString: standIn.ownerUrl, schema });
      expect(result).toMatchObject({
        schema,
        from: 0,
        to: SUPABASE_SETUP_VERSION,
        publication: 'supabase_realtime',
      });
      // The owner's password never appears in what is reported.
      expect(result.location).toBe(
        `postgres://${standIn.owner}@${new URL(url).host}/${standIn.database}`,
      );
      store = await openPostgresStore({ connectionString: standIn.ownerUrl, schema });
      await write(acme, { title: 'acme team note' });
      await write(acme, { title: 'acme private note', visibility: 'private' });
      await write(acme, { title: 'acme expired note', expiresAt: '2020-01-01T00:00:00.000Z' });
      await write(acmeWeb, { title: 'acme web note' });
      await write(globex, { title: 'globex team note' });
      await write(globex, { title: 'globex private note', visibility: 'private' });
    });

    it('puts the items table (only) in the supabase_realtime publication', async () => {
      const rows = await withClient(standIn.adminUrl, async (client) => {
        const published = await client.query(
          "SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = 'supabase_realtime'",
        );
        return published.rows;
      });
      expect(rows).toEqual([{ schemaname: schema, tablename: 'items' }]);
    });

    it('enables row-level security on every table of the schema, never FORCE', async () => {
      const rows = await withClient(standIn.adminUrl, async (client) => {
        const tables = await client.query<{
          relname: string;
          relrowsecurity: boolean;
          relforcerowsecurity: boolean;
          owner: string;
        }>(
          `SELECT relname, relrowsecurity, relforcerowsecurity, relowner::regrole::text AS owner
             FROM pg_class WHERE relnamespace = $1::regnamespace AND relkind = 'r' ORDER BY relname`,
          [schema],
        );
        return tables.rows;
      });
      expect(rows.map((row) => row.relname)).toEqual([
        'archived_items',
        'audit_heads',
        'audit_log',
        'audit_task_events',
        'changes',
        'counter',
        'dead_letters',
        'hub_secrets',
        'item_usage',
        'item_usage_days',
        'item_vectors',
        'items',
        'presence',
        'schema_migrations',
        'search_terms',
        'subscriptions',
        'supabase_setup',
        'task_events',
        'task_relay',
        'tasks',
        'tokens',
      ]);
      for (const row of rows) {
        expect(row).toMatchObject({
          relrowsecurity: true,
          relforcerowsecurity: false,
          owner: standIn.owner,
        });
      }
    });

    it("an authenticated user sees only their teams' team-visible, unexpired items", async () => {
      const read = 'SELECT title FROM ctxbus.items';
      expect(titles(await as('authenticated', teams(['acme']), read))).toEqual([
        'acme team note',
        'acme web note',
      ]);
      expect(titles(await as('authenticated', teams(['globex']), read))).toEqual([
        'globex team note',
      ]);
      expect(titles(await as('authenticated', teams(['acme', 'globex']), read))).toEqual([
        'acme team note',
        'acme web note',
        'globex team note',
      ]);
      // One team as a plain string is read as a list of one.
      expect(titles(await as('authenticated', teams('globex'), read))).toEqual([
        'globex team note',
      ]);
      // Filters as Realtime subscribers and the Data API give them still pass the policy.
      expect(
        titles(await as('authenticated', teams(['acme']), `${read} WHERE team_id = 'globex'`)),
      ).toEqual([]);
    });

    it('a user without the claim, or with it where users can write it, sees nothing', async () => {
      const read = 'SELECT title FROM ctxbus.items';
      for (const claims of [
        null,
        { sub: 'user-1' },
        { sub: 'user-1', user_metadata: { ctxbus_teams: ['acme'] } },
        { sub: 'user-1', ctxbus_teams: ['acme'] },
        { sub: 'user-1', app_metadata: { ctxbus_team: 'acme' } },
        teams([]),
        teams([1, null, { team: 'acme' }]),
        teams({ acme: true }),
      ]) {
        expect(titles(await as('authenticated', claims, read)), JSON.stringify(claims)).toEqual([]);
      }
    });

    it('an authenticated user cannot write, and cannot read any other table', async () => {
      const claims = teams(['acme']);
      const writes = [
        `INSERT INTO ctxbus.items SELECT * FROM ctxbus.items LIMIT 1`,
        `UPDATE ctxbus.items SET title = 'changed'`,
        `DELETE FROM ctxbus.items`,
        `TRUNCATE ctxbus.items`,
      ];
      for (const statement of writes) {
        expect(await as('authenticated', claims, statement), statement).toEqual({
          denied: '42501',
        });
      }
      for (const table of [
        'tokens',
        // Webhook secrets live here; archived items include private ones.
        'subscriptions',
        'archived_items',
        'dead_letters',
        'item_vectors',
        'changes',
        'counter',
        'search_terms',
        'schema_migrations',
        'supabase_setup',
        // Who is connected, per team.
        'presence',
      ]) {
        expect(await as('authenticated', claims, `SELECT * FROM ctxbus.${table}`), table).toEqual({
          denied: '42501',
        });
      }
    });

    it('anon and service_role read nothing, whatever their claims', async () => {
      for (const role of ['anon', 'service_role'] as const) {
        for (const table of ['items', 'tokens', 'subscriptions']) {
          expect(
            await as(role, teams(['acme']), `SELECT * FROM ctxbus.${table}`),
            `${role} ${table}`,
          ).toEqual({ denied: '42501' });
        }
      }
    });

    it("leaves the hub's role (the owner) unaffected: it reads private items and writes", async () => {
      const mine = await store.listItems(acme, { limit: 100 });
      expect(mine.map((item) => item.title).sort()).toEqual([
        'acme private note',
        'acme team note',
        'acme web note',
      ]);
      const hits = await store.searchItems(acme, { query: 'private note', limit: 5 });
      expect(hits.map((hit) => hit.item.title)).toContain('acme private note');
      await write(acme, { title: 'acme written after the setup' });
      expect(
        titles(await as('authenticated', teams(['acme']), 'SELECT title FROM ctxbus.items')),
      ).toContain('acme written after the setup');
    });

    it('applying it again changes nothing', async () => {
      const snapshot = () =>
        withClient(standIn.adminUrl, async (client) => {
          const state = await client.query(
            `SELECT
               (SELECT json_agg(json_build_object('table', relname, 'acl', relacl::text,
                  'rls', relrowsecurity, 'force', relforcerowsecurity) ORDER BY relname)
                  FROM pg_class WHERE relnamespace = $1::text::regnamespace) AS tables,
               (SELECT nspacl::text FROM pg_namespace WHERE nspname = $1::text) AS schema_acl,
               (SELECT json_agg(json_build_object('policy', policyname, 'roles', roles::text,
                  'cmd', cmd, 'qual', qual, 'permissive', permissive) ORDER BY policyname)
                  FROM pg_policies WHERE schemaname = $1::text) AS policies,
               (SELECT json_agg(json_build_object('schema', schemaname, 'table', tablename)
                  ORDER BY schemaname, tablename)
                  FROM pg_publication_tables WHERE pubname = 'supabase_realtime') AS published,
               (SELECT json_agg(version) FROM ctxbus.supabase_setup) AS versions`,
            [schema],
          );
          return state.rows[0];
        });
      const before = await snapshot();
      const again = await setupSupabase({ connectionString: standIn.ownerUrl, schema });
      expect(again).toMatchObject({ from: SUPABASE_SETUP_VERSION, to: SUPABASE_SETUP_VERSION });
      expect(await snapshot()).toEqual(before);
      expect(before?.policies).toHaveLength(1);
      expect(before?.versions).toEqual([SUPABASE_SETUP_VERSION]);
    });

    it('adds to an existing publication, and schemas set up at once all get published', async () => {
      const others = ['team_a', 'team_b', 'team_c'];
      for (const other of others)
        await migratePostgres({ connectionString: standIn.ownerUrl, schema: other });
      const results = await Promise.all(
        others.map((other) => setupSupabase({ connectionString: standIn.ownerUrl, schema: other })),
      );
      expect(results.map((result) => result.from)).toEqual([0, 0, 0]);
      const published = await withClient(standIn.adminUrl, async (client) => {
        const rows = await client.query<{ schemaname: string }>(
          `SELECT schemaname FROM pg_publication_tables
            WHERE pubname = 'supabase_realtime' AND tablename = 'items' ORDER BY schemaname`,
        );
        return rows.rows.map((row) => row.schemaname);
      });
      expect(published).toEqual([schema, ...others]);
    });

    it('refuses a setup recorded by a newer ctxbus, and leaves everything as it was', async () => {
      await withClient(standIn.ownerUrl, (client) =>
        client.query('INSERT INTO team_a.supabase_setup (version) VALUES (99)'),
      );
      await withClient(standIn.ownerUrl, (client) =>
        client.query('ALTER TABLE team_a.tokens DISABLE ROW LEVEL SECURITY'),
      );
      const error = await rejection(
        setupSupabase({ connectionString: standIn.ownerUrl, schema: 'team_a' }),
      );
      expect(error.code).toBe('schema_too_new');
      expect(error.message).toContain('has setup version 99, newer than this script (1)');
      const rls = await withClient(standIn.ownerUrl, (client) =>
        client.query("SELECT relrowsecurity FROM pg_class WHERE oid = 'team_a.tokens'::regclass"),
      );
      expect(rls.rows[0]?.relrowsecurity).toBe(false);
    });

    if (walLevel === 'logical') {
      it('a pgoutput slot on supabase_realtime sees an insert to items, and nothing of tokens', async () => {
        await withClient(standIn.adminUrl, async (client) => {
          const slot = `ctxbus_test_${process.pid}`;
          await client.query("SELECT pg_create_logical_replication_slot($1, 'pgoutput', true)", [
            slot,
          ]);
          const id = await write(globex, { title: 'globex through the slot' });
          await store.createToken({
            id: 'tok_slot',
            hash: 'hash-slot',
            role: 'runtime',
            teamId: 'globex',
            runtime: 'web',
            label: null,
            createdAt: new Date().toISOString(),
            revokedAt: null,
          });
          const changes = await client.query<{ data: Buffer }>(
            `SELECT data FROM pg_logical_slot_get_binary_changes($1, NULL, NULL,
               'proto_version', '1', 'publication_names', 'supabase_realtime')`,
            [slot],
          );
          const messages = decodePgoutput(changes.rows.map((row) => row.data));
          const relations = new Map(
            messages.flatMap((m) => (m.kind === 'relation' ? [[m.relid, m.name] as const] : [])),
          );
          expect([...new Set(relations.values())]).toEqual([`${schema}.items`]);
          const inserts = messages.filter((m) => m.kind === 'insert');
          expect(inserts).toHaveLength(1);
          const insert = inserts[0];
          expect(insert?.kind === 'insert' && insert.values).toContain(id);
          expect(insert?.kind === 'insert' && insert.values).toContain('globex through the slot');
        });
      });
    } else if (process.env.CTXBUS_REQUIRE_LOGICAL_REPLICATION === '1') {
      // CI sets wal_level to logical (.ci/run): there, this case must run, never skip.
      it('logical replication through supabase_realtime', () => {
        throw new Error(
          `wal_level is ${walLevel}, not logical, though CTXBUS_REQUIRE_LOGICAL_REPLICATION=1`,
        );
      });
    } else {
      it.skip(`logical replication through supabase_realtime (skipped: wal_level is ${walLevel}, not logical; it needs a server restart, or CTXBUS_REQUIRE_LOGICAL_REPLICATION=1 to fail instead)`, () => {});
    }
  });

  describe('supabase setup on plain PostgreSQL', () => {
    const schemas = new ScratchSchemas(url);
    afterAll(() => schemas.dropAll());

    it('refuses a database without auth.jwt(), saying it is not Supabase', async () => {
      // The API roles exist (the stand-in made them; they are cluster-wide), auth.jwt() only
      // in the stand-in's database.
      const schema = schemas.next('plain');
      await migratePostgres({ connectionString: url, schema });
      const error = await rejection(setupSupabase({ connectionString: url, schema }));
      expect(error.code).toBe('validation_failed');
      expect(error.message).toContain('the function auth.jwt() does not exist');
      expect(error.message).toContain('ctxbus needs no setup on plain PostgreSQL');
    });
  });
}

type PgoutputMessage =
  | { kind: 'relation'; relid: number; name: string }
  | { kind: 'insert'; relid: number; values: (string | null)[] }
  | { kind: 'other'; tag: string };

/** Just enough of the pgoutput protocol (version 1): relations and inserted text values. */
function decodePgoutput(messages: Buffer[]): PgoutputMessage[] {
  return messages.map((data) => {
    const tag = String.fromCharCode(data[0] ?? 0);
    let at = 1;
    const cstring = () => {
      const end = data.indexOf(0, at);
      const text = data.toString('utf8', at, end);
      at = end + 1;
      return text;
    };
    if (tag === 'R') {
      const relid = data.readUInt32BE(at);
      at += 4;
      const namespace = cstring();
      const name = cstring();
      return { kind: 'relation', relid, name: `${namespace}.${name}` };
    }
    if (tag === 'I') {
      const relid = data.readUInt32BE(at);
      at += 5; // relid, then 'N'
      const count = data.readUInt16BE(at);
      at += 2;
      const values: (string | null)[] = [];
      for (let column = 0; column < count; column += 1) {
        const kind = String.fromCharCode(data[at] ?? 0);
        at += 1;
        if (kind === 't') {
          const length = data.readUInt32BE(at);
          at += 4;
          values.push(data.toString('utf8', at, at + length));
          at += length;
        } else values.push(null);
      }
      return { kind: 'insert', relid, values };
    }
    return { kind: 'other', tag };
  });
}
