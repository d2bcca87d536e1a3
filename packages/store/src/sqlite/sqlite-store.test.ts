import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { CtxbusError, prepareItem } from '@ctxbus/core';
import { afterAll, describe, expect, it } from 'vitest';
import { damagedSqliteFile } from '../testing/damaged-sqlite.js';
import { runStoreConformance } from '../testing/store-conformance.js';
import { expectVectorScansAgree } from '../testing/vector-conformance.js';
import { SQLITE_MIGRATIONS, SQLITE_SCHEMA_VERSION } from './sqlite-migrations.js';
import { openSqliteStore } from './sqlite-store.js';

const root = mkdtempSync(join(tmpdir(), 'ctxbus-sqlite-'));
let counter = 0;
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A database as a ctxbus at schema `version` made it. */
function databaseAt(path: string, version: number): DatabaseSync {
  mkdirSync(join(path, '..'), { recursive: true });
  const db = new DatabaseSync(path);
  db.exec('PRAGMA foreign_keys = ON');
  db.exec(
    'CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)',
  );
  for (const migration of SQLITE_MIGRATIONS.slice(0, version)) {
    db.exec(migration.sql);
    migration.run?.(db);
    db.prepare('INSERT INTO schema_migrations VALUES (?, ?, ?)').run(
      migration.version,
      migration.name,
      Date.now(),
    );
  }
  return db;
}

/** An item row as versions 1 to 6 wrote it, with its row in the hub-wide search index. */
function insertOldItem(
  db: DatabaseSync,
  row: {
    rid: number;
    id: string;
    team: string;
    runtime: string;
    title: string;
    visibility?: string;
  },
): void {
  db.prepare(
    `INSERT INTO changes (seq, kind, item_rid, team_id, at) VALUES (?, 'added', ?, ?, ?)`,
  ).run(row.rid, row.rid, row.team, Date.now());
  db.prepare(
    `INSERT INTO items (rid, id, team_id, type, title, content, summary, tags, source_runtime,
       scope, urgency, visibility, created_at, runtime_options, redactions, tokens, input_hash)
     VALUES (?, ?, ?, 'decision', ?, '', ?, '[]', ?, 'global', 0, ?, ?, '{}', '[]', 3, 'h')`,
  ).run(
    row.rid,
    row.id,
    row.team,
    row.title,
    row.title,
    row.runtime,
    row.visibility ?? 'team',
    Date.now(),
  );
  db.prepare(
    'INSERT INTO items_fts (rowid, title, content, summary, tags) VALUES (?, ?, ?, ?, ?)',
  ).run(row.rid, row.title, '', row.title, '[]');
}

runStoreConformance({
  name: 'sqlite (file)',
  async createStore({ clock, maxWaitingTasksPerRuntime }) {
    counter += 1;
    return openSqliteStore({
      path: join(root, `db-${counter}`, 'ctxbus.db'),
      clock,
      maxWaitingTasksPerRuntime,
    });
  },
  async reopenStore(store, { clock }) {
    await store.close();
    return openSqliteStore({ path: store.info.location, clock });
  },
  async openSibling(store, { clock }) {
    return openSqliteStore({ path: store.info.location, clock });
  },
  async execSql(store, sql) {
    const db = new DatabaseSync(store.info.location);
    try {
      db.exec(sql);
    } finally {
      db.close();
    }
  },
});

runStoreConformance({
  name: 'sqlite (memory)',
  async createStore({ clock, maxWaitingTasksPerRuntime }) {
    return openSqliteStore({ path: ':memory:', clock, maxWaitingTasksPerRuntime });
  },
  skip: {
    persistence: 'an in-memory database does not outlive its connection',
    'task-reopen': 'an in-memory database does not outlive its connection',
    'task-derived-id-secret': 'an in-memory database does not outlive its connection',
    'audit-tamper': 'an in-memory database is reachable only through the store itself',
    'presence-siblings': 'an in-memory database is reachable only through the store itself',
  },
});

const TASK_ID = 'task_019a0000-0000-7000-8000-0000000000aa';
/** A task's status item, as the hub's relay writes one (its title shares a word with a note). */
function statusItem(state: string, extra: Record<string, unknown> = {}) {
  return prepareItem(
    {
      type: 'status',
      title: `Task ${state}: rebuild the zanzibar index`,
      scopeKey: `task:${TASK_ID}`,
      relevanceTags: ['task'],
      runtimeOptions: { task: { id: TASK_ID, state } },
      ...extra,
    },
    { teamId: 'acme', runtime: 'claude-code' },
    { now: new Date() },
  );
}

/** Each partition's item count, and whether its FTS5 index passes its integrity check. */
function searchIndexes(path: string) {
  const db = new DatabaseSync(path);
  try {
    return (
      db.prepare('SELECT pid, items FROM search_partitions ORDER BY pid').all() as {
        pid: number;
        items: number;
      }[]
    ).map(({ pid, items }) => {
      db.exec(`INSERT INTO search_fts_${pid} (search_fts_${pid}) VALUES ('integrity-check')`);
      const zanzibar = db
        .prepare(`SELECT doc FROM search_fts_${pid}_vocab WHERE term = 'zanzibar'`)
        .get() as { doc: number } | undefined;
      return { pid, items, zanzibar: zanzibar?.doc ?? 0 };
    });
  } finally {
    db.close();
  }
}

describe('sqlite search of task status items', () => {
  it('keeps them out of the full-text index (bookkeeping), other items in; a sweep leaves the index whole', async () => {
    const path = join(root, 'status-fts', 'ctxbus.db');
    const store = openSqliteStore({ path });
    await store.writeItems([statusItem('SUBMITTED', { expiresAfterSeconds: 1 })]);
    await store.writeItems([statusItem('WORKING', { expiresAfterSeconds: 1 })]);
    const [note] = await store.writeItems([
      prepareItem(
        { type: 'discovery', title: 'The zanzibar index is rebuilt nightly' },
        { teamId: 'acme', runtime: 'claude-code' },
        { now: new Date() },
      ),
    ]);
    const acme = { teamId: 'acme', runtime: 'claude-code' };
    const hits = await store.searchItems(acme, { query: 'zanzibar index', limit: 10 });
    expect(hits.map((hit) => hit.item.id)).toEqual([note?.item.id]);
    // Still read by everything else (the feed, the bundle): only search leaves them out.
    expect(await store.listItems(acme, { tags: ['task'], limit: 10 })).toHaveLength(2);
    expect(searchIndexes(path)).toEqual([{ pid: 1, items: 1, zanzibar: 1 }]);
    // Swept, they are taken out of no index (an FTS5 delete of a row it never held would
    // corrupt it): the integrity check and the counts stay as they were.
    const swept = await store.sweepItems({
      expiredBefore: new Date(Date.now() + 60_000).toISOString(),
      mode: 'delete',
      limit: 10,
      now: new Date().toISOString(),
    });
    expect(swept.expired).toBe(2);
    await store.close();
    expect(searchIndexes(path)).toEqual([{ pid: 1, items: 1, zanzibar: 1 }]);
  });
});

describe('the sqlite database file', () => {
  it('is readable by its owner alone (0600, its -wal too), an older open one narrowed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ctxbus-sqlite-mode-'));
    try {
      const path = join(dir, 'new', 'ctxbus.db');
      const store = openSqliteStore({ path });
      await store.writeItems([
        prepareItem(
          { type: 'decision', title: 'kept from other users' },
          { teamId: 'acme', runtime: 'claude-code' },
          { now: new Date() },
        ),
      ]);
      expect(statSync(join(dir, 'new')).mode & 0o777).toBe(0o700);
      expect(statSync(path).mode & 0o777).toBe(0o600);
      expect(statSync(`${path}-wal`).mode & 0o777).toBe(0o600);
      await store.close();
      const older = join(dir, 'older.db');
      writeFileSync(older, '');
      chmodSync(older, 0o644);
      await openSqliteStore({ path: older }).close();
      expect(statSync(older).mode & 0o777).toBe(0o600);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('a full disk under the sqlite store', () => {
  it('is said as such (503 unavailable, retryable), loses nothing written, and passes once there is room', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ctxbus-sqlite-full-'));
    const store = openSqliteStore({ path: join(dir, 'ctxbus.db') });
    // SQLite's own page limit stands in for the disk: past it, SQLITE_FULL as on a full disk.
    const db = (store as unknown as { connection: { db: DatabaseSync } }).connection.db;
    const write = (title: string) =>
      store.writeItems([
        prepareItem(
          { type: 'discovery', title, content: 'x'.repeat(20_000) },
          { teamId: 'acme', runtime: 'claude-code' },
          { now: new Date() },
        ),
      ]);
    try {
      const kept = await write('written before the disk filled');
      const pages = (db.prepare('PRAGMA page_count').get() as { page_count: number }).page_count;
      db.exec(`PRAGMA max_page_count = ${pages + 2}`);
      let refused: unknown;
      for (let index = 0; index < 20 && refused === undefined; index++) {
        await write(`filler ${index}`).catch((error: unknown) => {
          refused = error;
        });
      }
      expect(refused).toMatchObject({
        code: 'unavailable',
        retryable: true,
        message: expect.stringMatching(
          /^the disk holding the database \(.*\) is full: nothing was written/,
        ),
      });
      db.exec('PRAGMA max_page_count = 1073741823');
      await write('written once there was room');
      const titles = (
        await store.listItems({ teamId: 'acme', runtime: 'claude-code' }, { limit: 50 })
      ).map((item) => item.title);
      expect(titles).toContain('written once there was room');
      expect(titles).toContain(kept[0]?.item.title);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('a damaged sqlite database file', () => {
  /** A damaged database in a directory of its own. */
  async function damagedDatabase(): Promise<string> {
    const path = join(mkdtempSync(join(tmpdir(), 'ctxbus-sqlite-damaged-')), 'ctxbus.db');
    await damagedSqliteFile(path);
    return path;
  }

  it('is said as such on every call that meets it (503 unavailable, not retryable, naming the file and what to do), and remembered', async () => {
    const path = await damagedDatabase();
    const store = openSqliteStore({ path });
    try {
      expect(store.damage()).toBeNull();
      const read = await store.listItems({ teamId: 'acme', runtime: 'web' }, { limit: 500 }).then(
        () => null,
        (error: unknown) => store.explainError(error),
      );
      expect(read).toMatchObject({
        code: 'unavailable',
        retryable: false,
        details: { reason: 'store_damaged' },
        message: expect.stringMatching(/^the database file .*ctxbus\.db is damaged \(SQLite: /),
      });
      expect((read as Error).message).toContain('restore it from a backup');
      expect(store.damage()).toBe(read);
    } finally {
      await store.close();
      rmSync(join(path, '..'), { recursive: true, force: true });
    }
  });

  it('that is not a database at all is refused at open, said as such', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ctxbus-sqlite-notadb-'));
    const path = join(dir, 'ctxbus.db');
    writeFileSync(path, Buffer.alloc(8_192, 0x41), { mode: 0o600 });
    try {
      let refused: unknown;
      try {
        openSqliteStore({ path }).close();
      } catch (error) {
        refused = error;
      }
      expect(refused).toMatchObject({
        code: 'unavailable',
        details: { reason: 'store_damaged' },
        message: expect.stringContaining(`the database file ${path} is damaged`),
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('is found by the integrity check before any call meets it; a sound file passes', async () => {
    const path = await damagedDatabase();
    const damaged = openSqliteStore({ path });
    const soundDir = mkdtempSync(join(tmpdir(), 'ctxbus-sqlite-sound-'));
    const sound = openSqliteStore({ path: join(soundDir, 'ctxbus.db') });
    try {
      const found = await damaged.checkIntegrity();
      expect(found).toMatchObject({ code: 'unavailable', details: { reason: 'store_damaged' } });
      expect(damaged.damage()).toBe(found);
      await sound.writeItems([
        prepareItem(
          { type: 'discovery', title: 'sound' },
          { teamId: 'acme', runtime: 'claude-code' },
          { now: new Date() },
        ),
      ]);
      expect(await sound.checkIntegrity()).toBeNull();
      expect(sound.damage()).toBeNull();
    } finally {
      await damaged.close();
      await sound.close();
      rmSync(join(path, '..'), { recursive: true, force: true });
      rmSync(soundDir, { recursive: true, force: true });
    }
  });
});

describe('sqlite vector search', () => {
  it('ranks in memory as the SQL scan does, and sees vectors saved after it loaded', async () => {
    const path = join(root, 'vectors', 'ctxbus.db');
    const stores = {
      memory: openSqliteStore({ path }),
      scan: openSqliteStore({ path, vectorMemoryMb: 0 }),
      writer: openSqliteStore({ path }),
    };
    await expectVectorScansAgree(stores);
    await Promise.all(Object.values(stores).map((store) => store.close()));
  });
});

describe('sqlite migrations', () => {
  it('refuses a database written by a newer ctxbus', () => {
    const path = join(root, 'newer', 'ctxbus.db');
    openSqliteStore({ path }).close();
    const db = new DatabaseSync(path);
    db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, ?, 0)').run(
      'future',
    );
    db.close();
    try {
      openSqliteStore({ path });
      expect.unreachable();
    } catch (error) {
      expect(CtxbusError.isInstance(error) && error.code).toBe('schema_too_new');
      expect((error as Error).message).toContain(
        `schema version 99, newer than this ctxbus knows (${SQLITE_SCHEMA_VERSION})`,
      );
    }
  });

  it('upgrades a version-1 database in place, keeping its items', async () => {
    const path = join(root, 'upgrade', 'ctxbus.db');
    const db = databaseAt(path, 1);
    const id = '0192f000-0000-7000-8000-0000000000a1';
    insertOldItem(db, { rid: 1, id, team: 't', runtime: 'web', title: 'kept across upgrades' });
    db.close();
    const upgraded = openSqliteStore({ path });
    const viewer = { teamId: 't', runtime: 'web' };
    expect((await upgraded.getItem(viewer, id))?.title).toBe('kept across upgrades');
    const hits = await upgraded.searchItems(viewer, { query: 'upgrades', limit: 5 });
    expect(hits.map((hit) => hit.item.id)).toEqual([id]);
    await upgraded.close();
    const check = new DatabaseSync(path);
    const index = check
      .prepare("SELECT name FROM sqlite_master WHERE name = 'items_scope_heads'")
      .get();
    const versions = check.prepare('SELECT version FROM schema_migrations ORDER BY version').all();
    check.close();
    expect(index).toBeDefined();
    expect(versions.map((row) => row.version)).toEqual(
      Array.from({ length: SQLITE_SCHEMA_VERSION }, (_, index) => index + 1),
    );
  });

  it('splits the hub-wide search index of a version-6 database into partitions', async () => {
    const path = join(root, 'v6', 'ctxbus.db');
    const db = databaseAt(path, 6);
    const rows = [
      { team: 'acme', runtime: 'web', title: 'deploy on tuesday' },
      { team: 'acme', runtime: 'cli', title: 'deploy notes of the cli', visibility: 'private' },
      { team: 'acme', runtime: 'web', title: 'deploy rollback', visibility: 'private' },
      { team: 'globex', runtime: 'web', title: 'deploy deploy deploy' },
    ];
    rows.forEach((row, index) => {
      insertOldItem(db, {
        rid: index + 1,
        id: `0192f000-0000-7000-8000-00000000000${index}`,
        ...row,
      });
    });
    db.close();
    const upgraded = openSqliteStore({ path });
    const titles = async (teamId: string, runtime: string) =>
      (await upgraded.searchItems({ teamId, runtime }, { query: 'deploy', limit: 10 }))
        .map((hit) => hit.item.title)
        .sort();
    expect(await titles('acme', 'web')).toEqual(['deploy on tuesday', 'deploy rollback']);
    expect(await titles('acme', 'cli')).toEqual(['deploy notes of the cli', 'deploy on tuesday']);
    expect(await titles('globex', 'web')).toEqual(['deploy deploy deploy']);
    await upgraded.close();
    const check = new DatabaseSync(path);
    const partitions = check
      .prepare('SELECT team_id, runtime, items FROM search_partitions ORDER BY pid')
      .all();
    const old = check.prepare("SELECT name FROM sqlite_master WHERE name LIKE 'items_fts%'").all();
    check.close();
    expect(partitions.map((row) => ({ ...row }))).toEqual([
      { team_id: 'acme', runtime: '', items: 1 },
      { team_id: 'acme', runtime: 'cli', items: 1 },
      { team_id: 'acme', runtime: 'web', items: 1 },
      { team_id: 'globex', runtime: '', items: 1 },
    ]);
    expect(old).toEqual([]);
  });

  it('rebuilds the items table of a version-5 database for per-team ids, keeping rows and vectors', async () => {
    const path = join(root, 'v5', 'ctxbus.db');
    mkdirSync(join(root, 'v5'), { recursive: true });
    const id = '0192f000-0000-7000-8000-0000000000a5';
    const db = new DatabaseSync(path);
    db.exec('PRAGMA foreign_keys = ON');
    db.exec(
      'CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)',
    );
    for (const migration of SQLITE_MIGRATIONS.slice(0, 5)) {
      db.exec(migration.sql);
      db.prepare('INSERT INTO schema_migrations VALUES (?, ?, ?)').run(
        migration.version,
        migration.name,
        Date.now(),
      );
    }
    db.prepare(
      `INSERT INTO changes (seq, kind, item_rid, team_id, at) VALUES (1, 'added', 1, 'acme', ?)`,
    ).run(Date.now());
    db.prepare(
      `INSERT INTO items (rid, id, team_id, type, title, content, summary, tags, source_runtime,
         scope, urgency, visibility, created_at, runtime_options, redactions, tokens, input_hash)
       VALUES (1, ?, 'acme', 'decision', 'from version 5', '', 'from version 5', '[]', 'web',
         'global', 0, 'team', ?, '{}', '[]', 3, 'h')`,
    ).run(id, Date.now());
    db.prepare(`INSERT INTO item_vectors (model, rid, vector) VALUES ('m', 1, ?)`).run(
      new Uint8Array(8),
    );
    // The old schema: ids unique across every team.
    expect(() =>
      db
        .prepare(
          `INSERT INTO items (rid, id, team_id, type, title, content, summary, tags, source_runtime,
             scope, urgency, visibility, created_at, runtime_options, redactions, tokens, input_hash)
           VALUES (2, ?, 'globex', 'status', 'x', '', 'x', '[]', 'web', 'global', 0, 'team', 0, '{}', '[]', 1, 'h')`,
        )
        .run(id),
    ).toThrow(/UNIQUE/);
    db.close();

    const upgraded = openSqliteStore({ path });
    expect(upgraded.info.schemaVersion).toBe(SQLITE_SCHEMA_VERSION);
    expect((await upgraded.getItem({ teamId: 'acme', runtime: 'web' }, id))?.title).toBe(
      'from version 5',
    );
    const [theirs] = await upgraded.writeItems([
      prepareItem(
        { id, type: 'status', title: 'same id, other team' },
        { teamId: 'globex', runtime: 'web' },
        { now: new Date() },
      ),
    ]);
    expect(theirs?.status).toBe('created');
    await upgraded.close();
    const check = new DatabaseSync(path);
    // The vector row survived the rebuild (foreign keys were off while the table was swapped).
    expect(check.prepare('SELECT count(*) AS n FROM item_vectors').get()).toEqual({ n: 1 });
    expect(check.prepare('PRAGMA foreign_key_check').all()).toEqual([]);
    expect(
      check.prepare("SELECT name FROM sqlite_master WHERE name = 'items_team_scope_key_rid'").get(),
    ).toBeDefined();
    check.close();
  });

  it('takes the task status items of a version-16 database out of its search index', async () => {
    const path = join(root, 'v16', 'ctxbus.db');
    const db = databaseAt(path, 16);
    const status = statusItem('SUBMITTED');
    const rows: [number, string, string, string, string][] = [
      [1, status.id, 'status', status.title, JSON.stringify(status.runtimeOptions)],
      [2, '0192f000-0000-7000-8000-0000000000b1', 'discovery', 'zanzibar rebuilt nightly', '{}'],
    ];
    db.exec(`CREATE VIRTUAL TABLE search_fts_1 USING fts5 (title, content, summary, tags,
               content = 'items', content_rowid = 'rid',
               tokenize = 'porter unicode61 remove_diacritics 2');
             CREATE VIRTUAL TABLE search_fts_1_vocab USING fts5vocab(search_fts_1, 'row');
             INSERT INTO search_partitions (pid, team_id, runtime, items) VALUES (1, 'acme', '', 2);`);
    for (const [rid, id, type, title, options] of rows) {
      const tags = type === 'status' ? '["task"]' : '[]';
      db.prepare(
        `INSERT INTO changes (seq, kind, item_rid, team_id, at) VALUES (?, 'added', ?, 'acme', ?)`,
      ).run(rid, rid, Date.now());
      db.prepare(
        `INSERT INTO items (rid, id, team_id, type, title, content, summary, tags, source_runtime,
           scope, urgency, visibility, created_at, runtime_options, redactions, tokens, input_hash)
         VALUES (?, ?, 'acme', ?, ?, '', ?, ?, 'claude-code', 'global', 0, 'team', ?, ?, '[]', 3, 'h')`,
      ).run(rid, id, type, title, title, tags, Date.now(), options);
      db.prepare(
        'INSERT INTO search_fts_1 (rowid, title, content, summary, tags) VALUES (?, ?, ?, ?, ?)',
      ).run(rid, title, '', title, tags);
    }
    db.close();
    expect(searchIndexes(path)).toEqual([{ pid: 1, items: 2, zanzibar: 2 }]);
    const upgraded = openSqliteStore({ path });
    const hits = await upgraded.searchItems(
      { teamId: 'acme', runtime: 'web' },
      { query: 'zanzibar', limit: 10 },
    );
    expect(hits.map((hit) => hit.item.title)).toEqual(['zanzibar rebuilt nightly']);
    await upgraded.close();
    expect(searchIndexes(path)).toEqual([{ pid: 1, items: 1, zanzibar: 1 }]);
  });

  it('opens an existing database without re-applying migrations', async () => {
    const path = join(root, 'twice', 'ctxbus.db');
    await openSqliteStore({ path }).close();
    const again = openSqliteStore({ path });
    expect(again.info.schemaVersion).toBe(SQLITE_SCHEMA_VERSION);
    await again.close();
  });
});
