import type { AddressInfo, Socket } from 'node:net';
import { connect, createServer } from 'node:net';
import type { ContextItemInput, NewContextItem, Viewer } from '@ctxbus/core';
import { CtxbusError, prepareItem, silentLogger } from '@ctxbus/core';
import pg from 'pg';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import type { Change } from '../store.js';
import { ReusedSchemas, ScratchSchemas } from '../testing/postgres-test-server.js';
import { runStoreConformance } from '../testing/store-conformance.js';
import { expectVectorScansAgree, VECTOR_CASES } from '../testing/vector-conformance.js';
import { withPostgresServer } from '../testing/with-postgres-server.js';
import { migratePostgres, POSTGRES_SCHEMA_VERSION } from './postgres-migrations.js';
import type { PostgresStore } from './postgres-store.js';
import { listenerName, openPostgresStore } from './postgres-store.js';

await withPostgresServer('postgres store', definePostgresTests);

function definePostgresTests(url: string): void {
  const schemas = new ScratchSchemas(url);
  afterAll(() => schemas.dropAll(), 60_000);
  // A fresh store per conformance case on a schema emptied for it: a few schemas for the
  // hundred cases instead of one created, migrated and dropped for each (most of the file's time).
  const reused = new ReusedSchemas(schemas, url, async (schema) => {
    await migratePostgres({ connectionString: url, schema });
  });
  afterEach(() => reused.recycle());

  runStoreConformance({
    name: 'postgres',
    async createStore({ clock, maxWaitingTasksPerRuntime }) {
      return reused.open((schema) =>
        openPostgresStore({ connectionString: url, schema, clock, maxWaitingTasksPerRuntime }),
      );
    },
    async reopenStore(store, { clock }) {
      await store.close();
      const schema = (store as PostgresStore).schema;
      return reused.track(
        schema,
        await openPostgresStore({ connectionString: url, schema, clock }),
      );
    },
    async openSibling(store, { clock }) {
      const schema = (store as PostgresStore).schema;
      return reused.track(
        schema,
        await openPostgresStore({ connectionString: url, schema, clock }),
      );
    },
    async execSql(store, sql) {
      await withClient(async (client) => {
        await client.query(`SET search_path TO "${(store as PostgresStore).schema}"`);
        await client.query(sql);
      });
    },
  });

  // The vector cases again, compared in SQL without pgvector (the main run compares in memory).
  runStoreConformance({
    name: 'postgres, exact vector scan in SQL',
    only: VECTOR_CASES,
    async createStore({ clock }) {
      return reused.open((schema) =>
        openPostgresStore({
          connectionString: url,
          schema,
          clock,
          vectors: 'exact',
          vectorMemoryMb: 0,
        }),
      );
    },
  });

  describe('pgvector', async () => {
    const available = await withClient(async (client) => {
      const result = await client.query(
        `SELECT 1 FROM pg_available_extensions WHERE name = 'vector'`,
      );
      return result.rowCount === 1;
    });
    const reason =
      "the server has no pgvector extension (PGDG's postgresql-NN-pgvector, or build it; Debian 12's own archive has no pgvector package)";
    it.skipIf(!available)(
      `is used when the server has it${available ? '' : ` (skipped: ${reason})`}`,
      async () => {
        const schema = schemas.next('pgv');
        const result = await migratePostgres({ connectionString: url, schema });
        expect(result.vectors.vectorIndex).toBe('pgvector');
        // Both compare in the database (no memory), with pgvector's operator and without.
        const store = await openPostgresStore({
          connectionString: url,
          schema,
          migrate: false,
          vectorMemoryMb: 0,
        });
        expect(store.info.vectorIndex).toBe('pgvector');
        const exact = await openPostgresStore({
          connectionString: url,
          schema,
          migrate: false,
          vectors: 'exact',
          vectorMemoryMb: 0,
        });
        expect(exact.info.vectorIndex).toBe('exact');
        // Both comparisons rank the same vectors the same way, with the same scores.
        const items = await store.writeItems(
          Array.from({ length: 40 }, (_, index) => prepared({ title: `item ${index}` })),
        );
        let seed = 7;
        const random = () => {
          seed = (seed * 48271) % 2147483647;
          return seed / 2147483647 - 0.5;
        };
        await store.saveVectors(
          'm',
          items.map(({ item }) => ({
            seq: item.seq,
            vector: Float32Array.from({ length: 64 }, random),
          })),
        );
        const query = Float32Array.from({ length: 64 }, random);
        const viaPgvector = await store.vectorSearch(acme, {
          model: 'm',
          vector: query,
          limit: 10,
        });
        const viaScan = await exact.vectorSearch(acme, { model: 'm', vector: query, limit: 10 });
        expect(viaPgvector.map((hit) => hit.item.id)).toEqual(viaScan.map((hit) => hit.item.id));
        for (const [index, hit] of viaPgvector.entries())
          expect(hit.score).toBeCloseTo(viaScan[index]?.score ?? Number.NaN, 5);
        await store.close();
        await exact.close();
      },
    );
    it.skipIf(available)(
      `says why it is not used${available ? ' (skipped: this server has pgvector)' : ''}`,
      async () => {
        const result = await migratePostgres({
          connectionString: url,
          schema: schemas.next('nopgv'),
        });
        expect(result.vectors).toMatchObject({ vectorIndex: 'exact', created: false });
        expect(result.vectors.reason).toContain('no pgvector');
      },
    );
  });

  it('numbers writes from two stores on one schema in one gapless order, retries and keys alike', async () => {
    const schema = schemas.next('rt');
    const a = await openPostgresStore({ connectionString: url, schema });
    const b = await openPostgresStore({ connectionString: url, schema });
    const write = async (store: PostgresStore, input: Partial<ContextItemInput>) => {
      const [outcome] = await store.writeItems([prepared(input)]);
      return outcome;
    };
    for (let index = 0; index < 4; index++) await write(a, { title: `a${index}` });
    // Another store wrote meanwhile (unheard: a does not watch): a's next write follows it.
    const elsewhere = await write(b, { title: 'b' });
    const after = await write(a, { title: 'after' });
    expect(after?.item.seq).toBe((elsewhere?.item.seq ?? 0) + 1);
    // A retry of a stored id is the stored item; a key with a live holder supersedes it.
    const fixed = prepared({ title: 'fixed id' });
    await a.writeItems([fixed]);
    const [again] = await a.writeItems([fixed]);
    expect(again?.status).toBe('existing');
    const first = await write(a, { type: 'decision', title: 'v1', key: 'rules/x' });
    const second = await write(b, { type: 'decision', title: 'v2', key: 'rules/x' });
    expect(second?.item.supersedes).toBe(first?.item.id);
    expect((await a.getItem(acme, first?.item.id ?? ''))?.supersededBy).toBe(second?.item.id);
    const third = await write(a, { type: 'decision', title: 'v3', key: 'rules/x' });
    expect(third?.item.supersedes).toBe(second?.item.id);
    const [retried] = await b.writeItems([fixed]);
    expect(retried).toMatchObject({ status: 'existing', item: { seq: again?.item.seq } });
    // Gapless and in order, whichever store wrote each.
    const changes = await a.readChanges({ afterSeq: 0, limit: 100 });
    expect(changes.map((change) => change.seq)).toEqual(
      Array.from({ length: changes.length }, (_, index) => index + 1),
    );
    await Promise.all([a.close(), b.close()]);
  });

  it('plans a task complete to read its one row however many tasks the team has made', async () => {
    // One connection for the store and the test: the statement plans the store's calls left
    // in it (its prepared statements) are the ones explained here.
    const schema = schemas.next('plans');
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    const store = await openPostgresStore({ pool, schema });
    const created = async (index: number) => {
      const { task } = await store.createTask('acme', {
        title: `task ${index}`,
        requiredCapabilities: ['code_execution'],
        origin: 'openclaw',
        targetRuntime: 'claude-code',
      });
      return task;
    };
    const claim = { teamId: 'acme', runtime: 'claude-code', workerId: 'w', leaseMs: 60_000 };
    const run = async (index: number) => {
      await created(index);
      const task = await store.claimTask(claim);
      const token = task?.lease?.token ?? -1;
      await store.completeTask(
        'acme',
        task?.id ?? '',
        token,
        { ok: true },
        { holder: 'claude-code' },
      );
    };
    // Planned (and its generic plan kept) while the table was small; grown past it after.
    for (let index = 0; index < 400; index++) await run(index);
    const last = await created(400);
    const held = await store.claimTask(claim);
    expect(held?.id).toBe(last.id);
    const { rows } = await pool.query<{ name: string }>(
      `SELECT name FROM pg_prepared_statements WHERE statement LIKE 'WITH held AS%'`,
    );
    const name = rows[0]?.name ?? 'none';
    const now = new Date().toISOString();
    const args = ['acme', last.id, held?.lease?.token, now, 'claude-code', '{}', null, 'hub']
      .map((value) => (value === null ? 'NULL' : pg.escapeLiteral(String(value))))
      .join(', ');
    const explained = await pool.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
      `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE ${pg.escapeIdentifier(name)}(${args})`,
    );
    const scans = planNodes(explained.rows[0]?.['QUERY PLAN'][0].Plan).filter(
      (node) => node['Relation Name'] === 'tasks',
    );
    expect(scans.length).toBeGreaterThan(0);
    // Each scan of tasks looked at a few rows (the live leases at most), not the team's 401.
    for (const scan of scans) {
      const looked = (scan['Actual Rows'] ?? 0) + (scan['Rows Removed by Filter'] ?? 0);
      expect({ index: scan['Index Name'], looked }).toEqual({
        index: scan['Index Name'],
        looked: expect.toSatisfy((rowsSeen: number) => rowsSeen <= 5),
      });
    }
    expect((await store.getTask('acme', last.id))?.task.state).toBe('COMPLETED');
    await store.close();
    await pool.end();
  });

  it("keeps a task's status items out of full-text search (bookkeeping), other items in", async () => {
    const store = await openPostgresStore({ connectionString: url, schema: schemas.next('fts') });
    const status = (state: string) =>
      prepared({
        type: 'status',
        title: `Task ${state}: rebuild the zanzibar index`,
        scopeKey: 'task:task_019a0000-0000-7000-8000-0000000000aa',
        relevanceTags: ['task'],
        runtimeOptions: {
          task: { id: 'task_019a0000-0000-7000-8000-0000000000aa', state },
        },
      });
    await store.writeItems([status('SUBMITTED')]);
    await store.writeItems([status('WORKING')]);
    const [note] = await store.writeItems([
      prepared({ type: 'discovery', title: 'The zanzibar index is rebuilt nightly' }),
    ]);
    const hits = await store.searchItems(acme, { query: 'zanzibar index', limit: 10 });
    expect(hits.map((hit) => hit.item.id)).toEqual([note?.item.id]);
    // Still read by everything else (the feed, the bundle): only search leaves them out.
    const listed = await store.listItems(acme, { tags: ['task'], limit: 10 });
    expect(listed).toHaveLength(2);
    await store.close();
  });

  it("keeps the database's time when this machine's clock is off (saying so), so a lease runs as long on every hub", async () => {
    const warnings: { fields: unknown; message: string }[] = [];
    const logger = {
      ...silentLogger,
      warn: (fields: unknown, message?: string) => {
        warnings.push({ fields, message: message ?? '' });
      },
    };
    const schema = schemas.next('clock');
    const real = await openPostgresStore({ connectionString: url, schema, logger });
    expect(warnings).toEqual([]);
    await real.close();
    // The true time (performance's clock is not faked below).
    const trueNow = () => performance.timeOrigin + performance.now();
    // This machine's clock 40 s ahead: the store's time stays the database's.
    vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true });
    try {
      vi.setSystemTime(Date.now() + 40_000);
      const fast = await openPostgresStore({ connectionString: url, schema, logger });
      expect(warnings).toEqual([
        {
          fields: { offsetMs: expect.any(Number) },
          message: expect.stringMatching(
            /^this machine's clock is (39|40)\.\d s ahead of PostgreSQL's: the store keeps the database's time \(leases, expiries\), but keep the clocks in agreement \(NTP\)$/,
          ),
        },
      ]);
      expect(Math.abs(fast.clock().getTime() - trueNow())).toBeLessThan(1_000);
      // A lease taken through the fast machine ends when one taken through the other would.
      const task = await fast.createTask('acme', {
        title: 'leased',
        requiredCapabilities: [],
        origin: 'openclaw',
        targetRuntime: 'claude-code',
      });
      const claimed = await fast.claimTask({
        teamId: 'acme',
        runtime: 'claude-code',
        workerId: 'w1',
        leaseMs: 30_000,
      });
      expect(claimed?.id).toBe(task.task.id);
      const endsIn = Date.parse(claimed?.lease?.expiresAt ?? '') - trueNow();
      expect(endsIn).toBeGreaterThan(28_000);
      expect(endsIn).toBeLessThan(31_000);
      // A sweep at the true time finds it live.
      expect(await fast.expireLeases(new Date(trueNow()).toISOString())).toEqual([]);
      await fast.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it('never lets another team’s item with the same id change a write', async () => {
    const store = await openPostgresStore({ connectionString: url, schema: schemas.next('ids') });
    const globex: Viewer = { teamId: 'globex', runtime: 'claude-code' };
    await store.writeItems([prepared({ title: 'reads the sequence' })]);
    const ours = prepared({ title: 'ours' });
    await store.writeItems([ours]);
    const [theirs] = await store.writeItems([prepared({ id: ours.id, title: 'theirs' }, globex)]);
    expect(theirs?.status).toBe('created');
    // Within a team the id is found as before: a retry is the stored item, a change a conflict.
    const [retried] = await store.writeItems([prepared({ id: ours.id, title: 'theirs' }, globex)]);
    expect(retried).toMatchObject({ status: 'existing', item: { seq: theirs?.item.seq } });
    expect((await rejection(store.writeItems([{ ...ours, inputHash: 'other' }]))).code).toBe(
      'conflict',
    );
    expect((await store.getItem(acme, ours.id))?.title).toBe('ours');
    expect((await store.getItem(globex, ours.id))?.title).toBe('theirs');
    await store.close();
  });

  describe('exact vector scan in memory (no pgvector)', () => {
    it('ranks as the SQL scan does, filters included, and sees other hubs’ vectors', async () => {
      const schema = schemas.next('vmem');
      const open = (vectorMemoryMb?: number) =>
        openPostgresStore({
          connectionString: url,
          schema,
          vectors: 'exact',
          ...(vectorMemoryMb !== undefined && { vectorMemoryMb }),
        });
      const stores = { memory: await open(), scan: await open(0), writer: await open() };
      await expectVectorScansAgree(stores);
      await Promise.all(Object.values(stores).map((store) => store.close()));
    });

    it('forgets swept items, and falls back to SQL over its memory budget', async () => {
      const schema = schemas.next('vmem2');
      let now = Date.now();
      const clock = () => new Date(now);
      const memory = await openPostgresStore({
        connectionString: url,
        schema,
        vectors: 'exact',
        clock,
      });
      const tiny = await openPostgresStore({
        connectionString: url,
        schema,
        vectors: 'exact',
        vectorMemoryMb: 0.0001,
      });
      const [brief, kept] = await memory.writeItems([
        prepareItem({ type: 'status', title: 'brief', expiresAfterSeconds: 60 }, acme, {
          now: clock(),
        }),
        prepareItem({ type: 'status', title: 'kept' }, acme, { now: clock() }),
      ]);
      await memory.saveVectors('m', [
        { seq: brief?.item.seq ?? 0, vector: new Float32Array([1, 0]) },
        { seq: kept?.item.seq ?? 0, vector: new Float32Array([0.9, 0.1]) },
      ]);
      const titles = async (store: PostgresStore) =>
        (
          await store.vectorSearch(acme, { model: 'm', vector: new Float32Array([1, 0]), limit: 5 })
        ).map((hit) => hit.item.title);
      expect(await titles(memory)).toEqual(['brief', 'kept']);
      expect(await titles(tiny)).toEqual(['brief', 'kept']);
      now += 120_000;
      const at = new Date(now).toISOString();
      await memory.sweepItems({ expiredBefore: at, mode: 'delete', limit: 10, now: at });
      expect(await titles(memory)).toEqual(['kept']);
      expect(await titles(tiny)).toEqual(['kept']);
      await Promise.all([memory.close(), tiny.close()]);
    });
  });

  const acme: Viewer = { teamId: 'acme', runtime: 'claude-code' };
  const prepared = (input: Partial<ContextItemInput>, viewer: Viewer = acme): NewContextItem =>
    prepareItem({ type: 'discovery', title: 'untitled', ...input }, viewer, { now: new Date() });

  async function rejection(promise: Promise<unknown>): Promise<CtxbusError> {
    try {
      await promise;
    } catch (error) {
      expect(CtxbusError.isInstance(error), String(error)).toBe(true);
      return error as CtxbusError;
    }
    throw new Error('expected a rejection');
  }

  async function withClient<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return await work(client);
    } finally {
      await client.end();
    }
  }

  describe('postgres migrations', () => {
    it('refuses an unmigrated schema with migrate: false, and says how to migrate', async () => {
      const schema = schemas.next('old');
      const error = await rejection(
        openPostgresStore({ connectionString: url, schema, migrate: false }),
      );
      expect(error.code).toBe('unavailable');
      expect(error.message).toContain('has schema version 0, older than this ctxbus needs');
      expect(error.message).toContain('run `ctxbus migrate --store postgres://');
      expect(error.message).toContain(`schema=${schema}`);
      const result = await migratePostgres({ connectionString: url, schema });
      expect(result).toMatchObject({ from: 0, to: POSTGRES_SCHEMA_VERSION });
      expect(result.applied.map((step) => step.version)).toEqual(
        Array.from({ length: POSTGRES_SCHEMA_VERSION }, (_, index) => index + 1),
      );
      const store = await openPostgresStore({ connectionString: url, schema, migrate: false });
      expect(store.info).toMatchObject({
        backend: 'postgres',
        schemaVersion: POSTGRES_SCHEMA_VERSION,
      });
      await store.close();
      expect((await migratePostgres({ connectionString: url, schema })).applied).toEqual([]);
    });

    it('upgrades a version-1 schema in place, keeping its items', async () => {
      const schema = schemas.next('v1');
      const first = await openPostgresStore({ connectionString: url, schema });
      const [outcome] = await first.writeItems([prepared({ title: 'kept across upgrades' })]);
      await first.writeItems([
        prepared({ title: 'private upgrades note', visibility: 'private' }),
        prepared({ title: 'upgrades elsewhere' }, { teamId: 'globex', runtime: 'web' }),
      ]);
      await first.close();
      // Turn it back into a version-1 schema.
      await withClient((client) =>
        client.query(
          `DROP TABLE "${schema}".item_usage; DROP TABLE "${schema}".item_usage_days;
           DROP TABLE "${schema}".presence; DROP TABLE "${schema}".hub_secrets;
           DROP TABLE "${schema}".task_relay; DROP TABLE "${schema}".audit_task_events;
           DROP TABLE "${schema}".audit_log; DROP TABLE "${schema}".audit_heads;
           DROP TABLE "${schema}".task_events; DROP TABLE "${schema}".tasks;
           DROP TABLE "${schema}".dead_letters; DROP TABLE "${schema}".subscriptions;
           DROP TABLE "${schema}".archived_items; DROP INDEX "${schema}".items_expires;
           DROP INDEX "${schema}".items_type_created; DROP TABLE "${schema}".item_vectors;
           DROP FUNCTION "${schema}".ctxbus_dot; DROP FUNCTION "${schema}".create_task;
           DROP INDEX "${schema}".items_id_team;
           ALTER TABLE "${schema}".items ADD CONSTRAINT items_id_key UNIQUE (id);
           DROP TABLE "${schema}".search_terms;
           CREATE TABLE "${schema}".search_terms (term text COLLATE "C" PRIMARY KEY, docs bigint NOT NULL);
           INSERT INTO "${schema}".search_terms
             SELECT lexeme, count(*) FROM "${schema}".items, unnest(tsvector_to_array(search)) lexeme
              GROUP BY 1;
           DELETE FROM "${schema}".schema_migrations WHERE version > 1`,
        ),
      );
      const result = await migratePostgres({ connectionString: url, schema });
      expect(result).toMatchObject({ from: 1, to: POSTGRES_SCHEMA_VERSION });
      // Version 5: search statistics by partition (team; runtime for private items), counted
      // from the items (read before this test writes again); the empty term counts a partition's items.
      const counts = await withClient(async (client) => {
        const { rows } = await client.query(
          `SELECT team_id, runtime, term, docs::int FROM "${schema}".search_terms
            WHERE term IN ('', 'upgrad') ORDER BY 1, 2, 3`,
        );
        return rows;
      });
      expect(counts).toEqual([
        { team_id: 'acme', runtime: '', term: '', docs: 1 },
        { team_id: 'acme', runtime: '', term: 'upgrad', docs: 1 },
        { team_id: 'acme', runtime: 'claude-code', term: '', docs: 1 },
        { team_id: 'acme', runtime: 'claude-code', term: 'upgrad', docs: 1 },
        { team_id: 'globex', runtime: '', term: '', docs: 1 },
        { team_id: 'globex', runtime: '', term: 'upgrad', docs: 1 },
      ]);
      const upgraded = await openPostgresStore({ connectionString: url, schema, migrate: false });
      expect(await upgraded.getItem(acme, outcome?.item.id ?? '')).toEqual(outcome?.item);
      expect(await upgraded.listSubscriptions()).toEqual([]);
      // Version 4: the id is unique per team, no longer across teams.
      const id = outcome?.item.id ?? '';
      const globex: Viewer = { teamId: 'globex', runtime: 'claude-code' };
      const [theirs] = await upgraded.writeItems([prepared({ id, title: 'theirs' }, globex)]);
      expect(theirs?.status).toBe('created');
      expect((await upgraded.getItem(globex, id))?.title).toBe('theirs');
      expect(await upgraded.getItem(acme, id)).toEqual(outcome?.item);
      const indexes = await withClient(async (client) => {
        const { rows } = await client.query<{ indexdef: string }>(
          `SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND tablename = 'items'
            AND indexdef LIKE 'CREATE UNIQUE%'`,
          [schema],
        );
        return rows.map((row) => row.indexdef.replace(/^.* USING btree /, ''));
      });
      expect(indexes.sort()).toEqual(['(id, team_id)', '(rid)']);
      const hits = await upgraded.searchItems(acme, { query: 'upgrades', limit: 5 });
      expect(hits).toHaveLength(2);
      await upgraded.close();
    });

    it('refuses a schema newer than the code, with or without migrate', async () => {
      const schema = schemas.next('new');
      await migratePostgres({ connectionString: url, schema });
      await withClient((client) =>
        client.query(
          `INSERT INTO "${schema}".schema_migrations (version, name) VALUES (99, 'future')`,
        ),
      );
      for (const migrate of [true, false]) {
        const error = await rejection(
          openPostgresStore({ connectionString: url, schema, migrate }),
        );
        expect(error.code).toBe('schema_too_new');
        expect(error.message).toContain(
          `schema version 99, newer than this ctxbus knows (${POSTGRES_SCHEMA_VERSION}); upgrade ctxbus`,
        );
      }
      expect((await rejection(migratePostgres({ connectionString: url, schema }))).code).toBe(
        'schema_too_new',
      );
    });

    it('lets hubs starting together migrate one schema once', async () => {
      const schema = schemas.next('race');
      const results = await Promise.all(
        Array.from({ length: 4 }, () => migratePostgres({ connectionString: url, schema })),
      );
      const applied = results.flatMap((result) => result.applied.map((step) => step.version));
      expect(applied.sort((a, b) => a - b)).toEqual(
        Array.from({ length: POSTGRES_SCHEMA_VERSION }, (_, index) => index + 1),
      );
      const versions = await withClient(
        async (client) =>
          (await client.query(`SELECT version FROM "${schema}".schema_migrations ORDER BY version`))
            .rows,
      );
      expect(versions.map((row) => row.version)).toHaveLength(POSTGRES_SCHEMA_VERSION);
    });

    it('checks its options and never shows a password', async () => {
      expect(
        (await rejection(openPostgresStore({ connectionString: url, schema: 'Bad-Name' }))).code,
      ).toBe('validation_failed');
      const error = await rejection(
        openPostgresStore({ connectionString: 'postgres://someone:hunter2@127.0.0.1:1/nowhere' }),
      );
      expect(error.code).toBe('unavailable');
      expect(error.message).not.toContain('hunter2');
      expect(error.message).toContain('postgres://someone@127.0.0.1:1/nowhere');
    });

    it('reopens a store on its schema, keeping items and sequence', async () => {
      const schema = schemas.next('reopen');
      const first = await openPostgresStore({ connectionString: url, schema });
      const [outcome] = await first.writeItems([prepared({ title: 'kept' })]);
      await first.close();
      await expect(first.getItem(acme, outcome?.item.id ?? '')).rejects.toThrow('closed');
      const again = await openPostgresStore({ connectionString: url, schema, migrate: false });
      expect(await again.getItem(acme, outcome?.item.id ?? '')).toEqual(outcome?.item);
      expect(await again.latestSeq()).toBe(1);
      await again.close();
    });

    it('works on a pool it does not own, and leaves that pool open', async () => {
      const pool = new pg.Pool({ connectionString: url, max: 3 });
      try {
        const schema = schemas.next('pool');
        const store = await openPostgresStore({ pool, schema });
        await store.writeItems([prepared({ title: 'pooled' })]);
        await store.close();
        const count = await pool.query(`SELECT count(*)::int AS n FROM "${schema}".items`);
        expect(count.rows[0]?.n).toBe(1);
      } finally {
        await pool.end();
      }
    });
  });

  describe('postgres task outbox', () => {
    /** A store on a new schema, a task maker and the outbox's sequences past `after`. */
    async function outboxStore(name: string) {
      const schema = schemas.next(name);
      const store = await openPostgresStore({ connectionString: url, schema });
      const newTask = (title: string) =>
        store.createTask('acme', {
          title,
          requiredCapabilities: ['search'],
          origin: 'openclaw',
          targetRuntime: 'claude-code',
        });
      const seqs = async (after: number) =>
        (await store.listTaskOutbox(after, 100)).map((outbox) => outbox.event.seq);
      return { schema, store, newTask, seqs };
    }

    /** Appends an event to task `id` on `client`'s open transaction, as a task change does. */
    async function appendEvent(client: pg.Client, id: string, copyOf: number): Promise<number> {
      const { rows } = await client.query<{ seq: string }>(
        `INSERT INTO task_events
           (task_rid, task_id, team_id, at, from_state, to_state, by, note, kind, actor, task)
         SELECT rid, id, team_id, now(), state, state, 'test', 'open', 'updated', 'test',
                (SELECT task FROM task_events WHERE seq = $2)
           FROM tasks WHERE id = $1
         RETURNING seq`,
        [id, copyOf],
      );
      return Number(rows[0]?.seq);
    }

    it('hands the relay events in sequence order, past a missing sequence only once its transaction has ended', async () => {
      const { schema, store, newTask, seqs } = await outboxStore('outbox');
      try {
        const first = await newTask('first');
        const [firstSeq = 0] = await seqs(0);
        await withClient(async (client) => {
          await client.query(`SET search_path TO "${schema}"`);
          // An event appended as a task change does it (the task row first), left uncommitted.
          const appendOpen = async () => {
            await client.query('BEGIN');
            await client.query('UPDATE tasks SET updated_at = updated_at WHERE id = $1', [
              first.task.id,
            ]);
            return appendEvent(client, first.task.id, firstSeq);
          };
          // A later event commits while an earlier one is still open: the read stops before
          // the open one, then hands both, in sequence order, once it commits.
          const open = await appendOpen();
          await newTask('later');
          expect(await seqs(0)).toEqual([firstSeq]);
          await client.query('COMMIT');
          const committed = await seqs(0);
          expect(committed.slice(0, 2)).toEqual([firstSeq, open]);
          const laterSeq = committed[2] ?? 0;
          expect(laterSeq).toBeGreaterThan(open);
          // One that rolls back is passed over, once its transaction has ended.
          const rolledBack = await appendOpen();
          await newTask('after');
          expect(await seqs(laterSeq)).toEqual([]);
          await client.query('ROLLBACK');
          await expect.poll(() => seqs(laterSeq), { interval: 20 }).toEqual([expect.any(Number)]);
          expect((await seqs(laterSeq))[0]).toBeGreaterThan(rolledBack);
        });
      } finally {
        await store.close();
      }
    });
    it('waits for an open event whose transaction id is newer than a later committed one', async () => {
      // The transaction that commits the later event took its id first; the open one took its
      // id after, then its sequence first. A snapshot's xmax (the newest ended id plus one)
      // then lies at or below the open transaction's id: it is not a bound on the holder.
      const { schema, store, newTask, seqs } = await outboxStore('outboxxid');
      try {
        const first = await newTask('first');
        const second = await newTask('second');
        const [, lastSeq = 0] = await seqs(0);
        await withClient((early) =>
          withClient(async (late) => {
            for (const client of [early, late]) {
              await client.query(`SET search_path TO "${schema}"`);
              await client.query('BEGIN');
            }
            const touch = (client: pg.Client, id: string) =>
              client.query('UPDATE tasks SET updated_at = updated_at WHERE id = $1', [id]);
            const append = (client: pg.Client, id: string) => appendEvent(client, id, lastSeq);
            await touch(early, first.task.id); // the older transaction id
            await touch(late, second.task.id); // the newer one
            const open = await append(late, second.task.id); // takes its sequence first
            const committed = await append(early, first.task.id);
            await early.query('COMMIT');
            expect(committed).toBe(open + 1);
            // Read twice while it is open: the gap is neither closed at once nor on the next read.
            expect(await seqs(lastSeq)).toEqual([]);
            expect(await seqs(lastSeq)).toEqual([]);
            await late.query('COMMIT');
            expect(await seqs(lastSeq)).toEqual([open, committed]);
          }),
        );
      } finally {
        await store.close();
      }
    });
  });

  describe('postgres group commit and sequence', () => {
    it('gives writers on separate pools one gapless sequence, visible in order', async () => {
      const schema = schemas.next('seq');
      const writers = await Promise.all(
        Array.from({ length: 4 }, () => openPostgresStore({ connectionString: url, schema })),
      );
      const reader = await openPostgresStore({ connectionString: url, schema });
      // A reader tailing the feed while the writers run must never see a gap: N+1 becomes
      // visible only after N.
      let running = true;
      let seen = 0;
      const tailed: number[] = [];
      const tail = (async () => {
        while (running || seen < (await reader.latestSeq())) {
          const changes = await reader.readChanges({ afterSeq: seen, limit: 500 });
          for (const change of changes) {
            expect(change.seq, 'the feed skipped a sequence number').toBe(seen + 1);
            seen = change.seq;
            tailed.push(change.seq);
          }
        }
      })();
      const perWriter = 60;
      const written = await Promise.all(
        writers.map(async (store, index) => {
          const viewer = { teamId: 'acme', runtime: `writer-${index}` };
          const ids: string[] = [];
          for (let wave = 0; wave < perWriter / 12; wave++) {
            const outcomes = await Promise.all(
              Array.from({ length: 12 }, (_, n) =>
                store.writeItems([prepared({ title: `w${index}-${wave}-${n}` }, viewer)]),
              ),
            );
            for (const [outcome] of outcomes) ids.push(outcome?.item.id ?? '');
            // Consumptions take sequence numbers too, from the same counter.
            const consumed = await store.consumeItem(
              { teamId: 'acme', runtime: `reader-${index}` },
              ids.at(-1) ?? '',
            );
            expect(consumed?.consumed).toBe(true);
          }
          return ids;
        }),
      );
      running = false;
      await tail;
      const total = writers.length * perWriter;
      const consumptions = writers.length * (perWriter / 12);
      const changes: Change[] = await reader.readChanges({ afterSeq: 0, limit: 10_000 });
      expect(changes.map((change) => change.seq)).toEqual(
        Array.from({ length: total + consumptions }, (_, index) => index + 1),
      );
      expect(tailed).toEqual(changes.map((change) => change.seq));
      const added = changes.filter((change) => change.kind === 'added');
      expect(added).toHaveLength(total);
      expect(new Set(added.map((change) => change.item.id)).size).toBe(total);
      expect(new Set(written.flat())).toEqual(new Set(added.map((change) => change.item.id)));
      expect(added.every((change) => change.item.seq === change.seq)).toBe(true);
      expect(await reader.latestSeq()).toBe(total + consumptions);
      await Promise.all([...writers, reader].map((store) => store.close()));
    });

    it('keeps one holder per key when hubs write the same key at once', async () => {
      const schema = schemas.next('key');
      const stores = await Promise.all(
        Array.from({ length: 3 }, () => openPostgresStore({ connectionString: url, schema })),
      );
      await Promise.all(
        stores.flatMap((store, index) =>
          Array.from({ length: 10 }, (_, n) =>
            store.writeItems([prepared({ title: `v${index}-${n}`, key: 'project/stack' })]),
          ),
        ),
      );
      const [store] = stores;
      if (!store) throw new Error('no store');
      const live = await store.listItems(acme, { limit: 100, key: 'project/stack' });
      expect(live).toHaveLength(1);
      const all = await store.listItems(acme, {
        limit: 100,
        key: 'project/stack',
        includeSuperseded: true,
      });
      expect(all).toHaveLength(30);
      // One chain, newest first: each item superseded the one written just before it.
      all.forEach((item, index) => {
        expect(item.supersededBy).toBe(index === 0 ? null : all[index - 1]?.id);
        expect(item.supersedes).toBe(all[index + 1]?.id ?? null);
      });
      // The same id from two hubs at once: one creates it, the other gets it back.
      const id = '0192f000-0000-7000-8000-00000000aaaa';
      const outcomes = await Promise.all(
        stores.map((each) => each.writeItems([prepared({ id, title: 'same' })])),
      );
      expect(outcomes.map(([outcome]) => outcome?.status).sort()).toEqual([
        'created',
        'existing',
        'existing',
      ]);
      await Promise.all(stores.map((each) => each.close()));
    });

    it('fails only the write PostgreSQL refuses, through savepoints', async () => {
      const schema = schemas.next('savepoint');
      const store = await openPostgresStore({ connectionString: url, schema });
      // A constraint the store's own rules know nothing about: the database refuses the
      // combined statement, and the group is replayed one savepoint per write.
      await withClient((client) =>
        client.query(
          `ALTER TABLE "${schema}".items ADD CONSTRAINT no_poison CHECK (title <> 'poison')`,
        ),
      );
      const results = await Promise.allSettled([
        store.writeItems([prepared({ title: 'fine 1' })]),
        store.writeItems([prepared({ title: 'fine 2' }), prepared({ title: 'poison' })]),
        store.writeItems([prepared({ title: 'fine 3' })]),
      ]);
      expect(results.map((result) => result.status)).toEqual([
        'fulfilled',
        'rejected',
        'fulfilled',
      ]);
      const listed = await store.listItems(acme, { limit: 10 });
      expect(listed.map((item) => [item.title, item.seq])).toEqual([
        ['fine 3', 2],
        ['fine 1', 1],
      ]);
      expect(await store.latestSeq()).toBe(2);
      await store.close();
    });

    it('refuses text PostgreSQL cannot store, and keeps text it can', async () => {
      const store = await openPostgresStore({
        connectionString: url,
        schema: schemas.next('text'),
      });
      // Core's schemas refuse NUL before a write gets here; the store still guards itself
      // against items built without them.
      const unchecked = { ...prepared({ title: 'placeholder' }), title: 'nul \u0000 inside' };
      const error = await rejection(store.writeItems([unchecked]));
      expect(error.code).toBe('validation_failed');
      expect(error.message).toContain('title');
      const [outcome] = await store.writeItems([
        prepared({
          title: 'broken \ud800 surrogate',
          content: 'quotes \' " \\ and 🙂 ünïcödé',
          runtimeOptions: { web: { b: 1, a: [2, { c: null }] } },
        }),
      ]);
      expect(outcome?.item.title).toBe('broken \ufffd surrogate');
      expect(await store.getItem(acme, outcome?.item.id ?? '')).toEqual(outcome?.item);
      const hits = await store.searchItems(acme, { query: 'ünïcödé surrogate', limit: 5 });
      expect(hits.map((hit) => hit.item.id)).toEqual([outcome?.item.id]);
      await store.close();
    });
  });

  describe('postgres change notifications', () => {
    const waitFor = async (check: () => boolean, what: string, timeoutMs = 90_000) => {
      const until = Date.now() + timeoutMs;
      while (!check()) {
        if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };

    it("tells one process about another's commits, one notification per transaction", async () => {
      const schema = schemas.next('notify');
      const writer = await openPostgresStore({ connectionString: url, schema });
      const reader = await openPostgresStore({ connectionString: url, schema });
      try {
        const seen: number[] = [];
        const watching = reader.watchChanges((seq) => seen.push(seq));
        await waitFor(() => seen.length > 0, 'the catch-up hint after connecting');
        expect(seen).toEqual([0]);
        await writer.writeItems([
          prepared({ title: 'a' }),
          prepared({ title: 'b' }),
          prepared({ title: 'c' }),
        ]);
        await waitFor(() => seen.includes(3), 'the notification of seq 3');
        // The three items were one transaction: one notification, carrying the newest seq.
        expect(seen).toEqual([0, 3]);
        expect(reader.listenConnections).toBe(1);
        watching.close();
      } finally {
        await writer.close();
        await reader.close();
      }
    });

    it('finds a half-open LISTEN connection with its keepalive probe, and reconnects', async () => {
      // A TCP proxy in front of the server that can silently stop forwarding (a network
      // partition: no FIN, no RST), as a dead NAT or a failed-over server would.
      const server = new URL(url);
      const sockets: { client: Socket; upstream: Socket; silent: boolean }[] = [];
      const proxy = createServer((client) => {
        const upstream = connect(Number(server.port || 5432), server.hostname);
        const pair = { client, upstream, silent: false };
        sockets.push(pair);
        client.on('data', (chunk) => {
          if (!pair.silent) upstream.write(chunk);
        });
        upstream.on('data', (chunk) => {
          if (!pair.silent) client.write(chunk);
        });
        const close = () => {
          client.destroy();
          upstream.destroy();
        };
        client.on('error', close);
        upstream.on('error', close);
        client.on('close', close);
        upstream.on('close', close);
      });
      await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
      const proxied = new URL(url);
      proxied.hostname = '127.0.0.1';
      proxied.port = String((proxy.address() as AddressInfo).port);
      const schema = schemas.next('halfopen');
      const writer = await openPostgresStore({ connectionString: url, schema });
      const reader = await openPostgresStore({
        connectionString: proxied.toString(),
        schema,
        listen: { keepaliveMs: 200, probeTimeoutMs: 300 },
      });
      try {
        const seen: number[] = [];
        const watching = reader.watchChanges((seq) => seen.push(seq));
        await waitFor(() => reader.listenConnections === 1, 'the first LISTEN connection');
        // The LISTEN connection (the newest one) goes silent for good; the pool's connections
        // and new ones get through.
        const listening = sockets.at(-1);
        if (listening) listening.silent = true;
        await writer.writeItems([prepared({ title: 'written into the silence' })]);
        await waitFor(
          () => reader.listenConnections >= 2,
          'the reconnection after a probe timeout',
        );
        await waitFor(() => seen.includes(1), 'the catch-up hint covering seq 1');
        await writer.writeItems([prepared({ title: 'after' })]);
        await waitFor(() => seen.includes(2), 'the notification of seq 2');
        watching.close();
      } finally {
        await writer.close();
        await reader.close();
        for (const pair of sockets) pair.client.destroy();
        await new Promise((resolve) => proxy.close(resolve));
      }
    });

    it('keeps serving when the connections it holds are killed under writes', async () => {
      const schema = schemas.next('killedpool');
      // Its own pool, named, so that only its backends are terminated.
      const name = `ctxbus_killed_${process.pid}`;
      const pool = new pg.Pool({ connectionString: url, application_name: name, max: 4 });
      const store = await openPostgresStore({ pool, schema });
      let stop = false;
      let written = 0;
      const failures: unknown[] = [];
      const writers = [1, 2, 3, 4].map(async (writer) => {
        for (let index = 0; !stop; index++) {
          // Batches inside transactions and single writes: clients held across round trips.
          await store
            .writeItems([prepared({ title: `w${writer}-${index}` }), prepared({ title: 'pair' })])
            .then(
              () => {
                written += 1;
              },
              (error: unknown) => failures.push(error),
            );
        }
      });
      try {
        await waitFor(() => written >= 20, 'the first writes');
        for (let round = 0; round < 3; round++) {
          await withClient((client) =>
            client.query(
              'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1',
              [name],
            ),
          );
          const before = written;
          await waitFor(() => written >= before + 20, `writes after kill ${round + 1}`);
        }
      } finally {
        stop = true;
        await Promise.all(writers);
        await store.close();
        await pool.end();
      }
      // The writes a kill cut off failed as the store's errors (the caller may retry them).
      for (const failure of failures)
        expect(CtxbusError.isInstance(failure), String(failure)).toBe(true);
    });

    it('survives its LISTEN backend being killed: reconnects and hints what it missed', async () => {
      const schema = schemas.next('killed');
      const writer = await openPostgresStore({ connectionString: url, schema });
      const reader = await openPostgresStore({ connectionString: url, schema });
      try {
        const seen: number[] = [];
        const watching = reader.watchChanges((seq) => seen.push(seq));
        await waitFor(() => reader.listenConnections === 1, 'the first LISTEN connection');
        const killed = await withClient((client) =>
          client.query(
            'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1',
            [listenerName(schema)],
          ),
        );
        expect(killed.rowCount).toBeGreaterThan(0);
        // Written while the listener is down: only the catch-up hint can tell about it.
        await writer.writeItems([prepared({ title: 'during the outage' })]);
        await waitFor(() => reader.listenConnections >= 2, 'the reconnection');
        await waitFor(() => seen.includes(1), 'the catch-up hint covering seq 1');
        await writer.writeItems([prepared({ title: 'after' })]);
        await waitFor(() => seen.includes(2), 'the notification of seq 2');
        watching.close();
      } finally {
        await writer.close();
        await reader.close();
      }
    });
  });
}

/** A node of EXPLAIN's JSON plan, with the fields read here. */
interface PlanNode {
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  'Rows Removed by Filter'?: number;
  Plans?: PlanNode[];
}

/** Every node of a plan, depth first. */
function planNodes(node: PlanNode | undefined): PlanNode[] {
  return node ? [node, ...(node.Plans ?? []).flatMap(planNodes)] : [];
}
