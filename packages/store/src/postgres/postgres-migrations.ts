import { CtxbusError } from '@ctxbus/core';
import type { PoolClient } from 'pg';
import type { PostgresConnectionOptions, PostgresTarget } from './postgres-connection.js';
import { connectPostgres } from './postgres-connection.js';
import { toStoreError } from './postgres-errors.js';

/** One schema step of the PostgreSQL backend. `sql` gets the quoted schema name. */
export interface PostgresMigration {
  version: number;
  name: string;
  sql: (schema: string) => string;
}

export const POSTGRES_MIGRATIONS: readonly PostgresMigration[] = [
  {
    version: 1,
    name: 'initial',
    sql: (s) => `
      -- The store's one counter row. Every write transaction locks it first (SELECT ... FOR
      -- UPDATE) and keeps the lock until it commits, so sequence numbers are handed out in
      -- commit order and never skipped: see the PostgresStore comment. items counts rows for
      -- the search statistics.
      CREATE TABLE ${s}.counter (
        id boolean PRIMARY KEY DEFAULT true CHECK (id),
        seq bigint NOT NULL,
        items bigint NOT NULL
      );
      INSERT INTO ${s}.counter (id, seq, items) VALUES (true, 0, 0);

      CREATE TABLE ${s}.changes (
        seq bigint PRIMARY KEY,
        kind text NOT NULL CHECK (kind IN ('added', 'consumed', 'superseded')),
        item_rid bigint NOT NULL,
        team_id text COLLATE "C" NOT NULL,
        at timestamptz NOT NULL
      );
      CREATE INDEX changes_team_seq ON ${s}.changes (team_id, seq);

      -- rid is the seq of the change that added the item. Identifiers use the C collation:
      -- prefix ranges and ordering then work byte-wise, as in core's reference semantics.
      CREATE TABLE ${s}.items (
        rid bigint PRIMARY KEY,
        id text COLLATE "C" NOT NULL UNIQUE,
        team_id text COLLATE "C" NOT NULL,
        type text NOT NULL,
        title text NOT NULL,
        content text NOT NULL,
        summary text NOT NULL,
        tags text[] NOT NULL,
        source_runtime text COLLATE "C" NOT NULL,
        source_agent text,
        source_task text,
        source_thread text COLLATE "C",
        scope text NOT NULL,
        scope_key text COLLATE "C",
        scope_kind text,
        urgency smallint NOT NULL,
        visibility text NOT NULL,
        created_at timestamptz NOT NULL,
        expires_at timestamptz,
        supersedes text COLLATE "C",
        superseded_by text COLLATE "C",
        item_key text COLLATE "C",
        -- json, not jsonb: kept exactly as written (key order included).
        runtime_options json NOT NULL,
        redactions json NOT NULL,
        tokens integer NOT NULL,
        input_hash text NOT NULL,
        consumed boolean NOT NULL DEFAULT false,
        consumed_by jsonb NOT NULL DEFAULT '[]',
        -- Lexemes are the shared search pipeline's Porter stems (see postgres-search.ts),
        -- weighted A title, B content, C summary, D tags.
        search tsvector NOT NULL
      );
      CREATE INDEX items_team_rid ON ${s}.items (team_id, rid);
      CREATE INDEX items_team_type_rid ON ${s}.items (team_id, type, rid);
      CREATE INDEX items_team_urgency_rid ON ${s}.items (team_id, urgency, rid);
      CREATE INDEX items_team_scope_kind_rid ON ${s}.items (team_id, scope_kind, rid)
        WHERE scope_kind IS NOT NULL;
      CREATE INDEX items_team_scope_key_rid ON ${s}.items (team_id, scope_key, rid)
        WHERE scope_key IS NOT NULL;
      CREATE INDEX items_team_key ON ${s}.items (team_id, item_key, rid)
        WHERE item_key IS NOT NULL;
      CREATE INDEX items_team_source_rid ON ${s}.items (team_id, source_runtime, rid);
      CREATE INDEX items_team_thread_rid ON ${s}.items (team_id, source_thread, rid)
        WHERE source_thread IS NOT NULL;
      CREATE INDEX items_open_urgency ON ${s}.items (team_id, urgency, rid) WHERE NOT consumed;
      -- Covers "newest item per scope key" (active tasks, thread heads) with an index-only
      -- scan: 2 ms instead of 16 ms for 6k task statuses among 100k items.
      CREATE INDEX items_scope_heads ON ${s}.items (team_id, scope_kind, scope_key, rid)
        INCLUDE (type, visibility, source_runtime, expires_at, superseded_by, item_key)
        WHERE scope_key IS NOT NULL;
      -- GIN indexes queue new entries in a pending list that every search scans; 4 MB of it
      -- (the default limit) took 3 ms of each search after a burst of writes. 256 kB keeps the
      -- scan short and cost no measurable write throughput.
      CREATE INDEX items_tags ON ${s}.items USING gin (tags) WITH (gin_pending_list_limit = 256);
      CREATE INDEX items_search ON ${s}.items USING gin (search)
        WITH (gin_pending_list_limit = 256);

      -- Items containing each stem (all teams): lets a search leave very common terms out of
      -- the full-text match and weigh the others (see TermStatistics, updated after commits).
      CREATE TABLE ${s}.search_terms (
        term text COLLATE "C" PRIMARY KEY,
        docs bigint NOT NULL
      ) WITH (fillfactor = 80);

      CREATE TABLE ${s}.tokens (
        id text COLLATE "C" PRIMARY KEY,
        hash text NOT NULL UNIQUE,
        role text NOT NULL CHECK (role IN ('admin', 'runtime')),
        team_id text COLLATE "C",
        runtime text,
        label text,
        created_at timestamptz NOT NULL,
        revoked_at timestamptz
      );
    `,
  },
  {
    version: 2,
    name: 'subscriptions-and-archive',
    sql: (s) => `
      -- lease_* name the hub process delivering a push subscription and until when: hubs
      -- sharing the database take turns (see leaseSubscription).
      CREATE TABLE ${s}.subscriptions (
        id text COLLATE "C" PRIMARY KEY,
        team_id text COLLATE "C" NOT NULL,
        runtime text NOT NULL,
        delivery text NOT NULL CHECK (delivery IN ('push', 'pull')),
        endpoint text,
        secret text,
        label text,
        filter jsonb NOT NULL,
        created_at timestamptz NOT NULL,
        cursor bigint NOT NULL,
        attempts integer NOT NULL DEFAULT 0,
        next_attempt_at timestamptz,
        last_error text,
        delivered bigint NOT NULL DEFAULT 0,
        dead_lettered bigint NOT NULL DEFAULT 0,
        lease_holder text,
        lease_until timestamptz
      );
      CREATE INDEX subscriptions_team ON ${s}.subscriptions (team_id, created_at);

      CREATE TABLE ${s}.dead_letters (
        subscription_id text COLLATE "C" NOT NULL
          REFERENCES ${s}.subscriptions (id) ON DELETE CASCADE,
        seq bigint NOT NULL,
        event text NOT NULL,
        item_id text NOT NULL,
        attempts integer NOT NULL,
        last_error text NOT NULL,
        failed_at timestamptz NOT NULL,
        PRIMARY KEY (subscription_id, seq)
      );

      -- Items a sweep moved out of the live tables (retention mode "archive"), as API JSON.
      CREATE TABLE ${s}.archived_items (
        archive_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id text COLLATE "C" NOT NULL,
        team_id text COLLATE "C" NOT NULL,
        source_runtime text NOT NULL,
        visibility text NOT NULL,
        item jsonb NOT NULL,
        reason text NOT NULL CHECK (reason IN ('expired', 'retention')),
        archived_at timestamptz NOT NULL
      );
      CREATE INDEX archived_items_team ON ${s}.archived_items (team_id, archive_id);
      -- The sweeper's scans: expiry, and type by age.
      CREATE INDEX items_expires ON ${s}.items (expires_at) WHERE expires_at IS NOT NULL;
      CREATE INDEX items_type_created ON ${s}.items (type, created_at);
    `,
  },
  {
    version: 3,
    name: 'item-vectors',
    sql: (s) => `
      -- One vector per item and embedding model, at unit length (so a dot product is the
      -- cosine). real[] rather than pgvector's type, so the schema is the same with or without
      -- the extension: with it, searches cast to vector and use its operator. An empty vector
      -- marks an item the provider refused (not offered again).
      -- vid: the order vectors were saved in (by any hub), so a hub holding them in memory
      -- loads only the new ones. A vector is saved once and never changed.
      CREATE TABLE ${s}.item_vectors (
        model text COLLATE "C" NOT NULL,
        rid bigint NOT NULL REFERENCES ${s}.items (rid) ON DELETE CASCADE,
        vid bigint GENERATED ALWAYS AS IDENTITY,
        dims integer NOT NULL,
        vector real[] NOT NULL,
        PRIMARY KEY (model, rid)
      );
      CREATE INDEX item_vectors_rid ON ${s}.item_vectors (rid);
      CREATE INDEX item_vectors_model_vid ON ${s}.item_vectors (model, vid);
      -- The exact scan without pgvector.
      CREATE FUNCTION ${s}.ctxbus_dot(a real[], b real[]) RETURNS double precision
        LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
        AS 'SELECT sum(x::float8 * y::float8) FROM unnest(a, b) AS t(x, y)';
    `,
  },
  {
    version: 4,
    name: 'item-ids-per-team',
    sql: (s) => `
      -- Item ids are unique within a team, not across teams: another team writing an id that
      -- exists elsewhere must learn nothing (it used to get a 409).
      ALTER TABLE ${s}.items DROP CONSTRAINT items_id_key;
      -- Writes and reads look items up by id and team.
      CREATE UNIQUE INDEX items_id_team ON ${s}.items (id, team_id);
    `,
  },
  {
    version: 5,
    name: 'search-statistics-per-partition',
    sql: (s) => `
      -- Search statistics per visibility partition: a team's shared items (runtime ''), and
      -- each runtime's private items in a team. Counted over the whole hub, a team could read
      -- from its own scores which words other teams' items, and other runtimes' private
      -- items, contain; a search now adds up only the partitions its caller sees. The empty
      -- term counts the partition's items. Altered in place, so that row-level security and
      -- grants set on the table (Supabase) stay.
      LOCK TABLE ${s}.search_terms IN ACCESS EXCLUSIVE MODE;
      DELETE FROM ${s}.search_terms;
      ALTER TABLE ${s}.search_terms DROP CONSTRAINT search_terms_pkey,
        ADD COLUMN team_id text COLLATE "C" NOT NULL,
        ADD COLUMN runtime text COLLATE "C" NOT NULL,
        ADD PRIMARY KEY (team_id, runtime, term);
      INSERT INTO ${s}.search_terms (team_id, runtime, term, docs)
      SELECT p.team_id, p.runtime, p.term, count(*)
        FROM (SELECT i.team_id,
                     CASE i.visibility WHEN 'private' THEN i.source_runtime ELSE '' END AS runtime,
                     t.term
                FROM ${s}.items i,
                     LATERAL (SELECT '' AS term UNION ALL
                              SELECT unnest(tsvector_to_array(i.search))) t) p
       GROUP BY p.team_id, p.runtime, p.term;
    `,
  },
  {
    version: 6,
    name: 'tasks',
    sql: (s) => `
      -- Tasks handed between runtimes (see postgres-tasks.ts). rid is the claim order; token is
      -- the fencing token of the latest claim, kept when the lease ends so the next is higher.
      -- input, routing and result are json (kept as written); required_capabilities is jsonb
      -- for the containment test of a claim.
      CREATE TABLE ${s}.tasks (
        rid bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id text COLLATE "C" NOT NULL UNIQUE,
        team_id text COLLATE "C" NOT NULL,
        title text NOT NULL,
        description text,
        required_capabilities jsonb NOT NULL,
        origin text COLLATE "C" NOT NULL,
        scope text,
        input json,
        idempotency_key text COLLATE "C",
        state text NOT NULL CHECK (state IN ('SUBMITTED', 'WORKING', 'INPUT_REQUIRED',
          'AUTH_REQUIRED', 'COMPLETED', 'FAILED', 'CANCELED', 'REJECTED')),
        target_runtime text COLLATE "C",
        routing json,
        attempts integer NOT NULL,
        max_attempts integer NOT NULL,
        ttl_seconds integer,
        token bigint NOT NULL,
        lease_worker text,
        lease_expires_at timestamptz,
        result json,
        error json,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        expires_at timestamptz
      );
      CREATE UNIQUE INDEX tasks_idempotency ON ${s}.tasks (team_id, idempotency_key)
        WHERE idempotency_key IS NOT NULL;
      CREATE INDEX tasks_team ON ${s}.tasks (team_id, rid);
      -- A team's queue per target runtime, in claim order; and its waiting tasks, counted.
      CREATE INDEX tasks_queue ON ${s}.tasks (team_id, target_runtime, rid)
        WHERE state = 'SUBMITTED';
      CREATE INDEX tasks_waiting ON ${s}.tasks (team_id, target_runtime)
        WHERE state IN ('SUBMITTED', 'AUTH_REQUIRED');
      CREATE INDEX tasks_leases ON ${s}.tasks (lease_expires_at) WHERE state = 'WORKING';
      CREATE INDEX tasks_waits ON ${s}.tasks (expires_at) WHERE state = 'SUBMITTED';

      -- Every state change of a task, in order (from_state is NULL for the creation).
      CREATE TABLE ${s}.task_events (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        task_rid bigint NOT NULL REFERENCES ${s}.tasks (rid) ON DELETE CASCADE,
        task_id text COLLATE "C" NOT NULL,
        team_id text COLLATE "C" NOT NULL,
        at timestamptz NOT NULL,
        from_state text,
        to_state text NOT NULL,
        by text NOT NULL,
        note text
      );
      CREATE INDEX task_events_task ON ${s}.task_events (task_rid, seq);
    `,
  },
  {
    version: 7,
    name: 'task-approvals',
    sql: (s) => `
      -- A human's approval of a task's exact command; while AUTH_REQUIRED, expires_at is when
      -- the unanswered request becomes a deny.
      ALTER TABLE ${s}.tasks ADD COLUMN approval json;
      CREATE INDEX tasks_approvals ON ${s}.tasks (expires_at) WHERE state = 'AUTH_REQUIRED';
    `,
  },
  {
    version: 8,
    name: 'audit-log',
    sql: (s) => `
      -- The audit log (see postgres-audit.ts): per team, hash-chained, append-only. at is the
      -- ISO time and data the JSON text exactly as hashed (text, not json: kept byte for byte).
      CREATE TABLE ${s}.audit_log (
        team_id text COLLATE "C" NOT NULL,
        seq bigint NOT NULL,
        at text NOT NULL,
        kind text NOT NULL,
        actor text NOT NULL,
        subject text NOT NULL,
        data text NOT NULL,
        prev_hash text NOT NULL,
        hash text NOT NULL,
        PRIMARY KEY (team_id, seq)
      );
      -- Each team's newest record, locked FOR UPDATE by an append: appends of one team take
      -- turns, on any number of hubs; verification checks the chain reaches it.
      CREATE TABLE ${s}.audit_heads (
        team_id text COLLATE "C" PRIMARY KEY,
        seq bigint NOT NULL,
        hash text NOT NULL
      );
    `,
  },
  {
    version: 9,
    name: 'task-lease-holders',
    sql: (s) => `
      -- The runtime that claimed a WORKING task: only it reports on the task (renew, progress,
      -- complete, fail). Leases taken before this migration record none and simply lapse.
      ALTER TABLE ${s}.tasks ADD COLUMN lease_runtime text COLLATE "C";
      -- Idempotency keys are the origin runtime's own: another runtime's key is another task.
      DROP INDEX ${s}.tasks_idempotency;
      CREATE UNIQUE INDEX tasks_idempotency ON ${s}.tasks (team_id, origin, idempotency_key)
        WHERE idempotency_key IS NOT NULL;
    `,
  },
  {
    version: 10,
    name: 'task-event-outbox',
    sql: (s) => `
      -- Task events are the outbox of the hub's task relay (see postgres-tasks.ts): what made
      -- each (kind), who (actor) and the task as the change left it. Events from before this
      -- version have none and are not relayed.
      ALTER TABLE ${s}.task_events ADD COLUMN kind text;
      ALTER TABLE ${s}.task_events ADD COLUMN actor text;
      ALTER TABLE ${s}.task_events ADD COLUMN task json;
      -- The relay's durable cursor: every event up to seq is announced and audited. since:
      -- the last event from before the outbox (verification starts after it).
      CREATE TABLE ${s}.task_relay (
        name text PRIMARY KEY,
        seq bigint NOT NULL,
        since bigint NOT NULL
      );
      INSERT INTO ${s}.task_relay (name, seq, since)
        SELECT 'tasks', coalesce(max(seq), 0), coalesce(max(seq), 0) FROM ${s}.task_events;
      -- Which task event each audit record came from: the primary key refuses a second
      -- append of one event's records.
      CREATE TABLE ${s}.audit_task_events (
        event_seq bigint PRIMARY KEY,
        team_id text COLLATE "C" NOT NULL,
        audit_seq bigint NOT NULL
      );
    `,
  },
  {
    version: 11,
    name: 'presence',
    sql: (s) => `
      -- Who is connected, per team, shared by every hub on the database (see
      -- postgres-presence.ts): a row lives until expires_at unless announced again.
      CREATE TABLE ${s}.presence (
        team_id text COLLATE "C" NOT NULL,
        instance_id text COLLATE "C" NOT NULL,
        runtime text COLLATE "C" NOT NULL,
        kind text NOT NULL,
        capabilities jsonb NOT NULL,
        capacity integer NOT NULL,
        last_seen timestamptz NOT NULL,
        expires_at timestamptz NOT NULL,
        PRIMARY KEY (team_id, instance_id)
      );
      CREATE INDEX presence_expiry ON ${s}.presence (expires_at);
    `,
  },
  {
    version: 12,
    name: 'task-lease-started',
    sql: (s) => `
      -- When the holder of a WORKING task said it was starting the command (null: not yet). A
      -- lease that runs out after it fails the task (worker_lost) instead of requeueing it:
      -- the command may have run. Leases taken before this version have none.
      ALTER TABLE ${s}.tasks ADD COLUMN lease_started_at timestamptz;
    `,
  },
  {
    version: 13,
    name: 'item-usage',
    sql: (s) => `
      -- Context analytics (postgres-usage.ts): how often each runtime was injected, consumed
      -- or found each item, per UTC day (pruned after the longest window), and each item's
      -- totals and last uses per runtime (kept while the item is).
      CREATE TABLE ${s}.item_usage_days (
        team_id text COLLATE "C" NOT NULL,
        day text COLLATE "C" NOT NULL,
        runtime text COLLATE "C" NOT NULL,
        item_id text COLLATE "C" NOT NULL,
        injected int8 NOT NULL,
        consumed int8 NOT NULL,
        searched int8 NOT NULL,
        PRIMARY KEY (team_id, day, runtime, item_id)
      );
      CREATE TABLE ${s}.item_usage (
        team_id text COLLATE "C" NOT NULL,
        item_id text COLLATE "C" NOT NULL,
        runtime text COLLATE "C" NOT NULL,
        injected int8 NOT NULL,
        consumed int8 NOT NULL,
        searched int8 NOT NULL,
        last_injected_at timestamptz,
        last_consumed_at timestamptz,
        last_searched_at timestamptz,
        PRIMARY KEY (team_id, item_id, runtime)
      );
    `,
  },
  {
    version: 14,
    name: 'item-usage-active',
    sql: (s) => `
      -- The frequently used documents (postgres-usage.ts, mostUsedItems) read only the days on
      -- which an item was consumed or found: most rows hold injections alone.
      CREATE INDEX item_usage_days_active ON ${s}.item_usage_days
        (team_id, day, item_id) INCLUDE (consumed, searched) WHERE consumed + searched > 0;
    `,
  },
  {
    version: 15,
    name: 'create-task-function',
    sql: (s) => `
      -- A create in one call whose statements keep their plans (a function's plans are cached
      -- per connection): the literal script it replaces was planned on every create (0.45 ms
      -- of the server's CPU per task under load). READ COMMITTED, VOLATILE: each statement
      -- takes its own snapshot, so the count sees every task committed before the queue lock
      -- was granted. p_lock_key null: the task does not wait (no lock, no count). Inserts the
      -- task (unless its idempotency key is taken, or the count is near p_max_waiting) and its
      -- 'created' event, whose task column is the row as the store reads it (the columns of
      -- postgres-tasks.ts; a migration that changes them replaces this function too).
      CREATE FUNCTION ${s}.create_task(
        p_task json, p_lock_key text, p_max_waiting int8,
        p_event_at timestamptz, p_by text, p_note text, p_actor text
      ) RETURNS TABLE (rid int8, waiting int8, connections int8)
      LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $fn$
      DECLARE
        n int8 := 0;
        conns int8 := current_setting('max_connections')::int8;
        new_rid int8;
      BEGIN
        IF p_lock_key IS NOT NULL THEN
          PERFORM pg_advisory_xact_lock_shared(hashtextextended(p_lock_key, 0));
          IF p_task->>'target_runtime' IS NULL THEN
            SELECT count(*) INTO n FROM (SELECT 1 FROM ${s}.tasks t
              WHERE t.team_id = p_task->>'team_id' AND t.state IN ('SUBMITTED', 'AUTH_REQUIRED')
                AND t.target_runtime IS NULL LIMIT p_max_waiting) w;
          ELSE
            SELECT count(*) INTO n FROM (SELECT 1 FROM ${s}.tasks t
              WHERE t.team_id = p_task->>'team_id' AND t.state IN ('SUBMITTED', 'AUTH_REQUIRED')
                AND t.target_runtime = p_task->>'target_runtime' LIMIT p_max_waiting) w;
          END IF;
          IF n + conns > p_max_waiting THEN
            RETURN QUERY SELECT NULL::int8, n, conns;
            RETURN;
          END IF;
        END IF;
        INSERT INTO ${s}.tasks (id, team_id, title, description, required_capabilities, origin,
            scope, input, idempotency_key, state, target_runtime, routing, attempts,
            max_attempts, ttl_seconds, token, created_at, updated_at, expires_at)
          SELECT r.id, r.team_id, r.title, r.description, r.required_capabilities, r.origin,
            r.scope, r.input, r.idempotency_key, r.state, r.target_runtime, r.routing, 0,
            r.max_attempts, r.ttl_seconds, 0, r.created_at, r.created_at, r.expires_at
            FROM json_populate_record(NULL::${s}.tasks, p_task) r
          ON CONFLICT (team_id, origin, idempotency_key) WHERE idempotency_key IS NOT NULL
            DO NOTHING
          RETURNING ${s}.tasks.rid INTO new_rid;
        IF new_rid IS NOT NULL THEN
          INSERT INTO ${s}.task_events
              (task_rid, task_id, team_id, at, from_state, to_state, by, note, kind, actor, task)
            SELECT p.rid, p.id, p.team_id, p_event_at, NULL, p.state, p_by, p_note, 'created',
                   p_actor, row_to_json(p)
              FROM (SELECT t.rid, t.id, t.team_id, t.title, t.description,
                        t.required_capabilities, t.origin, t.scope, t.input, t.idempotency_key,
                        t.state, t.target_runtime, t.routing, t.attempts, t.max_attempts,
                        t.ttl_seconds, t.token, t.lease_worker, t.lease_runtime,
                        (extract(epoch FROM t.lease_expires_at) * 1000)::int8 AS lease_expires_ms,
                        (extract(epoch FROM t.lease_started_at) * 1000)::int8 AS lease_started_ms,
                        t.result, t.error, t.approval,
                        (extract(epoch FROM t.created_at) * 1000)::int8 AS created_ms,
                        (extract(epoch FROM t.updated_at) * 1000)::int8 AS updated_ms,
                        (extract(epoch FROM t.expires_at) * 1000)::int8 AS expires_ms
                      FROM ${s}.tasks t WHERE t.rid = new_rid) p;
        END IF;
        RETURN QUERY SELECT new_rid, n, conns;
      END
      $fn$;
    `,
  },
  {
    version: 16,
    name: 'derived-id-secret',
    sql: (s) => `
      -- The secret the hub keys the ids of its own items with (Store.derivedIdSecret): two
      -- gen_random_uuid() (the server's strong random source), 244 random bits.
      CREATE TABLE ${s}.hub_secrets (name text PRIMARY KEY, value text NOT NULL);
      INSERT INTO ${s}.hub_secrets (name, value)
        VALUES ('derived-ids', replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''));
    `,
  },
  {
    version: 17,
    name: 'subscription-token',
    sql: (s) => `
      -- The token that created a subscription: revoking it ends the subscription (null:
      -- created before this version).
      ALTER TABLE ${s}.subscriptions ADD COLUMN token_id text;
    `,
  },
];

export const POSTGRES_SCHEMA_VERSION = POSTGRES_MIGRATIONS.length;

/** What `migratePostgres` did. */
export interface PostgresMigrationResult {
  schema: string;
  location: string;
  /** Schema version before (0: no ctxbus schema yet). */
  from: number;
  /** Schema version now (= POSTGRES_SCHEMA_VERSION). */
  to: number;
  applied: { version: number; name: string }[];
}

/** What `ctxbus migrate` found (or did) about pgvector. */
export interface PgvectorStatus {
  /** How this store's vector search will compare vectors. */
  vectorIndex: 'pgvector' | 'exact';
  /** True when this run created the extension. */
  created: boolean;
  /** Why it is not pgvector, when it is not. */
  reason?: string;
}

/**
 * Installs pgvector when the server has it and the database does not (CREATE EXTENSION needs
 * the right privileges; without them the store compares vectors exactly and says why).
 */
export async function ensurePgvector(target: PostgresTarget): Promise<PgvectorStatus> {
  const { rows } = await target.pool.query<{ installed: string | null; available: string | null }>(
    `SELECT (SELECT extversion FROM pg_extension WHERE extname = 'vector') AS installed,
            (SELECT default_version FROM pg_available_extensions WHERE name = 'vector') AS available`,
  );
  const found = rows[0];
  if (found?.installed) return { vectorIndex: 'pgvector', created: false };
  if (!found?.available) {
    return {
      vectorIndex: 'exact',
      created: false,
      reason: 'the server has no pgvector extension; vector search scans exactly',
    };
  }
  try {
    await target.pool.query('CREATE EXTENSION IF NOT EXISTS vector');
    target.logger.info({ location: target.location }, 'postgres: created the pgvector extension');
    return { vectorIndex: 'pgvector', created: true };
  } catch (error) {
    // Another process may have created it at the same moment.
    const again = await target.pool
      .query(`SELECT 1 FROM pg_extension WHERE extname = 'vector'`)
      .catch(() => null);
    if (again && again.rowCount === 1) return { vectorIndex: 'pgvector', created: false };
    return {
      vectorIndex: 'exact',
      created: false,
      reason: `pgvector is on the server but CREATE EXTENSION vector failed (${(error as Error).message}); a superuser can run it, until then vector search scans exactly`,
    };
  }
}

const lockKey = (schema: string) => `ctxbus-migrate:${schema}`;

/** The schema's version, 0 when it (or its migrations table) does not exist. */
export async function readSchemaVersion(
  client: PoolClient,
  target: PostgresTarget,
): Promise<number> {
  const exists = await client.query<{ present: boolean }>(
    `SELECT to_regclass($1) IS NOT NULL AS present`,
    [`${target.quotedSchema}.schema_migrations`],
  );
  if (!exists.rows[0]?.present) return 0;
  const result = await client.query<{ version: number | null }>(
    `SELECT max(version)::int AS version FROM ${target.quotedSchema}.schema_migrations`,
  );
  return result.rows[0]?.version ?? 0;
}

function tooNew(target: PostgresTarget, current: number): CtxbusError {
  return new CtxbusError(
    'schema_too_new',
    `the database at ${target.location} has schema version ${current}, newer than this ctxbus knows (${POSTGRES_SCHEMA_VERSION}); upgrade ctxbus`,
    { details: { current, known: POSTGRES_SCHEMA_VERSION, schema: target.schema } },
  );
}

/**
 * Refuses a schema this code cannot use: newer than the code (always), or older when
 * migrations are not applied on open.
 */
export async function assertSchemaCurrent(
  client: PoolClient,
  target: PostgresTarget,
): Promise<void> {
  const current = await readSchemaVersion(client, target);
  if (current > POSTGRES_SCHEMA_VERSION) throw tooNew(target, current);
  if (current < POSTGRES_SCHEMA_VERSION) {
    throw new CtxbusError(
      'unavailable',
      `the database at ${target.location} has schema version ${current}, older than this ctxbus needs (${POSTGRES_SCHEMA_VERSION}); run \`ctxbus migrate --store ${target.location}\` first`,
      {
        details: { current, needed: POSTGRES_SCHEMA_VERSION, schema: target.schema },
        retryable: false,
      },
    );
  }
}

/**
 * Applies pending migrations, each in its own transaction under a transaction-level advisory
 * lock keyed by the schema: hubs starting together on one database take turns, and each
 * re-reads the version under the lock, so a migration is never applied twice.
 */
export async function applyPostgresMigrations(
  target: PostgresTarget,
): Promise<PostgresMigrationResult> {
  const client = await target.pool.connect().catch((error: unknown) => {
    throw toStoreError(error, 'connect', target.location);
  });
  let released = false;
  try {
    const from = await readSchemaVersion(client, target);
    if (from > POSTGRES_SCHEMA_VERSION) throw tooNew(target, from);
    const applied: PostgresMigrationResult['applied'] = [];
    for (const migration of POSTGRES_MIGRATIONS) {
      if (migration.version <= from) continue;
      await client.query('BEGIN ISOLATION LEVEL READ COMMITTED');
      try {
        await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [
          lockKey(target.schema),
        ]);
        await client.query(`CREATE SCHEMA IF NOT EXISTS ${target.quotedSchema}`);
        await client.query(
          `CREATE TABLE IF NOT EXISTS ${target.quotedSchema}.schema_migrations (
             version integer PRIMARY KEY,
             name text NOT NULL,
             applied_at timestamptz NOT NULL DEFAULT now()
           )`,
        );
        const current = await readSchemaVersion(client, target);
        if (current > POSTGRES_SCHEMA_VERSION) throw tooNew(target, current);
        if (current < migration.version) {
          await client.query(migration.sql(target.quotedSchema));
          await client.query(
            `INSERT INTO ${target.quotedSchema}.schema_migrations (version, name) VALUES ($1, $2)`,
            [migration.version, migration.name],
          );
          applied.push({ version: migration.version, name: migration.name });
        }
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      }
    }
    for (const step of applied) {
      target.logger.info(
        { schema: target.schema, version: step.version, migration: step.name },
        'postgres: applied migration',
      );
    }
    return {
      schema: target.schema,
      location: target.location,
      from,
      to: POSTGRES_SCHEMA_VERSION,
      applied,
    };
  } catch (error) {
    const failure = toStoreError(error, 'migrate', target.location);
    if (!CtxbusError.isInstance(error)) {
      client.release(error instanceof Error ? error : true);
      released = true;
    }
    throw failure;
  } finally {
    if (!released) client.release();
  }
}

/**
 * `ctxbus migrate` for PostgreSQL: brings the schema up to this code's version (creating it
 * on an empty database) and reports what it did. Refuses a schema newer than the code.
 */
export async function migratePostgres(
  options: PostgresConnectionOptions,
): Promise<PostgresMigrationResult & { vectors: PgvectorStatus }> {
  const target = await connectPostgres(options);
  try {
    const result = await applyPostgresMigrations(target);
    let vectors: PgvectorStatus;
    try {
      vectors = await ensurePgvector(target);
    } catch (error) {
      throw toStoreError(error, 'detect pgvector', target.location);
    }
    return { ...result, vectors };
  } finally {
    if (target.ownsPool) await target.pool.end();
  }
}
