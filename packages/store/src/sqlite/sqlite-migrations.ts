import type { DatabaseSync } from 'node:sqlite';
import { CtxbusError } from '@ctxbus/core';
import type { SqliteConnection } from './sqlite-connection.js';
import { splitSearchIndex, unindexTaskStatusItems } from './sqlite-search.js';

/** One schema step of the SQLite backend. Applied in order, each in its own transaction. */
export interface SqliteMigration {
  version: number;
  name: string;
  sql: string;
  /**
   * A table rebuild: run with foreign keys off (else dropping the old table would delete the
   * rows that reference it), then checked with `PRAGMA foreign_key_check`. Indexes of the
   * rebuilt table listed here are created again after it.
   */
  rebuilds?: string;
  /** Work that SQL alone cannot express, run after `sql` in the same transaction. */
  run?: (db: DatabaseSync) => void;
}

export const SQLITE_MIGRATIONS: readonly SqliteMigration[] = [
  {
    version: 1,
    name: 'initial',
    sql: `
      -- Every change gets the next seq: INTEGER PRIMARY KEY in a single-writer database is
      -- max(seq)+1, so the sequence is gapless and monotonic.
      CREATE TABLE changes (
        seq INTEGER PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('added', 'consumed', 'superseded')),
        item_rid INTEGER NOT NULL,
        team_id TEXT NOT NULL,
        at INTEGER NOT NULL
      );
      CREATE INDEX changes_team_seq ON changes (team_id, seq);

      -- rid is the seq of the change that added the item.
      CREATE TABLE items (
        rid INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        team_id TEXT NOT NULL,
        type TEXT NOT NULL,
        title TEXT NOT NULL,
        content TEXT NOT NULL,
        summary TEXT NOT NULL,
        tags TEXT NOT NULL,
        source_runtime TEXT NOT NULL,
        source_agent TEXT,
        source_task TEXT,
        source_thread TEXT,
        scope TEXT NOT NULL,
        scope_key TEXT,
        scope_kind TEXT,
        urgency INTEGER NOT NULL,
        visibility TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER,
        supersedes TEXT,
        superseded_by TEXT,
        item_key TEXT,
        runtime_options TEXT NOT NULL,
        redactions TEXT NOT NULL,
        tokens INTEGER NOT NULL,
        input_hash TEXT NOT NULL,
        consumed INTEGER NOT NULL DEFAULT 0,
        consumed_by TEXT NOT NULL DEFAULT '[]'
      );
      CREATE INDEX items_team_rid ON items (team_id, rid);
      CREATE INDEX items_team_type_rid ON items (team_id, type, rid);
      CREATE INDEX items_team_urgency_rid ON items (team_id, urgency, rid);
      CREATE INDEX items_team_scope_kind_rid ON items (team_id, scope_kind, rid) WHERE scope_kind IS NOT NULL;
      CREATE INDEX items_team_scope_key_rid ON items (team_id, scope_key, rid) WHERE scope_key IS NOT NULL;
      CREATE INDEX items_team_key ON items (team_id, item_key, rid) WHERE item_key IS NOT NULL;
      CREATE INDEX items_team_source_rid ON items (team_id, source_runtime, rid);
      CREATE INDEX items_expires ON items (expires_at) WHERE expires_at IS NOT NULL;

      CREATE TABLE item_tags (
        tag TEXT NOT NULL,
        rid INTEGER NOT NULL,
        PRIMARY KEY (tag, rid)
      ) WITHOUT ROWID;

      CREATE VIRTUAL TABLE items_fts USING fts5 (
        title, content, summary, tags,
        content = 'items', content_rowid = 'rid',
        tokenize = 'porter unicode61 remove_diacritics 2'
      );

      CREATE TABLE tokens (
        id TEXT PRIMARY KEY,
        hash TEXT NOT NULL UNIQUE,
        role TEXT NOT NULL CHECK (role IN ('admin', 'runtime')),
        team_id TEXT,
        runtime TEXT,
        label TEXT,
        created_at INTEGER NOT NULL,
        revoked_at INTEGER
      );
    `,
  },
  {
    version: 2,
    name: 'read-path-indexes',
    sql: `
      -- Covers "newest item per scope key" (active tasks, thread heads) without table reads:
      -- 0.9 ms instead of 2.8 ms for 6k task statuses among 100k items.
      CREATE INDEX items_scope_heads ON items (
        team_id, scope_kind, scope_key, rid, type, visibility, source_runtime, expires_at,
        superseded_by, item_key
      ) WHERE scope_key IS NOT NULL;
      -- What still waits on someone (blocked items): unconsumed items by urgency and type.
      CREATE INDEX items_open_urgency ON items (team_id, urgency, rid) WHERE consumed = 0;
      CREATE INDEX items_open_type ON items (team_id, type, urgency, rid) WHERE consumed = 0;
    `,
  },
  {
    version: 3,
    name: 'search-context',
    sql: `
      -- Document frequencies by stem, so very common question words can stay out of a MATCH.
      CREATE VIRTUAL TABLE items_fts_vocab USING fts5vocab(items_fts, 'row');
      -- Neighbouring items of a thread, for the re-ranker's thread context.
      CREATE INDEX items_team_thread_rid ON items (team_id, source_thread, rid)
        WHERE source_thread IS NOT NULL;
    `,
  },
  {
    version: 4,
    name: 'subscriptions-and-archive',
    sql: `
      -- Times are epoch milliseconds, like every other table here. lease_* name the hub
      -- process delivering a push subscription and until when (see leaseSubscription).
      CREATE TABLE subscriptions (
        id TEXT PRIMARY KEY,
        team_id TEXT NOT NULL,
        runtime TEXT NOT NULL,
        delivery TEXT NOT NULL CHECK (delivery IN ('push', 'pull')),
        endpoint TEXT,
        secret TEXT,
        label TEXT,
        filter TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        cursor INTEGER NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_at INTEGER,
        last_error TEXT,
        delivered INTEGER NOT NULL DEFAULT 0,
        dead_lettered INTEGER NOT NULL DEFAULT 0,
        lease_holder TEXT,
        lease_until INTEGER
      );
      CREATE INDEX subscriptions_team ON subscriptions (team_id, created_at);

      CREATE TABLE dead_letters (
        subscription_id TEXT NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        event TEXT NOT NULL,
        item_id TEXT NOT NULL,
        attempts INTEGER NOT NULL,
        last_error TEXT NOT NULL,
        failed_at INTEGER NOT NULL,
        PRIMARY KEY (subscription_id, seq)
      ) WITHOUT ROWID;

      -- Items a sweep moved out of the live tables (retention mode "archive"), as API JSON.
      CREATE TABLE archived_items (
        archive_id INTEGER PRIMARY KEY,
        id TEXT NOT NULL,
        team_id TEXT NOT NULL,
        source_runtime TEXT NOT NULL,
        visibility TEXT NOT NULL,
        item TEXT NOT NULL,
        reason TEXT NOT NULL CHECK (reason IN ('expired', 'retention')),
        archived_at INTEGER NOT NULL
      );
      CREATE INDEX archived_items_team ON archived_items (team_id, archive_id);
      -- The sweeper's scans: by type and age.
      CREATE INDEX items_type_created ON items (type, created_at);
    `,
  },
  {
    version: 5,
    name: 'item-vectors',
    sql: `
      -- One vector per item and embedding model: little-endian float32 at unit length. An
      -- empty vector marks an item the provider refused (not offered again). Rows go with
      -- their item (foreign keys are on). vid: the order vectors were saved in (never
      -- reused: AUTOINCREMENT), so the in-memory scan loads only new ones.
      CREATE TABLE item_vectors (
        vid INTEGER PRIMARY KEY AUTOINCREMENT,
        model TEXT NOT NULL,
        rid INTEGER NOT NULL REFERENCES items (rid) ON DELETE CASCADE,
        vector BLOB NOT NULL,
        UNIQUE (model, rid)
      );
      CREATE INDEX item_vectors_rid ON item_vectors (rid);
    `,
  },
  {
    version: 6,
    name: 'item-ids-per-team',
    rebuilds: 'items',
    sql: `
      -- Item ids are unique within a team, not across teams: another team writing an id that
      -- exists elsewhere must learn nothing (it used to get a 409). SQLite cannot drop the
      -- column's UNIQUE, so the table is rebuilt, rows and rids as they are.
      CREATE TABLE items_rebuilt (
        rid INTEGER PRIMARY KEY,
        id TEXT NOT NULL,
        team_id TEXT NOT NULL,
        type TEXT NOT NULL,
        title TEXT NOT NULL,
        content TEXT NOT NULL,
        summary TEXT NOT NULL,
        tags TEXT NOT NULL,
        source_runtime TEXT NOT NULL,
        source_agent TEXT,
        source_task TEXT,
        source_thread TEXT,
        scope TEXT NOT NULL,
        scope_key TEXT,
        scope_kind TEXT,
        urgency INTEGER NOT NULL,
        visibility TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER,
        supersedes TEXT,
        superseded_by TEXT,
        item_key TEXT,
        runtime_options TEXT NOT NULL,
        redactions TEXT NOT NULL,
        tokens INTEGER NOT NULL,
        input_hash TEXT NOT NULL,
        consumed INTEGER NOT NULL DEFAULT 0,
        consumed_by TEXT NOT NULL DEFAULT '[]'
      );
      INSERT INTO items_rebuilt SELECT * FROM items;
      DROP TABLE items;
      ALTER TABLE items_rebuilt RENAME TO items;
      -- id first: writes and reads look items up by id (and team).
      CREATE UNIQUE INDEX items_id_team ON items (id, team_id);
    `,
  },
  {
    version: 7,
    name: 'search-index-per-partition',
    sql: `
      -- One full-text index per visibility partition: a team's shared items (runtime ''), and
      -- each runtime's private items in a team. FTS5 ranks with the statistics of the index
      -- it searches, so a search must read only indexes whose items its caller may see (see
      -- sqlite-search.ts). Each partition's index is search_fts_<pid>, its document
      -- frequencies search_fts_<pid>_vocab; items counts its rows.
      CREATE TABLE search_partitions (
        pid INTEGER PRIMARY KEY,
        team_id TEXT NOT NULL,
        runtime TEXT NOT NULL,
        items INTEGER NOT NULL,
        UNIQUE (team_id, runtime)
      );
    `,
    run: splitSearchIndex,
  },
  {
    version: 8,
    name: 'tasks',
    sql: `
      -- Tasks handed between runtimes (see sqlite-tasks.ts). rid is the claim order; token is
      -- the fencing token of the latest claim, kept when the lease ends so the next is higher.
      -- Times are epoch milliseconds; JSON columns are text.
      CREATE TABLE tasks (
        rid INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        team_id TEXT NOT NULL,
        title TEXT NOT NULL,
        description TEXT,
        required_capabilities TEXT NOT NULL,
        origin TEXT NOT NULL,
        scope TEXT,
        input TEXT,
        idempotency_key TEXT,
        state TEXT NOT NULL CHECK (state IN ('SUBMITTED', 'WORKING', 'INPUT_REQUIRED',
          'AUTH_REQUIRED', 'COMPLETED', 'FAILED', 'CANCELED', 'REJECTED')),
        target_runtime TEXT,
        routing TEXT,
        attempts INTEGER NOT NULL,
        max_attempts INTEGER NOT NULL,
        ttl_seconds INTEGER,
        token INTEGER NOT NULL,
        lease_worker TEXT,
        lease_expires_at INTEGER,
        result TEXT,
        error TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        expires_at INTEGER
      );
      CREATE UNIQUE INDEX tasks_idempotency ON tasks (team_id, idempotency_key)
        WHERE idempotency_key IS NOT NULL;
      CREATE INDEX tasks_team ON tasks (team_id, rid);
      -- A team's queue per target runtime, in claim order; also counts its waiting tasks.
      CREATE INDEX tasks_queue ON tasks (team_id, state, target_runtime, rid);
      CREATE INDEX tasks_leases ON tasks (lease_expires_at) WHERE state = 'WORKING';
      CREATE INDEX tasks_waits ON tasks (expires_at) WHERE state = 'SUBMITTED';

      -- Every state change of a task, in order (from_state is NULL for the creation).
      CREATE TABLE task_events (
        seq INTEGER PRIMARY KEY,
        task_rid INTEGER NOT NULL REFERENCES tasks (rid) ON DELETE CASCADE,
        task_id TEXT NOT NULL,
        team_id TEXT NOT NULL,
        at INTEGER NOT NULL,
        from_state TEXT,
        to_state TEXT NOT NULL,
        by TEXT NOT NULL,
        note TEXT
      );
      CREATE INDEX task_events_task ON task_events (task_rid, seq);
    `,
  },
  {
    version: 9,
    name: 'task-approvals',
    sql: `
      -- A human's approval of a task's exact command (JSON text); while AUTH_REQUIRED,
      -- expires_at is when the unanswered request becomes a deny.
      ALTER TABLE tasks ADD COLUMN approval TEXT;
      CREATE INDEX tasks_approvals ON tasks (expires_at) WHERE state = 'AUTH_REQUIRED';
    `,
  },
  {
    version: 10,
    name: 'audit-log',
    sql: `
      -- The audit log (see sqlite-audit.ts): per team, hash-chained, append-only. at is the ISO
      -- time and data the JSON text exactly as hashed.
      CREATE TABLE audit_log (
        team_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        at TEXT NOT NULL,
        kind TEXT NOT NULL,
        actor TEXT NOT NULL,
        subject TEXT NOT NULL,
        data TEXT NOT NULL,
        prev_hash TEXT NOT NULL,
        hash TEXT NOT NULL,
        PRIMARY KEY (team_id, seq)
      ) WITHOUT ROWID;
      -- Each team's newest record: what an append links to, and where verification must reach.
      CREATE TABLE audit_heads (
        team_id TEXT PRIMARY KEY,
        seq INTEGER NOT NULL,
        hash TEXT NOT NULL
      );
    `,
  },
  {
    version: 11,
    name: 'task-lease-holders',
    sql: `
      -- The runtime that claimed a WORKING task: only it reports on the task (renew, progress,
      -- complete, fail). Leases taken before this migration record none and simply lapse.
      ALTER TABLE tasks ADD COLUMN lease_runtime TEXT;
      -- Idempotency keys are the origin runtime's own: another runtime's key is another task.
      DROP INDEX tasks_idempotency;
      CREATE UNIQUE INDEX tasks_idempotency ON tasks (team_id, origin, idempotency_key)
        WHERE idempotency_key IS NOT NULL;
    `,
  },
  {
    version: 12,
    name: 'task-event-outbox',
    sql: `
      -- Task events are the outbox of the hub's task relay (see sqlite-tasks.ts): what made
      -- each (kind), who (actor) and the task as the change left it (JSON text). Events from
      -- before this version have none and are not relayed.
      ALTER TABLE task_events ADD COLUMN kind TEXT;
      ALTER TABLE task_events ADD COLUMN actor TEXT;
      ALTER TABLE task_events ADD COLUMN task TEXT;
      -- The relay's durable cursor: every event up to seq is announced and audited. since:
      -- the last event from before the outbox (verification starts after it).
      CREATE TABLE task_relay (
        name TEXT PRIMARY KEY,
        seq INTEGER NOT NULL,
        since INTEGER NOT NULL
      );
      INSERT INTO task_relay (name, seq, since)
        SELECT 'tasks', coalesce(max(seq), 0), coalesce(max(seq), 0) FROM task_events;
      -- Which task event each audit record came from: the primary key refuses a second
      -- append of one event's records.
      CREATE TABLE audit_task_events (
        event_seq INTEGER PRIMARY KEY,
        team_id TEXT NOT NULL,
        audit_seq INTEGER NOT NULL
      );
    `,
  },
  {
    version: 13,
    name: 'presence',
    sql: `
      -- Who is connected, per team, shared by every process on the file (see
      -- sqlite-presence.ts): a row lives until expires_at unless announced again.
      CREATE TABLE presence (
        team_id TEXT NOT NULL,
        instance_id TEXT NOT NULL,
        runtime TEXT NOT NULL,
        kind TEXT NOT NULL,
        capabilities TEXT NOT NULL,
        capacity INTEGER NOT NULL,
        last_seen INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        PRIMARY KEY (team_id, instance_id)
      );
      CREATE INDEX presence_expiry ON presence (expires_at);
    `,
  },
  {
    version: 14,
    name: 'task-lease-started',
    sql: `
      -- When the holder of a WORKING task said it was starting the command (epoch ms; null:
      -- not yet). A lease that runs out after it fails the task (worker_lost) instead of
      -- requeueing it: the command may have run. Leases taken before this version have none.
      ALTER TABLE tasks ADD COLUMN lease_started_at INTEGER;
    `,
  },
  {
    version: 15,
    name: 'item-usage',
    sql: `
      -- Context analytics (sqlite-usage.ts): how often each runtime was injected, consumed or
      -- found each item, per UTC day (pruned after the longest window), and each item's
      -- totals and last uses per runtime (kept while the item is).
      CREATE TABLE item_usage_days (
        team_id TEXT NOT NULL,
        day TEXT NOT NULL,
        runtime TEXT NOT NULL,
        item_id TEXT NOT NULL,
        injected INTEGER NOT NULL,
        consumed INTEGER NOT NULL,
        searched INTEGER NOT NULL,
        PRIMARY KEY (team_id, day, runtime, item_id)
      ) WITHOUT ROWID;
      CREATE TABLE item_usage (
        team_id TEXT NOT NULL,
        item_id TEXT NOT NULL,
        runtime TEXT NOT NULL,
        injected INTEGER NOT NULL,
        consumed INTEGER NOT NULL,
        searched INTEGER NOT NULL,
        last_injected_at INTEGER,
        last_consumed_at INTEGER,
        last_searched_at INTEGER,
        PRIMARY KEY (team_id, item_id, runtime)
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 16,
    name: 'item-usage-active',
    sql: `
      -- The frequently used documents (sqlite-usage.ts, mostUsedItems) read only the days on
      -- which an item was consumed or found: most rows hold injections alone.
      CREATE INDEX item_usage_days_active ON item_usage_days
        (team_id, day, item_id, consumed, searched) WHERE consumed + searched > 0;
    `,
  },
  {
    version: 17,
    name: 'task-status-unindexed',
    // A task's status items have no full-text entry (sqlite-search.ts, fullTextIndexed): those
    // written before leave their indexes.
    sql: '',
    run: unindexTaskStatusItems,
  },
  {
    version: 18,
    name: 'derived-id-secret',
    sql: `
      -- The secret the hub keys the ids of its own items with (Store.derivedIdSecret): 256
      -- bits from SQLite's generator, which the operating system seeds.
      CREATE TABLE hub_secrets (name TEXT PRIMARY KEY, value TEXT NOT NULL);
      INSERT INTO hub_secrets (name, value) VALUES ('derived-ids', lower(hex(randomblob(32))));
    `,
  },
  {
    version: 19,
    name: 'subscription-token',
    sql: `
      -- The token that created a subscription: revoking it ends the subscription (null:
      -- created before this version).
      ALTER TABLE subscriptions ADD COLUMN token_id TEXT;
    `,
  },
];

export const SQLITE_SCHEMA_VERSION = SQLITE_MIGRATIONS.length;

/** Applies pending migrations; refuses a database written by a newer ctxbus. */
export function applySqliteMigrations(connection: SqliteConnection, apply: boolean): void {
  const db = connection.db;
  db.exec(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)',
  );
  const current = schemaVersion(db);
  if (current > SQLITE_SCHEMA_VERSION) {
    throw new CtxbusError(
      'schema_too_new',
      `the database at ${connection.location} has schema version ${current}, newer than this ctxbus knows (${SQLITE_SCHEMA_VERSION}); upgrade ctxbus`,
      { details: { current, known: SQLITE_SCHEMA_VERSION } },
    );
  }
  if (!apply) return;
  for (const migration of SQLITE_MIGRATIONS) {
    if (migration.version <= current) continue;
    // A rebuilt table loses its indexes: keep their definitions to create them again.
    const indexes = migration.rebuilds
      ? (
          db
            .prepare(
              "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL",
            )
            .all(migration.rebuilds) as { sql: string }[]
        ).map((row) => row.sql)
      : [];
    if (migration.rebuilds) db.exec('PRAGMA foreign_keys = OFF');
    try {
      connection.transaction(() => {
        db.exec(migration.sql);
        migration.run?.(db);
        for (const index of indexes) db.exec(index);
        if (migration.rebuilds) {
          const broken = db.prepare('PRAGMA foreign_key_check').all();
          if (broken.length > 0) {
            throw new CtxbusError(
              'internal',
              `migration ${migration.version} (${migration.name}) would break ${broken.length} foreign key(s); nothing was changed`,
            );
          }
        }
        db.prepare(
          'INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)',
        ).run(migration.version, migration.name, Date.now());
      });
    } finally {
      if (migration.rebuilds) db.exec('PRAGMA foreign_keys = ON');
    }
  }
}

function schemaVersion(db: DatabaseSync): number {
  const row = db.prepare('SELECT max(version) AS version FROM schema_migrations').get() as
    | { version: number | null }
    | undefined;
  return row?.version ?? 0;
}
