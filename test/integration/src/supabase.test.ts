import { POSTGRES_MIGRATIONS, POSTGRES_SCHEMA_VERSION } from '@ctxbus/store/postgres';
import type { SupabaseStandIn } from '@ctxbus/store/testing';
import { createSupabaseStandIn, queryAsSupabaseRole } from '@ctxbus/store/testing';
import type { TestHub } from '@ctxbus/test-kit';
import { call, openStream, runCli, runtimeToken } from '@ctxbus/test-kit';
import { sql, storeUrl, withPostgres } from '@ctxbus/test-kit/postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInProcessServe } from './in-process-serve.ts';

// A Supabase deployment on the local server: `ctxbus migrate --supabase` and `ctxbus supabase
// sql` on a database with stand-ins for Supabase's roles and auth.jwt(), and a real hub
// connected as the tables' owner (no superuser, like Supabase's postgres role).

const acmeClaims = { sub: 'user-1', app_metadata: { ctxbus_teams: ['acme'] } };

async function write(
  hub: TestHub,
  token: string,
  body: Record<string, unknown>,
): Promise<{ id: string; seq: number }> {
  const response = await call(hub.url, 'POST', '/api/context', { token, body });
  if (response.status !== 201) throw new Error(`write failed: ${JSON.stringify(response.body)}`);
  return response.body.items[0];
}

await withPostgres('Supabase deployment', (url, schemas) => {
  describe('a hub on a Supabase-like database', () => {
    let standIn: SupabaseStandIn;
    let hub: TestHub | undefined;

    beforeAll(async () => {
      standIn = await createSupabaseStandIn(url);
    });

    afterAll(async () => {
      if (hub) expect(await hub.stop()).toBe(0);
      await standIn?.drop();
    });

    it('`ctxbus migrate --supabase` migrates, then applies the Supabase setup; again is harmless', async () => {
      const password = new URL(standIn.ownerUrl).password;
      const first = await runCli(['migrate', '--store', standIn.ownerUrl, '--supabase']);
      expect(first.stderr).toBe('');
      expect(first.code).toBe(0);
      // Every migration, by number and name, in order (the list grows with the schema).
      expect(first.stdout).toContain(
        `schema version 0 -> ${POSTGRES_SCHEMA_VERSION} (${POSTGRES_MIGRATIONS.map(
          (migration) => `${migration.version} ${migration.name}`,
        ).join(', ')})`,
      );
      expect(first.stdout).toContain('1 initial, 2 subscriptions-and-archive');
      expect(first.stdout).toContain(
        'Supabase setup version 1 applied (first time): row-level security by team, items in the supabase_realtime publication',
      );
      expect(first.stdout).not.toContain(password);
      const again = await runCli(['migrate', '--store', standIn.ownerUrl, '--supabase', '--json']);
      expect(again.code, again.stderr).toBe(0);
      const report = JSON.parse(again.stdout);
      expect(report).toMatchObject({
        schema: 'ctxbus',
        applied: [],
        supabase: { schema: 'ctxbus', from: 1, to: 1, publication: 'supabase_realtime' },
      });
      const published = await sql(
        standIn.adminUrl,
        "SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = 'supabase_realtime'",
      );
      expect(published).toEqual([{ schemaname: 'ctxbus', tablename: 'items' }]);
    });

    it('a hub connected as the owner writes, reads, searches and streams; Supabase users see team items only', async () => {
      hub = await startInProcessServe({ store: standIn.ownerUrl });
      const claude = await runtimeToken(hub, 'acme', 'claude-code');
      const web = await runtimeToken(hub, 'acme', 'web');
      const globex = await runtimeToken(hub, 'globex', 'claude-code');
      const onWeb = openStream(hub.url, web);
      const onClaude = openStream(hub.url, claude);
      await Promise.all([onWeb.ready, onClaude.ready]);

      const shared = await write(hub, claude, {
        type: 'decision',
        title: 'Deploy on Supabase',
        content: 'The hub connects with the session-mode connection string.',
      });
      const secret = await write(hub, claude, {
        type: 'discovery',
        title: 'Private scratch note',
        visibility: 'private',
      });
      await write(hub, globex, { type: 'status', title: 'Globex is busy' });

      // SSE: each runtime gets what the hub shows it, the private item to its writer only.
      await onClaude.waitFor(() => onClaude.items().length >= 2);
      expect(onClaude.items().map((event) => event.item.id)).toEqual([shared.id, secret.id]);
      await onWeb.waitFor(() => onWeb.items().length >= 1);
      const latest = await write(hub, web, { type: 'status', title: 'Web is watching' });
      await onWeb.waitFor(() => onWeb.items().length >= 2);
      expect(onWeb.items().map((event) => event.item.id)).toEqual([shared.id, latest.id]);
      onWeb.close();
      onClaude.close();

      // Reads and search through the hub are unaffected by row-level security.
      const mine = await call(hub.url, 'GET', '/api/context', { token: claude });
      expect(mine.status).toBe(200);
      expect(mine.body.items.map((item: { title: string }) => item.title)).toEqual([
        'Web is watching',
        'Private scratch note',
        'Deploy on Supabase',
      ]);
      const found = await call(hub.url, 'POST', '/api/context/search', {
        token: claude,
        body: { query: 'private scratch', limit: 5 },
      });
      expect(found.status).toBe(200);
      expect(found.body.results[0].item.id).toBe(secret.id);

      // Through Supabase (Data API, Realtime): acme's team-visible items, nothing private.
      const seen = await queryAsSupabaseRole(
        standIn.ownerUrl,
        'authenticated',
        acmeClaims,
        'SELECT id, title, team_id FROM ctxbus.items ORDER BY rid',
      );
      expect(seen).toEqual({
        rows: [
          { id: shared.id, title: 'Deploy on Supabase', team_id: 'acme' },
          { id: latest.id, title: 'Web is watching', team_id: 'acme' },
        ],
      });
      expect(
        await queryAsSupabaseRole(
          standIn.ownerUrl,
          'anon',
          acmeClaims,
          'SELECT * FROM ctxbus.items',
        ),
      ).toEqual({ denied: '42501' });
      expect(
        await queryAsSupabaseRole(
          standIn.ownerUrl,
          'authenticated',
          acmeClaims,
          'SELECT * FROM ctxbus.tokens',
        ),
      ).toEqual({ denied: '42501' });

      // The hub's LISTEN connection runs as the owner too; its health reports the store.
      const health = await call(hub.url, 'GET', '/health');
      expect(health.status).toBe(200);
      expect(JSON.stringify(health.body)).not.toContain(new URL(standIn.ownerUrl).password);
    });

    it("maps the seed's tables as docs/supabase.md says: its fields written through the hub, read back by the documented queries", async () => {
      if (!hub) throw new Error('the hub of the previous test did not start');
      const claude = await runtimeToken(hub, 'acme', 'claude-code');
      const web = await runtimeToken(hub, 'acme', 'web');
      // Seed 000's write, flat as the seed writes it.
      const seedItem = (title: string, scope: string, urgency: string) =>
        write(hub as TestHub, claude, {
          type: 'alert',
          title,
          content: 'from the seed mapping test',
          sourceRuntime: 'claude-code',
          scope,
          urgency,
          relevanceTags: ['supabase-map'],
        });
      const globalBlocking = await seedItem('Map: global blocking', 'global', 'blocking');
      const spaceAttention = await seedItem('Map: space attention', 'space', 'attention');
      await seedItem('Map: global background', 'global', 'background');
      await seedItem('Map: task blocking', 'task', 'blocking');
      // The documented retrieval, as a Supabase user of the team.
      const seen = await queryAsSupabaseRole(
        standIn.ownerUrl,
        'authenticated',
        acmeClaims,
        `SELECT id, title, source_runtime, scope, urgency, tags
         FROM ctxbus.items
         WHERE scope IN ('global', 'space') AND urgency >= 1 AND superseded_by IS NULL
           AND 'supabase-map' = ANY (tags)
         ORDER BY rid DESC`,
      );
      expect(seen).toEqual({
        rows: [
          {
            id: spaceAttention.id,
            title: 'Map: space attention',
            source_runtime: 'claude-code',
            scope: 'space',
            urgency: 1,
            tags: ['supabase-map'],
          },
          {
            id: globalBlocking.id,
            title: 'Map: global blocking',
            source_runtime: 'claude-code',
            scope: 'global',
            urgency: 2,
            tags: ['supabase-map'],
          },
        ],
      });
      // Seed 000's ContextSubscription, stored as the table says.
      const subscribed = await call(hub.url, 'POST', '/api/subscriptions', {
        token: web,
        body: {
          runtimeId: 'web-tab-7',
          runtimeType: 'web',
          scopes: ['global', 'space'],
          relevanceTags: ['supabase-map'],
          minUrgency: 'attention',
          deliveryMode: 'pull',
        },
      });
      expect(subscribed.status, JSON.stringify(subscribed.body)).toBe(201);
      const rows = await sql(
        standIn.ownerUrl,
        `SELECT runtime, label, delivery, endpoint, filter FROM ctxbus.subscriptions WHERE id = '${subscribed.body.subscription.id}'`,
      );
      expect(rows).toEqual([
        {
          runtime: 'web',
          label: 'web-tab-7',
          delivery: 'pull',
          endpoint: null,
          filter: { scopes: ['global', 'space'], tags: ['supabase-map'], minUrgency: 'attention' },
        },
      ]);
      // Not readable through Supabase: the hub's API manages subscriptions.
      expect(
        await queryAsSupabaseRole(
          standIn.ownerUrl,
          'authenticated',
          acmeClaims,
          'SELECT * FROM ctxbus.subscriptions',
        ),
      ).toEqual({ denied: '42501' });
    });

    it('`ctxbus supabase sql` prints the script; run as printed, it sets up another schema', async () => {
      const other = storeUrl(standIn.ownerUrl, 'team_bus');
      expect((await runCli(['migrate', '--store', other])).code).toBe(0);
      const printed = await runCli(['supabase', 'sql', '--schema', 'team_bus']);
      expect(printed.code).toBe(0);
      expect(printed.stdout).toMatch(
        /^-- ctxbus Supabase setup, version 1, for the ctxbus schema "team_bus"/,
      );
      // As Supabase's SQL editor runs it: the whole text in one simple query.
      await sql(standIn.ownerUrl, printed.stdout);
      const published = await sql<{ schemaname: string }>(
        standIn.adminUrl,
        `SELECT schemaname FROM pg_publication_tables
          WHERE pubname = 'supabase_realtime' AND tablename = 'items' ORDER BY schemaname`,
      );
      expect(published.map((row) => row.schemaname)).toEqual(['ctxbus', 'team_bus']);
      const unprotected = await sql(
        standIn.adminUrl,
        `SELECT relname FROM pg_class
          WHERE relnamespace = 'team_bus'::regnamespace AND relkind = 'r' AND NOT relrowsecurity`,
      );
      expect(unprotected).toEqual([]);
    });

    it('documents the Supabase setup in --help', async () => {
      const migrate = await runCli(['migrate', '--help']);
      expect(migrate.code).toBe(0);
      expect(migrate.stdout).toContain('--supabase');
      expect(migrate.stdout).toContain('app_metadata.ctxbus_teams');
      const printSql = await runCli(['supabase', 'sql', '--help']);
      expect(printSql.code).toBe(0);
      for (const word of ['--schema', '--publication', 'SQL editor', 'app_metadata.ctxbus_teams'])
        expect(printSql.stdout).toContain(word);
    });

    it('refuses what it cannot set up, with a message and exit code 2', async () => {
      const onData = await runCli(['migrate', '--data', '/tmp/ctxbus-nowhere', '--supabase']);
      expect(onData.code).toBe(2);
      expect(onData.stderr).toContain('--supabase needs a PostgreSQL store');
      const onPublic = await runCli(['supabase', 'sql', '--schema', 'public']);
      expect(onPublic.code).toBe(2);
      expect(onPublic.stdout).toBe('');
      expect(onPublic.stderr).toContain('refuses the schema "public"');
      // The local server's own database has the roles (cluster-wide) but no auth.jwt().
      const plain = storeUrl(url, schemas.next('plain'));
      const notSupabase = await runCli(['migrate', '--store', plain, '--supabase']);
      expect(notSupabase.code).toBe(2);
      expect(notSupabase.stderr).toContain('the function auth.jwt() does not exist');
    });
  });
});
