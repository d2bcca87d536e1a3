// Tasks through a real hub and real `ctxbus worker` processes (issue 12): an OpenClaw-origin
// task that needs code_execution, routed to Claude Code's idle connected worker, running
// `true` in a project directory. Measured one task at a time: create -> claimed (the task's
// WORKING event, hub clock, against the time the create was sent), claim -> process spawned
// (the worker's own measure, in the result), result -> the origin's SSE stream (the COMPLETED
// status item's creation to its arrival). Then 1,000 tasks (200 with --quick) through 16
// workers (4 processes x --concurrency 4): throughput and create -> completed p99.
import { mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CliRun } from '@ctxbus/test-kit';
import {
  call,
  openStream,
  removeDir,
  runtimeToken,
  spawnCli,
  startHubProcess,
  TASK_HUB_CAPABILITIES,
  tempDir,
  waitUntil,
  workerPolicy,
} from '@ctxbus/test-kit';
import type { Row } from './stats.ts';
import { ms, percentile } from './stats.ts';

const SECTION = 'tasks';

/** The worker's policy: it runs `true` under `root`. */
const policy = (root: string) => workerPolicy(root, ['true']);

export async function benchTaskLatency(
  quick: boolean,
  log: (line: string) => void,
): Promise<Row[]> {
  const dataDir = tempDir('ctxbus-bench-tasks-');
  const machine = realpathSync(tempDir('ctxbus-bench-worker-'));
  const project = join(machine, 'project');
  mkdirSync(project);
  writeFileSync(join(dataDir, 'capabilities.yaml'), TASK_HUB_CAPABILITIES);
  const policyFile = join(machine, 'capabilities.yaml');
  writeFileSync(policyFile, policy(machine));
  const hub = await startHubProcess({ dataDir });
  const workers: CliRun[] = [];
  const rows: Row[] = [];
  try {
    const claw = await runtimeToken(hub, 'bench', 'openclaw');
    const code = await runtimeToken(hub, 'bench', 'claude-code');
    const startWorkers = async (count: number, concurrency: number) => {
      for (let index = 0; index < count; index++) {
        workers.push(
          spawnCli(
            [
              'worker',
              '--capabilities',
              policyFile,
              '--id',
              `bench-${workers.length}`,
              '--concurrency',
              String(concurrency),
            ],
            {
              env: { CTXBUS_URL: hub.url, CTXBUS_TOKEN: code, CTXBUS_LOG_LEVEL: 'warn' },
              timeoutMs: 600_000,
            },
          ),
        );
      }
      await waitUntil(
        async () => {
          const view = await call(hub.url, 'GET', '/api/capabilities', { token: claw });
          const runtime = (
            view.body.runtimes as { id: string; presence: { workers: number } }[]
          ).find((entry) => entry.id === 'claude-code');
          return (runtime?.presence.workers ?? 0) >= workers.length;
        },
        'the workers to announce themselves',
        { timeoutMs: 60_000 },
      );
    };
    const stream = openStream(hub.url, claw, { query: 'tags=task' });
    await stream.ready;
    const arrivals = new Map<string, number>();
    const completedItems = new Map<string, number>();
    const seen = stream.items.bind(stream);
    const poll = () => {
      for (const event of seen()) {
        const task = event.item.runtimeOptions?.task as { id: string; state: string } | undefined;
        if (task?.state === 'COMPLETED' && !arrivals.has(task.id)) {
          arrivals.set(task.id, Date.now());
          completedItems.set(task.id, Date.parse(event.item.createdAt));
        }
      }
    };
    const create = async () => {
      const sent = Date.now();
      const response = await call(hub.url, 'POST', '/api/tasks', {
        token: claw,
        body: {
          title: 'bench',
          requiredCapabilities: ['code_execution'],
          input: { argv: ['true'], cwd: project },
        },
      });
      if (response.status !== 201) throw new Error(JSON.stringify(response.body));
      return { id: response.body.task.id as string, sent };
    };

    // One at a time, one idle worker.
    await startWorkers(1, 1);
    const single = quick ? 30 : 200;
    const claimed: number[] = [];
    const spawned: number[] = [];
    const toSse: number[] = [];
    for (let index = 0; index < single; index++) {
      const { id, sent } = await create();
      await stream.waitFor(() => {
        poll();
        return arrivals.has(id);
      }, 30_000);
      const { body } = await call(hub.url, 'GET', `/api/tasks/${id}`, { token: claw });
      const working = (body.history as { to: string; at: string }[]).find(
        (event) => event.to === 'WORKING',
      );
      if (working) claimed.push(Date.parse(working.at) - sent);
      if (typeof body.task.result?.claimToSpawnMs === 'number')
        spawned.push(body.task.result.claimToSpawnMs);
      toSse.push((arrivals.get(id) as number) - (completedItems.get(id) as number));
    }
    const add = (metric: string, value: number, target?: number) =>
      rows.push({
        section: SECTION,
        metric,
        value: ms(value),
        ...(target !== undefined && { target: `<= ${target} ms`, ok: value <= target }),
      });
    add('task create -> claimed by an idle connected worker p50', percentile(claimed, 50), 20);
    add('task create -> claimed by an idle connected worker p99', percentile(claimed, 99), 60);
    add('claim -> process spawned p50', percentile(spawned, 50), 15);
    add("result -> origin's SSE p99", percentile(toSse, 99), 25);
    log(`tasks: ${single} one at a time (create -> claimed, hub clock at 1 ms resolution)`);

    // Throughput: 16 workers.
    await startWorkers(3, 4);
    const total = quick ? 100 : 1_000;
    // The first worker runs one at a time; the three others four each: 13 in all, plus
    // one more process so that 16 claim at once.
    await startWorkers(1, 3);
    const started = performance.now();
    const sent = new Map<string, number>();
    for (let index = 0; index < total; index += 50) {
      const batch = await Promise.all(Array.from({ length: Math.min(50, total - index) }, create));
      for (const { id, sent: at } of batch) sent.set(id, at);
    }
    await stream.waitFor(() => {
      poll();
      return [...sent.keys()].every((id) => arrivals.has(id));
    }, 600_000);
    const elapsed = performance.now() - started;
    const endToEnd = [...sent].map(([id, at]) => (arrivals.get(id) as number) - at);
    rows.push({
      section: SECTION,
      metric: `${total} tasks through 16 workers (5 processes): throughput`,
      value: `${Math.round((total / elapsed) * 1000).toLocaleString('en-US')} tasks/s`,
    });
    add(
      `${total} tasks through 16 workers: create -> completed on the origin's stream p99`,
      percentile(endToEnd, 99),
    );
    stream.close();
  } finally {
    for (const worker of workers) worker.child.kill('SIGTERM');
    await Promise.allSettled(workers.map((worker) => worker.done));
    await hub.stop();
    removeDir(dataDir);
    removeDir(machine);
  }
  return rows;
}
