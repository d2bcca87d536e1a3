// The audit log at the store (issue 12): one append's latency, 16 appenders racing on one
// team's chain through two stores on one database (SQLite: two openers of one file;
// PostgreSQL: two pools, as two hubs), and a whole-chain verification. Run through
// ./dev bench --only tasks.
import type { Store } from '@ctxbus/store';
import { openSqliteStore } from '@ctxbus/store';
import { openPostgresStore } from '@ctxbus/store/postgres';
import { probePostgres, ScratchSchemas } from '@ctxbus/store/testing';
import { removeDir, tempDir } from '@ctxbus/test-kit';
import type { Row } from './stats.ts';
import { ms, percentile } from './stats.ts';

const SECTION = 'audit-log';
const APPENDERS = 16;

const event = (subject: string) => ({
  kind: 'task.state' as const,
  actor: 'claude-code',
  subject,
  data: { from: 'SUBMITTED', to: 'WORKING', by: 'claude-code', note: 'claimed by worker-1' },
});

async function measure(stores: readonly [Store, Store], records: number, backend: string) {
  const [first] = stores;
  const singles: number[] = [];
  for (let index = 0; index < records; index++) {
    const at = performance.now();
    await first.appendAudit('bench-single', event(`task_${index}`), new Date().toISOString());
    singles.push(performance.now() - at);
  }
  const each = Math.ceil(records / APPENDERS);
  const started = performance.now();
  await Promise.all(
    Array.from({ length: APPENDERS }, async (_, appender) => {
      const store = stores[appender % 2] as Store;
      for (let index = 0; index < each; index++) {
        await store.appendAudit(
          'bench-race',
          event(`a${appender}-${index}`),
          new Date().toISOString(),
        );
      }
    }),
  );
  const raceMs = performance.now() - started;
  const verifyStarted = performance.now();
  const verified = await first.verifyAudit('bench-race');
  const verifyMs = performance.now() - verifyStarted;
  if (!verified.ok || verified.records !== each * APPENDERS) {
    throw new Error(`audit chain broken after the race: ${JSON.stringify(verified)}`);
  }
  const total = each * APPENDERS;
  return [
    { section: SECTION, metric: `append p50 (${backend})`, value: ms(percentile(singles, 50)) },
    { section: SECTION, metric: `append p99 (${backend})`, value: ms(percentile(singles, 99)) },
    {
      section: SECTION,
      metric: `${APPENDERS} appenders on one chain, two stores (${backend})`,
      value: `${Math.round((total / raceMs) * 1000).toLocaleString('en-US')} records/s`,
    },
    {
      section: SECTION,
      metric: `verify ${total.toLocaleString('en-US')} records (${backend})`,
      value: ms(verifyMs),
    },
  ] satisfies Row[];
}

/** Rows for the benchmark table. */
export async function benchAuditLog(quick: boolean, log: (line: string) => void): Promise<Row[]> {
  const records = quick ? 400 : 4_000;
  const rows: Row[] = [];
  const dir = tempDir();
  const first = openSqliteStore({ path: `${dir}/bench.db` });
  const second = openSqliteStore({ path: `${dir}/bench.db` });
  try {
    log(`audit-log: SQLite, ${records} records`);
    rows.push(...(await measure([first, second], records, 'SQLite')));
  } finally {
    await Promise.all([first.close(), second.close()]);
    removeDir(dir);
  }
  const server = await probePostgres();
  if (server.url === null) {
    log(`audit-log: PostgreSQL skipped (${server.reason})`);
    return rows;
  }
  const schemas = new ScratchSchemas(server.url);
  try {
    const schema = schemas.next('audit');
    const hubA = await openPostgresStore({ connectionString: server.url, schema });
    const hubB = await openPostgresStore({ connectionString: server.url, schema });
    try {
      log(`audit-log: PostgreSQL, ${records} records`);
      rows.push(...(await measure([hubA, hubB], records, 'PostgreSQL, two pools')));
    } finally {
      await Promise.all([hubA.close(), hubB.close()]);
    }
  } finally {
    await schemas.dropAll();
  }
  return rows;
}
