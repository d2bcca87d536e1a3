import { closeSync, openSync, statSync, writeSync } from 'node:fs';
import { prepareItem } from '@ctxbus/core';
import type { SqliteStore } from '../sqlite/sqlite-store.js';
import { openSqliteStore } from '../sqlite/sqlite-store.js';

/**
 * A SQLite database at `path` holding 300 items of team `acme` (and whatever `before` writes
 * first), closed, then damaged as a failing disk or a stray write would: 40 KiB of its middle
 * (item pages) overwritten.
 */
export async function damagedSqliteFile(
  path: string,
  before?: (store: SqliteStore) => Promise<void>,
): Promise<void> {
  const store = openSqliteStore({ path });
  try {
    await before?.(store);
    await store.writeItems(
      Array.from({ length: 300 }, (_, index) =>
        prepareItem(
          { type: 'discovery', title: `item ${index}`, content: `${index} `.repeat(300) },
          { teamId: 'acme', runtime: 'web' },
          { now: new Date() },
        ),
      ),
    );
  } finally {
    await store.close();
  }
  const file = openSync(path, 'r+');
  try {
    writeSync(file, Buffer.alloc(40_960, 0xff), 0, 40_960, Math.floor(statSync(path).size / 2));
  } finally {
    closeSync(file);
  }
}
