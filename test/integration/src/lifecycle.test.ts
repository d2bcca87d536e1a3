import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { TestHub } from '@ctxbus/test-kit';
import { call, removeDir, runCli, runtimeToken, waitUntil } from '@ctxbus/test-kit';
import { afterAll, describe, expect, it } from 'vitest';
import { startInProcessServe } from './in-process-serve.ts';

// The lifecycle sweeper in a real hub: expiry, age limits, archive or delete.

const hubs: TestHub[] = [];
afterAll(async () => {
  for (const hub of hubs) {
    expect(await hub.stop()).toBe(0);
    removeDir(hub.dataDir);
  }
});

async function write(hub: TestHub, token: string, body: unknown) {
  const response = await call(hub.url, 'POST', '/api/context', { token, body });
  expect(response.status).toBe(201);
  return response.body.items[0] as { id: string; seq: number };
}

describe('lifecycle sweeps', () => {
  it('archive: expired and aged items move to /api/archive; decisions stay until superseded', async () => {
    const hub = await startInProcessServe({
      args: [
        '--retention-mode',
        'archive',
        '--retain',
        'status=2s,decision=2s',
        '--sweep-interval',
        '200ms',
      ],
    });
    hubs.push(hub);
    const token = await runtimeToken(hub, 'acme', 'web');
    const brief = await write(hub, token, {
      type: 'alert',
      title: 'brief',
      expiresAfterSeconds: 1,
    });
    const status = await write(hub, token, { type: 'status', title: 'old status' });
    const decision = await write(hub, token, { type: 'decision', title: 'use SQLite' });
    const note = await write(hub, token, { type: 'discovery', title: 'no limit for discoveries' });
    await waitUntil(async () => {
      const archive = await call(hub.url, 'GET', '/api/archive', { token });
      return archive.body.items.length >= 2;
    }, 'the sweep to archive the expired alert and the aged status');
    const archive = await call(hub.url, 'GET', '/api/archive', { token });
    expect(archive.status).toBe(200);
    expect(
      archive.body.items.map((entry: { item: { id: string }; reason: string }) => [
        entry.item.id,
        entry.reason,
      ]),
    ).toEqual([
      [status.id, 'retention'],
      [brief.id, 'expired'],
    ]);
    for (const gone of [brief, status]) {
      expect((await call(hub.url, 'GET', `/api/context/${gone.id}`, { token })).status).toBe(404);
    }
    // The current decision outlives its age limit. The barrier: an alert that expires a second
    // from now, past the decision's limit (2 s after it was written, just after the status,
    // which the sweep has archived by now).
    // The sweep that archives it would have aged out the decision too, were it not kept.
    const barrier = await write(hub, token, {
      type: 'alert',
      title: 'barrier',
      expiresAfterSeconds: 1,
    });
    const archived = async () =>
      (await call(hub.url, 'GET', '/api/archive', { token })).body.items.map(
        (entry: { item: { id: string }; reason: string }) => [entry.item.id, entry.reason],
      );
    await waitUntil(
      async () => (await archived()).some(([id]: string[]) => id === barrier.id),
      'the sweep to archive the barrier alert',
    );
    expect(await archived()).toEqual([
      [barrier.id, 'expired'],
      [status.id, 'retention'],
      [brief.id, 'expired'],
    ]);
    for (const kept of [decision, note]) {
      expect((await call(hub.url, 'GET', `/api/context/${kept.id}`, { token })).status).toBe(200);
    }
    // Once superseded, the decision ages out too.
    const newer = await write(hub, token, {
      type: 'decision',
      title: 'use PostgreSQL',
      supersedes: decision.id,
    });
    await waitUntil(
      async () =>
        (await call(hub.url, 'GET', `/api/context/${decision.id}`, { token })).status === 404,
      'the sweep to archive the superseded decision past its age limit',
    );
    expect((await call(hub.url, 'GET', `/api/context/${newer.id}`, { token })).status).toBe(200);
    // Sequences keep growing after sweeps.
    const after = await write(hub, token, { type: 'discovery', title: 'after' });
    expect(after.seq).toBeGreaterThan(newer.seq);
    const other = await runtimeToken(hub, 'globex', 'web');
    expect((await call(hub.url, 'GET', '/api/archive', { token: other })).body.items).toEqual([]);
  });

  it('delete (the default): expired items are gone for good', async () => {
    const hub = await startInProcessServe({ args: ['--sweep-interval', '200ms'] });
    const token = await runtimeToken(hub, 'acme', 'web');
    const brief = await write(hub, token, {
      type: 'status',
      title: 'brief',
      expiresAfterSeconds: 1,
    });
    const kept = await write(hub, token, { type: 'status', title: 'kept' });
    // Reads hide an expired item at once; the sweep removes it from the database.
    const rows = (id: string) => {
      const db = new DatabaseSync(join(hub.dataDir, 'ctxbus.db'), { readOnly: true });
      try {
        return (db.prepare('SELECT count(*) AS n FROM items WHERE id = ?').get(id) as { n: number })
          .n;
      } finally {
        db.close();
      }
    };
    await waitUntil(
      async () => rows(brief.id) === 0,
      'the sweep to delete the expired status from the database',
    );
    expect(rows(kept.id)).toBe(1);
    expect((await call(hub.url, 'GET', '/api/archive', { token })).body.items).toEqual([]);
    expect(await hub.stop()).toBe(0);
    removeDir(hub.dataDir);
  });

  it('refuses bad retention settings with a reason', async () => {
    const mode = await runCli(['serve', '--retention-mode', 'shred']);
    expect(mode.code).toBe(2);
    expect(mode.stderr).toMatch(/--retention-mode must be delete or archive/);
    const retain = await runCli(['serve', '--retain', 'status=forever']);
    expect(retain.code).toBe(2);
    expect(retain.stderr).toMatch(/--retain status: "forever" is not a duration/);
  });
});
