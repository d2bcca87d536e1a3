import { join } from 'node:path';
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
import { storeUrl, withPostgres } from '@ctxbus/test-kit/postgres';
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
  dispose(): void;
}

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

async function killMidStream(target: Target): Promise<void> {
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
  await waitUntil(() => acknowledgedChanges >= 40, 'forty task changes acknowledged');
  await hub.kill();
  expect(await Promise.all(clients)).toEqual(Array(4).fill('the hub died'));

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

describe('a hub killed during a stream of task changes, on SQLite', () => {
  it('announces and audits every committed change exactly once after a restart', async () => {
    const dataDir = tempDir('ctxbus-relay-crash-');
    const options: StartOptions = { dataDir, args: ['--capabilities', CAPABILITIES] };
    await killMidStream({
      start: () => startHubProcess(options),
      open: async () => openSqliteStore({ path: join(dataDir, 'ctxbus.db') }),
      dispose: () => removeDir(dataDir),
    });
  });
});

await withPostgres('a hub killed during task changes on PostgreSQL', (url, schemas) => {
  describe('a hub killed during a stream of task changes, on PostgreSQL', () => {
    it('announces and audits every committed change exactly once after a restart', async () => {
      const schema = schemas.next('crash');
      const options: StartOptions = {
        store: storeUrl(url, schema),
        args: ['--capabilities', CAPABILITIES],
      };
      await killMidStream({
        start: () => startHubProcess(options),
        open: async () => openPostgresStore({ connectionString: url, schema }),
        dispose: () => {},
      });
    });
  });
});
