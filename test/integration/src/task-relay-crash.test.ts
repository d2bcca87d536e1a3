import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { taskRelayReport } from '@ctxbus/hub';
import type { Store } from '@ctxbus/store';
import { openSqliteStore } from '@ctxbus/store';
import { openPostgresStore } from '@ctxbus/store/postgres';
import type { HubProcess, StartOptions } from '@ctxbus/test-kit';
import {
  call,
  removeDir,
  runtimeToken,
  startHubProcess,
  tempDir,
  waitUntil,
} from '@ctxbus/test-kit';
import { sql, storeUrl, withPostgres } from '@ctxbus/test-kit/postgres';
import { describe, expect, it } from 'vitest';

// A `ctxbus serve` killed with SIGKILL in the middle of a stream of task changes, then started
// again on the same database: every change that committed (each task event in the store) is
// announced exactly once (its status item, written once: one `task` item per event in the
// team, each reporting its event's state) and audited exactly once (the task's audit records
// are its events' records, in order, none twice), and the audit log verifies (chain intact,
// no task event without its records).

const CAPABILITIES = join(import.meta.dirname, '../../../capabilities.yaml');

interface Target {
  start(): Promise<HubProcess>;
  open(): Promise<Store>;
  /** Runs SQL on the database behind the hub's back (tables unqualified). */
  execSql(text: string): Promise<void>;
  dispose(): void;
}

/**
 * `stuck`: the hub's relay cannot append audit records (their table is renamed away) for the
 * last 20 changes before the kill, so a backlog of committed, unrelayed changes is certain;
 * the table is back before the restart.
 */
type Crash = 'mid-stream' | 'stuck';

/** Creates, claims, completes and fails tasks through `hub`, until it dies. */
async function changeTasksUntilKilled(hub: HubProcess, token: string, acknowledged: () => void) {
  const send = async (path: string, body: unknown) => {
    const response = await call(hub.url, 'POST', path, { token, body });
    if (response.status < 300) acknowledged();
    return response;
  };
  for (let round = 0; ; round += 1) {
    await send('/api/tasks', { title: `search ${round}`, requiredCapabilities: ['search'] });
    const claimed = await send('/api/tasks/claim', { workerId: `w${round}`, leaseMs: 60_000 });
    const task = claimed.body?.task as { id: string; lease: { token: number } } | null;
    if (!task) continue;
    const action = round % 2 === 0 ? 'complete' : 'fail';
    await send(`/api/tasks/${task.id}/${action}`, {
      token: task.lease.token,
      ...(action === 'complete'
        ? { result: { exitCode: 0 } }
        : { error: { code: 'exit', message: 'exit 1' }, retry: round % 4 === 1 }),
    });
  }
}

async function killMidStream(target: Target, crash: Crash): Promise<void> {
  const hub = await target.start();
  // The first start mints the admin token; tokens live in the store, so it outlives the hub.
  const adminToken = hub.adminToken ?? '';
  const token = await runtimeToken(hub, 'acme', 'openclaw');
  let acknowledgedChanges = 0;
  // Four clients at once, so that changes are in flight (committed, not yet relayed) when the
  // hub dies; it dies once 40 changes were acknowledged.
  const clients = Array.from({ length: 4 }, () =>
    changeTasksUntilKilled(hub, token, () => {
      acknowledgedChanges += 1;
    }).catch(() => 'the hub died'),
  );
  if (crash === 'stuck') {
    await waitUntil(() => acknowledgedChanges >= 20, 'twenty task changes acknowledged');
    await target.execSql('ALTER TABLE audit_task_events RENAME TO audit_task_events_away');
  }
  await waitUntil(() => acknowledgedChanges >= 40, 'forty task changes acknowledged');
  await hub.kill();
  expect(await Promise.all(clients)).toEqual(Array(4).fill('the hub died'));
  if (crash === 'stuck') {
    await target.execSql('ALTER TABLE audit_task_events_away RENAME TO audit_task_events');
    const before = await target.open();
    try {
      const last = (await before.listTaskOutbox(0, 100_000)).at(-1)?.event.seq ?? 0;
      expect((await before.taskRelayCursor()).seq).toBeLessThan(last);
    } finally {
      await before.close();
    }
  }

  const again = await target.start();
  const store = await target.open();
  try {
    const lastSeq = async () => (await store.listTaskOutbox(0, 100_000)).at(-1)?.event.seq ?? 0;
    await waitUntil(
      async () => (await store.taskRelayCursor()).seq >= (await lastSeq()),
      'the restarted hub to relay every event the killed one committed',
    );
    const report = await taskRelayReport(store, 'acme');
    expect(report.events).toBeGreaterThanOrEqual(40);
    expect(report).toMatchObject({ unannounced: [], misaudited: [] });
    expect(report.auditRecords).toBe(report.expectedAuditRecords);
    const items = await store.listItems(
      { teamId: 'acme', runtime: 'openclaw' },
      { tags: ['task'], includeSuperseded: true, limit: 100_000 },
    );
    expect(items).toHaveLength(report.events);
    const verified = await call(again.url, 'GET', '/api/audit/verify?team=acme', {
      token: adminToken,
    });
    expect(verified.body).toMatchObject({ ok: true, records: report.auditRecords });
  } finally {
    await store.close();
    await again.stop();
    target.dispose();
  }
}

const CRASHES: Crash[] = ['mid-stream', 'stuck'];

describe('a hub killed during a stream of task changes, on SQLite', () => {
  it.each(CRASHES)(
    'announces and audits every committed change exactly once after a restart (%s)',
    async (crash) => {
      const dataDir = tempDir('ctxbus-relay-crash-');
      const path = join(dataDir, 'ctxbus.db');
      const options: StartOptions = { dataDir, args: ['--capabilities', CAPABILITIES] };
      await killMidStream(
        {
          start: () => startHubProcess(options),
          open: async () => openSqliteStore({ path }),
          execSql: async (text) => {
            const db = new DatabaseSync(path);
            try {
              db.exec('PRAGMA busy_timeout = 60000');
              db.exec(text);
            } finally {
              db.close();
            }
          },
          dispose: () => removeDir(dataDir),
        },
        crash,
      );
    },
  );
});

await withPostgres('a hub killed during task changes on PostgreSQL', (url, schemas) => {
  describe('a hub killed during a stream of task changes, on PostgreSQL', () => {
    it.each(CRASHES)(
      'announces and audits every committed change exactly once after a restart (%s)',
      async (crash) => {
        const schema = schemas.next('crash');
        const options: StartOptions = {
          store: storeUrl(url, schema),
          args: ['--capabilities', CAPABILITIES],
        };
        await killMidStream(
          {
            start: () => startHubProcess(options),
            open: async () => openPostgresStore({ connectionString: url, schema }),
            execSql: async (text) => {
              await sql(url, `SET search_path TO "${schema}"; ${text}`);
            },
            dispose: () => {},
          },
          crash,
        );
      },
    );
  });
});
