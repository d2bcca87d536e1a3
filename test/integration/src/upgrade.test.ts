import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { HubProcess } from '@ctxbus/test-kit';
import { call, removeDir, runCli, startHubProcess, tempDir } from '@ctxbus/test-kit';
import { afterAll, describe, expect, it } from 'vitest';

// Upgrades keep the data directory (issue 28): a data directory written by the packaged
// ctxbus 0.1.0 (its SQLite file as `sqlite3 .dump` printed it: three items of team acme, one
// private to claude-code, and the tokens 0.1.0 minted) is opened by this build. Serve
// migrates it forward on start; nothing written before is lost or shown to whom it was not.

const FIXTURE = join(import.meta.dirname, '..', 'fixtures', 'data-dir-0.1.0.sql');

const dataDir = tempDir('ctxbus-upgrade-');
let hub: HubProcess | undefined;
afterAll(async () => {
  await hub?.stop();
  removeDir(dataDir);
});

/** A runtime token minted offline on the data directory (the store opens, and migrates). */
async function offlineToken(runtime: string): Promise<string> {
  const result = await runCli(
    ['token', 'create', '--data', dataDir, '--team', 'acme', '--runtime', runtime],
    { env: { CTXBUS_CONFIG_DIR: join(dataDir, 'config') } },
  );
  expect(result.code, result.stderr).toBe(0);
  return result.stdout.trim().split('\n').at(-1) ?? '';
}

describe('a data directory written by ctxbus 0.1.0', () => {
  it('opens in this build: migrated forward, every item kept, private items still private', async () => {
    // The dump recreates FTS5 tables through writable_schema, which defensive mode forbids.
    const db = new DatabaseSync(join(dataDir, 'ctxbus.db'), { defensive: false });
    db.exec(readFileSync(FIXTURE, 'utf8'));
    const before = db.prepare('SELECT max(version) AS version FROM schema_migrations').get() as {
      version: number;
    };
    db.close();

    const claude = await offlineToken('claude-code');
    const openclaw = await offlineToken('openclaw');
    hub = await startHubProcess({ dataDir });

    const mine = await call(hub.url, 'GET', '/api/context', { token: claude });
    expect(mine.status).toBe(200);
    expect(mine.body.items.map((item: { title: string }) => item.title)).toEqual([
      'Focus: the upgrade path (0.1.0)',
      'Private scratch (0.1.0)',
      'Ship on Tuesdays (written by ctxbus 0.1.0)',
    ]);
    const theirs = await call(hub.url, 'GET', '/api/context', { token: openclaw });
    expect(theirs.body.items.map((item: { title: string }) => item.title)).toEqual([
      'Focus: the upgrade path (0.1.0)',
      'Ship on Tuesdays (written by ctxbus 0.1.0)',
    ]);
    // Search finds what 0.1.0 indexed; a new write takes the next sequence number.
    const found = await call(hub.url, 'POST', '/api/context/search', {
      token: openclaw,
      body: { query: 'weekend incidents', limit: 5 },
    });
    expect(found.body.results[0]?.item.title).toBe('Ship on Tuesdays (written by ctxbus 0.1.0)');
    const written = await call(hub.url, 'POST', '/api/context', {
      token: openclaw,
      body: { type: 'decision', title: 'Upgraded without losing anything' },
    });
    expect(written.status).toBe(201);
    expect(written.body.items[0].seq).toBeGreaterThan(
      Math.max(...mine.body.items.map((item: { seq: number }) => item.seq)),
    );
    // The schema is this build's: at least where 0.1.0 left it, with every later migration.
    const after = new DatabaseSync(join(dataDir, 'ctxbus.db'), { readOnly: true });
    const versions = after.prepare('SELECT version FROM schema_migrations ORDER BY version').all();
    after.close();
    const numbers = versions.map((row) => Number(row.version));
    expect(numbers).toEqual(Array.from({ length: numbers.length }, (_, index) => index + 1));
    expect(numbers.length).toBeGreaterThanOrEqual(before.version);
  });
});
