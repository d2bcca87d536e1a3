// Tasks at the store (issue 12): create latency, and 16 claimers racing over N tasks through
// two stores on one database (SQLite: two openers of one file; PostgreSQL: two pools, as two
// hubs), each claiming and completing until none is left: claim latency and throughput.
// Run through ./dev bench --only task-store. The hub-level task benchmarks (create -> claimed
// by a connected worker, result -> SSE) need the task routes.
import type { Store } from '@ctxbus/store';
import { openSqliteStore } from '@ctxbus/store';
import { openPostgresStore } from '@ctxbus/store/postgres';
import { probePostgres, ScratchSchemas } from '@ctxbus/store/testing';
import { removeDir, tempDir } from '@ctxbus/test-kit';
import type { Row } from './stats.ts';
import { ms, percentile } from './stats.ts';

const SECTION = 'task-store';
const TEAM = 'bench';
const CLAIMERS = 16;

async function create(store: Store, tasks: number): Promise<number[]> {
  const latencies: number[] = [];
  for (let index = 0; index < tasks; index++) {
    const started = performance.now();
    await store.createTask(TEAM, {
      title: `task ${index}`,
      requiredCapabilities: ['code_execution'],
      origin: 'openclaw',
      targetRuntime: 'claude-code',
      input: { argv: ['npm', 'test'] },
    });
    latencies.push(performance.now() - started);
  }
  return latencies;
}

async function race(
  stores: readonly Store[],
  tasks: number,
): Promise<{ claims: number[]; elapsedMs: number }> {
  const claims: number[] = [];
  let done = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CLAIMERS }, async (_, index) => {
      const store = stores[index % stores.length] as Store;
      for (;;) {
        const at = performance.now();
        const task = await store.claimTask({
          teamId: TEAM,
          runtime: 'claude-code',
          workerId: `worker-${index}`,
          leaseMs: 60_000,
        });
        if (task === null) return;
        claims.push(performance.now() - at);
        await store.completeTask(TEAM, task.id, task.lease?.token ?? 0, { exitCode: 0 });
        done += 1;
      }
    }),
  );
  if (done !== tasks) throw new Error(`expected ${tasks} tasks completed, got ${done}`);
  return { claims, elapsedMs: performance.now() - started };
}

function rowsFor(
  backend: string,
  tasks: number,
  creates: number[],
  result: { claims: number[]; elapsedMs: number },
): Row[] {
  const race = `${CLAIMERS} claimers over ${tasks.toLocaleString('en-US')} tasks, ${backend}`;
  const perSecond = Math.round((tasks / result.elapsedMs) * 1000).toLocaleString('en-US');
  return [
    {
      section: SECTION,
      metric: `task create p50 (${backend})`,
      value: ms(percentile(creates, 50)),
    },
    {
      section: SECTION,
      metric: `task create p99 (${backend})`,
      value: ms(percentile(creates, 99)),
    },
    { section: SECTION, metric: `claim p50 (${race})`, value: ms(percentile(result.claims, 50)) },
    { section: SECTION, metric: `claim p99 (${race})`, value: ms(percentile(result.claims, 99)) },
    {
      section: SECTION,
      metric: `claim + complete throughput (${race})`,
      value: `${perSecond} tasks/s`,
    },
  ];
}

/** Rows for the benchmark table. */
export async function benchTaskStore(quick: boolean, log: (line: string) => void): Promise<Row[]> {
  const tasks = quick ? 100 : 1_000;
  const rows: Row[] = [];
  const dir = tempDir();
  const first = openSqliteStore({ path: `${dir}/bench.db` });
  const second = openSqliteStore({ path: `${dir}/bench.db` });
  try {
    log(`task-store: SQLite, ${tasks} tasks, ${CLAIMERS} claimers`);
    const creates = await create(first, tasks);
    rows.push(
      ...rowsFor(
        'SQLite, two stores on one file',
        tasks,
        creates,
        await race([first, second], tasks),
      ),
    );
  } finally {
    await Promise.all([first.close(), second.close()]);
    removeDir(dir);
  }
  const server = await probePostgres();
  if (server.url === null) {
    log(`task-store: PostgreSQL skipped (${server.reason})`);
    return rows;
  }
  const schemas = new ScratchSchemas(server.url);
  try {
    const schema = schemas.next('tasks');
    const hubA = await openPostgresStore({ connectionString: server.url, schema });
    const hubB = await openPostgresStore({ connectionString: server.url, schema });
    try {
      log(`task-store: PostgreSQL, ${tasks} tasks, ${CLAIMERS} claimers`);
      const creates = await create(hubA, tasks);
      rows.push(
        ...rowsFor('PostgreSQL, two pools', tasks, creates, await race([hubA, hubB], tasks)),
      );
    } finally {
      await Promise.all([hubA.close(), hubB.close()]);
    }
  } finally {
    await schemas.dropAll();
  }
  return rows;
}
