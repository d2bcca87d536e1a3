import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { CtxbusError } from '@ctxbus/core';
import { afterAll, describe, expect, it } from 'vitest';
import { runStoreConformance } from '../testing/store-conformance.js';
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
      expect((error as Error).message).toMatch(
        /schema version 99, newer than this ctxbus knows \(1\)/,
      );
    }
  });

  it('opens an existing database without re-applying migrations', async () => {
    const path = join(root, 'twice', 'ctxbus.db');
    await openSqliteStore({ path }).close();
    const again = openSqliteStore({ path });
    expect(again.info.schemaVersion).toBe(1);
    await again.close();
  });
});
