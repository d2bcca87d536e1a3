import { join } from 'node:path';
import { taskRelayReport } from '@ctxbus/hub';
import { openPostgresStore } from '@ctxbus/store/postgres';
import type { TestHub } from '@ctxbus/test-kit';
import { call, waitUntil } from '@ctxbus/test-kit';
import { sql, storeUrl, withPostgres } from '@ctxbus/test-kit/postgres';
import { describe, expect, it } from 'vitest';
import { useInProcessHub } from './in-process-serve.ts';

// 16 workers racing over 400 tasks through real hubs (HTTP claim and complete, each with its
// fencing token): every task runs exactly once to completion, none lost, none claimed twice.
// On PostgreSQL the workers are split over two hubs sharing one schema; on SQLite one hub.
// On PostgreSQL, where task changes commit side by side in any order, every committed change
// is then announced (its status item) and audited exactly once: the relay passes no event.
// Every claim races the other 15 workers whatever the count; the count sets how many races
// run, and each task is three HTTP calls and a relayed, audited event or three (the file's
// CPU grows with it: 1,000 tasks took 20 s of CPU, the suite's most). The claim itself is
// raced over 1,000 tasks by 16 claimers on each backend at the store
// (packages/store/src/task-concurrency.test.ts).

const TASKS = 400;
const WORKERS = 16;
const capabilities = join(import.meta.dirname, '../../../capabilities.yaml');

async function createTasks(hub: TestHub, token: string): Promise<string[]> {
  const ids: string[] = [];
  for (let start = 0; start < TASKS; start += 25) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(25, TASKS - start) }, async (_, offset) => {
        const response = await call(hub.url, 'POST', '/api/tasks', {
          token,
          body: {
            title: `race ${start + offset}`,
            requiredCapabilities: ['code_execution'],
            input: { argv: ['npm', 'test'] },
          },
        });
        if (response.status !== 201) throw new Error(JSON.stringify(response.body));
        return response.body.task.id as string;
      }),
    );
    ids.push(...batch);
  }
  return ids;
}

async function race(hubs: { hub: TestHub; token: string }[]) {
  const claimed: { taskId: string; worker: string }[] = [];
  const refused: unknown[] = [];
  await Promise.all(
    Array.from({ length: WORKERS }, async (_, index) => {
      const { hub, token } = hubs[index % hubs.length] as { hub: TestHub; token: string };
      const worker = `w${index}`;
      for (;;) {
        const response = await call(hub.url, 'POST', '/api/tasks/claim', {
          token,
          body: { workerId: worker, leaseMs: 120_000 },
        });
        expect(response.status).toBe(200);
        const task = response.body.task;
        if (task === null) return;
        claimed.push({ taskId: task.id, worker });
        const done = await call(hub.url, 'POST', `/api/tasks/${task.id}/complete`, {
          token,
          body: { token: task.lease.token, result: { worker } },
        });
        if (done.status !== 200) refused.push(done.body);
      }
    }),
  );
  return { claimed, refused };
}

async function expectEachOnce(
  hub: TestHub,
  token: string,
  ids: string[],
  result: Awaited<ReturnType<typeof race>>,
) {
  expect(result.refused).toEqual([]);
  expect(result.claimed).toHaveLength(TASKS);
  expect(new Set(result.claimed.map((entry) => entry.taskId))).toEqual(new Set(ids));
  const byWorker = new Map(result.claimed.map((entry) => [entry.taskId, entry.worker]));
  let after: string | undefined;
  let completed = 0;
  for (;;) {
    const page = await call(
      hub.url,
      'GET',
      `/api/tasks?limit=200${after ? `&after=${after}` : ''}`,
      { token },
    );
    const tasks = page.body.tasks as {
      id: string;
      state: string;
      attempts: number;
      result: { worker: string };
    }[];
    if (tasks.length === 0) break;
    for (const task of tasks) {
      expect(task.state).toBe('COMPLETED');
      expect(task.attempts).toBe(1);
      expect(task.result.worker).toBe(byWorker.get(task.id));
      completed += 1;
    }
    after = tasks.at(-1)?.id;
  }
  expect(completed).toBe(TASKS);
}

describe('16 workers racing over 400 tasks through one SQLite hub', () => {
  const hub = useInProcessHub({
    args: ['--capabilities', capabilities],
    tokens: { claw: ['race', 'openclaw'], code: ['race', 'claude-code'] },
  });
  it('runs every task exactly once to completion', async () => {
    const ids = await createTasks(hub, hub.tokens.claw);
    const result = await race([{ hub, token: hub.tokens.code }]);
    await expectEachOnce(hub, hub.tokens.code, ids, result);
  });
});

await withPostgres('tasks racing through two hubs on PostgreSQL', (url, schemas) => {
  describe('16 workers racing over 400 tasks through two hubs on one PostgreSQL schema', () => {
    const schema = schemas.next('race');
    const a = useInProcessHub({
      store: storeUrl(url, schema),
      args: ['--capabilities', capabilities],
      tokens: { claw: ['race', 'openclaw'], code: ['race', 'claude-code'] },
    });
    const b = useInProcessHub({
      store: storeUrl(url, schema),
      args: ['--capabilities', capabilities],
    });

    it('runs every task exactly once to completion, half the workers on each hub', async () => {
      const ids = await createTasks(a, a.tokens.claw);
      // Tokens live in the shared store: minted through one hub, valid on both.
      const result = await race([
        { hub: a, token: a.tokens.code },
        { hub: b, token: a.tokens.code },
      ]);
      // Both hubs took part.
      const workers = new Set(result.claimed.map((entry) => Number(entry.worker.slice(1)) % 2));
      expect(workers).toEqual(new Set([0, 1]));
      await expectEachOnce(a, a.tokens.code, ids, result);
      await expectEveryEventRelayed(url, schema);
    });
  });
});

/** Once the relays' cursor has passed the last event: each event announced and audited once. */
async function expectEveryEventRelayed(url: string, schema: string) {
  const [last] = await sql<{ seq: string }>(
    url,
    `SELECT max(seq) AS seq FROM "${schema}".task_events`,
  );
  await waitUntil(async () => {
    const [cursor] = await sql<{ seq: string }>(
      url,
      `SELECT seq FROM "${schema}".task_relay WHERE name = 'tasks'`,
    );
    return Number(cursor?.seq) >= Number(last?.seq);
  }, 'the task relays to pass the last task event');
  const store = await openPostgresStore({ connectionString: url, schema, migrate: false });
  try {
    const report = await taskRelayReport(store, 'race');
    expect(report.events).toBe(TASKS * 3); // created, claimed, completed
    expect(report).toMatchObject({ unannounced: [], misaudited: [] });
    expect(report.auditRecords).toBe(report.expectedAuditRecords);
  } finally {
    await store.close();
  }
}
