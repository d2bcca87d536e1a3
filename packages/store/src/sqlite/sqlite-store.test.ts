import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { CtxbusError, prepareItem } from '@ctxbus/core';
import { afterAll, describe, expect, it } from 'vitest';
import { runStoreConformance } from '../testing/store-conformance.js';
import { expectVectorScansAgree } from '../testing/vector-conformance.js';
import { SQLITE_SCHEMA_VERSION } from './sqlite-migrations.js';
import { openSqliteStore } from './sqlite-store.js';

const root = mkdtempSync(join(tmpdir(), 'ctxbus-sqlite-'));
let counter = 0;
afterAll(() => rmSync(root, { recursive: true, force: true }));

runStoreConformance({
  name: 'sqlite (file)',
  async createStore({ clock }) {
    counter += 1;
    return openSqliteStore({ path: join(root, `db-${counter}`, 'ctxbus.db'), clock });
  },
  async reopenStore(store, { clock }) {
    await store.close();
    return openSqliteStore({ path: store.info.location, clock });
  },
});

runStoreConformance({
  name: 'sqlite (memory)',
  async createStore({ clock }) {
    return openSqliteStore({ path: ':memory:', clock });
  },
  skip: { persistence: 'an in-memory database does not outlive its connection' },
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
    const first = openSqliteStore({ path });
    const [outcome] = await first.writeItems([
      prepareItem(
        { type: 'decision', title: 'kept across upgrades' },
        { teamId: 't', runtime: 'web' },
        { now: new Date() },
      ),
    ]);
    await first.close();
    // Turn it back into a version-1 database.
    const db = new DatabaseSync(path);
    db.exec(
      'DROP INDEX items_scope_heads; DROP INDEX items_open_urgency; DROP INDEX items_open_type; DROP TABLE items_fts_vocab; DROP INDEX items_team_thread_rid; DROP TABLE dead_letters; DROP TABLE subscriptions; DROP TABLE archived_items; DROP INDEX items_type_created; DROP TABLE item_vectors; DELETE FROM schema_migrations WHERE version > 1;',
    );
    db.close();
    const upgraded = openSqliteStore({ path });
    expect(await upgraded.getItem({ teamId: 't', runtime: 'web' }, outcome?.item.id ?? '')).toEqual(
      outcome?.item,
    );
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

  it('opens an existing database without re-applying migrations', async () => {
    const path = join(root, 'twice', 'ctxbus.db');
    await openSqliteStore({ path }).close();
    const again = openSqliteStore({ path });
    expect(again.info.schemaVersion).toBe(SQLITE_SCHEMA_VERSION);
    await again.close();
  });
});
