// The task path side by side (issue 24): N tasks that each run `true`, through 16 workers, on
// graphile-worker and pg-boss (npm, on the same PostgreSQL server) and on ctxbus (a real
// `ctxbus serve` on PostgreSQL and on SQLite, 4 real `ctxbus worker` processes x --concurrency 4,
// tasks created over HTTP by the origin runtime). Each system gets a fresh database, dropped
// after; the systems run alternated (twice each in a full run) so machine load hits all alike.
// Per system: tasks/s (first create sent -> last completed: a peer's last handler returning,
// ctxbus's last COMPLETED status item reaching the origin's stream), CPU ms per task of the
// producer, the hub, the workers (the spawned `true` counted apart, from the workers'
// cutime/cstime) and the run database's backends (from /proc, sampled with pg_stat_activity;
// the server's shared processes, such as the WAL writer, are left out, as are other users'
// backends), create -> started p50/p99 (a peer's handler entered; ctxbus's WORKING event, the
// hub's clock), and lock waits sampled from pg_stat_activity every ~50 ms. The peers run with
// LISTEN/NOTIFY: graphile-worker's default; pg-boss's opted in (useListenNotify, a notify
// queue) and its polling at the 0.5 s minimum, as 4 processes x localConcurrency 4.
//
// The ctxbus worker runs each command in a PID namespace of its own (bwrap: the command guard,
// so that nothing it starts outlives its task or its worker), which a bare spawn does not pay.
// Where bwrap works, each peer therefore runs twice: its handler spawning `true` bare, and
// spawning it through the same guard (`graphile-worker, guarded`). The targets compare like for
// like: ctxbus with the peers' guarded runs (their bare runs where the worker has no guard
// either); the ratios to the bare runs are printed beside them.
import { randomBytes } from 'node:crypto';
import { mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import { detectPidNamespace } from '@ctxbus/exec';
import type { HubProcess } from '@ctxbus/test-kit';
import {
  call,
  openStream,
  removeDir,
  runtimeToken,
  startHubProcess,
  TASK_HUB_CAPABILITIES,
  tempDir,
  workerPolicy,
} from '@ctxbus/test-kit';
import { storeUrl } from '@ctxbus/test-kit/postgres';
import pg from 'pg';
import { measureCommandGuard } from './command-guard.ts';
import type { Child } from './peer-children.ts';
import { startCtxbusWorker, startPeer, waitWhileAlive } from './peer-children.ts';
import type { PgWatchResult } from './pg-watch.ts';
import { PgWatch } from './pg-watch.ts';
import type { ProcessCpu } from './proc-cpu.ts';
import { cpuSince, machineBusyMs, readAll } from './proc-cpu.ts';
import type { Row } from './stats.ts';
import { ms, percentile } from './stats.ts';

const SECTION = 'task-peers';
const PROCESSES = 4;
const CONCURRENCY = 4;
const IN_FLIGHT = 32;
/** ctxbus's schema in its run database. */
const SCHEMA = 'ctxbus';

type Peer = 'graphile-worker' | 'pg-boss';
type GuardedPeer = `${Peer}-guarded`;
export type System = Peer | GuardedPeer | 'ctxbus-pg' | 'ctxbus-sqlite';

const LABELS: Record<System, string> = {
  'graphile-worker': 'graphile-worker',
  'graphile-worker-guarded': 'graphile-worker, guarded',
  'ctxbus-pg': 'ctxbus on PostgreSQL',
  'pg-boss': 'pg-boss',
  'pg-boss-guarded': 'pg-boss, guarded',
  'ctxbus-sqlite': 'ctxbus on SQLite',
};

const isPeer = (system: System): system is Peer | GuardedPeer =>
  system.startsWith('graphile-worker') || system.startsWith('pg-boss');

/** What one run of one system measured. */
interface RunResult {
  tasks: number;
  elapsedMs: number;
  producerMs: number;
  hubMs: number;
  workersMs: number;
  commandMs: number;
  databaseMs: number;
  allPostgresMs: number;
  /** This bench process's own CPU during the run (it shares the machine with the systems). */
  harnessMs: number;
  /**
   * The whole machine's busy CPU during the run: the above, the kernel's work for them that no
   * process is charged with (a jail's namespaces torn down, loopback traffic), and whatever
   * else ran. Throughput on a busy machine is about its cores / this per task.
   */
  machineMs: number;
  createToStart: number[];
  watch: PgWatchResult | null;
  /** ctxbus: claim calls its hub answered (GET /api/admin/tasks); null for the peers. */
  claimAttempts?: number;
  /** ctxbus: tasks a worker's completion claimed (its `next`), not a claim call of its own. */
  claimedWithCompletion?: number;
  /** ctxbus: task events its relay wrote per batch (status items and audit records). */
  eventsPerBatch?: number;
}

const now = () => performance.timeOrigin + performance.now();

/** Each line `sent I T [ID]` / `start I T` / `done I T` of the children, by I. */
class Timeline {
  readonly sent = new Map<number, number>();
  readonly ids = new Map<string, number>();
  readonly started = new Map<number, number>();
  readonly done = new Map<number, number>();
  ready = 0;
  produced = false;

  readonly onLine = (line: string) => {
    const [word, index, at, id] = line.split(' ');
    if (word === 'ready') this.ready += 1;
    else if (word === 'produced') this.produced = true;
    else if (word === 'sent') {
      this.sent.set(Number(index), Number(at));
      if (id) this.ids.set(id, Number(index));
    } else if (word === 'start') this.started.set(Number(index), Number(at));
    else if (word === 'done') this.done.set(Number(index), Number(at));
  };
}

/** A fresh database on the server for one run; `drop()` removes it. */
async function freshDatabase(serverUrl: string, label: string) {
  const name = `ctxbus_bench_${process.pid}_${randomBytes(3).toString('hex')}_${label}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    name,
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: serverUrl });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

async function count(url: string, sql: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return Number((await client.query<{ n: string }>(sql)).rows[0]?.n);
  } finally {
    await client.end();
  }
}

interface Measured {
  producer: Child;
  hub: number | null;
  workers: readonly Child[];
  watch: PgWatch | null;
}

let harnessBefore = process.cpuUsage();
let machineBefore = 0;

/** Starts the run (`go` to the producer) and returns what to read at its end. */
async function startRun(measured: Measured) {
  await measured.watch?.start();
  const pids = [measured.producer.pid, ...measured.workers.map((worker) => worker.pid)];
  if (measured.hub !== null) pids.push(measured.hub);
  const before = readAll(pids);
  harnessBefore = process.cpuUsage();
  machineBefore = machineBusyMs() ?? 0;
  measured.producer.process.stdin?.write('go\n');
  return before;
}

async function endRun(
  measured: Measured,
  before: ReadonlyMap<number, ProcessCpu>,
  tasks: number,
  elapsedMs: number,
  createToStart: number[],
): Promise<RunResult> {
  const producer = cpuSince(before, [measured.producer.pid]);
  const hub = measured.hub === null ? null : cpuSince(before, [measured.hub]);
  const workers = cpuSince(
    before,
    measured.workers.map((worker) => worker.pid),
  );
  const harness = process.cpuUsage(harnessBefore);
  const machineMs = (machineBusyMs() ?? machineBefore) - machineBefore;
  const watch = (await measured.watch?.stop()) ?? null;
  return {
    harnessMs: (harness.user + harness.system) / 1000,
    machineMs,
    tasks,
    elapsedMs,
    producerMs: producer.self,
    hubMs: hub?.self ?? 0,
    workersMs: workers.self,
    commandMs: workers.children,
    databaseMs: watch?.backendsMs ?? 0,
    allPostgresMs: watch?.allPostgresMs ?? 0,
    createToStart,
    watch,
  };
}

/** A peer's run; with `bwrapPath`, its handlers spawn `true` in the ctxbus worker's guard. */
async function runPeer(
  system: Peer,
  serverUrl: string,
  tasks: number,
  bwrapPath: string | null,
): Promise<RunResult> {
  const database = await freshDatabase(serverUrl, system === 'pg-boss' ? 'pgboss' : 'graphile');
  const schema = 'bench_queue';
  const timeline = new Timeline();
  const children: Child[] = [];
  const watch = new PgWatch(serverUrl, database.name);
  try {
    await watch.connect();
    const producer = startPeer(
      `${system} producer`,
      ['produce', system, database.url, schema, String(tasks), String(IN_FLIGHT)],
      timeline.onLine,
    );
    children.push(producer);
    await waitWhileAlive(children, () => timeline.ready === 1, `the ${system} producer`);
    const role = system === 'pg-boss' ? 'pg-boss-worker' : 'graphile-worker';
    const workers = Array.from({ length: PROCESSES }, (_, index) =>
      startPeer(
        `${system} worker ${index}`,
        [role, database.url, schema, String(CONCURRENCY), ...(bwrapPath ? [bwrapPath] : [])],
        timeline.onLine,
      ),
    );
    children.push(...workers);
    await waitWhileAlive(children, () => timeline.ready === 1 + PROCESSES, `${system} workers`);
    const measured = { producer, hub: null, workers, watch };
    const before = await startRun(measured);
    await waitWhileAlive(children, () => timeline.done.size >= tasks, `${tasks} ${system} jobs`);
    // The last handler returned; the run ends when the queue has recorded every completion.
    const remaining =
      system === 'pg-boss'
        ? `SELECT count(*) AS n FROM "${schema}".job WHERE state <> 'completed'`
        : `SELECT count(*) AS n FROM "${schema}"._private_jobs`;
    await waitWhileAlive(
      children,
      async () => (await count(database.url, remaining)) === 0,
      `${system} to record every completion`,
    );
    const first = Math.min(...timeline.sent.values());
    const last = Math.max(...timeline.done.values());
    const createToStart = [...timeline.started].map(
      ([index, at]) => at - (timeline.sent.get(index) as number),
    );
    return await endRun(measured, before, tasks, last - first, createToStart);
  } finally {
    await Promise.all(children.map((child) => child.stop()));
    await watch.close();
    await database.drop();
  }
}

async function startCtxbusWorkers(hub: HubProcess, token: string, origin: string, root: string) {
  const policyFile = join(root, 'capabilities.yaml');
  writeFileSync(policyFile, workerPolicy(root, ['true']));
  const workers = Array.from({ length: PROCESSES }, (_, index) =>
    startCtxbusWorker(
      `ctxbus worker ${index}`,
      [
        '--capabilities',
        policyFile,
        '--id',
        `bench-${index}`,
        '--concurrency',
        String(CONCURRENCY),
      ],
      {
        CTXBUS_URL: hub.url,
        CTXBUS_TOKEN: token,
        CTXBUS_LOG_LEVEL: 'warn',
        // Profiling a worker: e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof".
        NODE_OPTIONS: process.env.CTXBUS_BENCH_WORKER_NODE_OPTIONS ?? '',
      },
    ),
  );
  await waitWhileAlive(
    workers,
    async () => {
      const view = await call(hub.url, 'GET', '/api/capabilities', { token: origin });
      const runtime = (view.body.runtimes as { id: string; presence: { workers: number } }[]).find(
        (entry) => entry.id === 'claude-code',
      );
      return (runtime?.presence.workers ?? 0) >= PROCESSES;
    },
    'the ctxbus workers to announce themselves',
  );
  return workers;
}

/** A stall in the announcements that fails the run (a lost announcement, not a slow one). */
const STALL_MS = 120_000;

/** The origin follows its tasks on its stream, as an origin runtime does. */
async function followCompletions(hub: HubProcess, origin: string) {
  const completed = new Map<string, number>();
  let failure: string | null = null;
  const stream = openStream(hub.url, origin, {
    query: 'tags=task',
    onEvent(event) {
      if (event.event === 'ready' || event.event === 'disconnect') return;
      const { item } = JSON.parse(event.data);
      const task = item?.runtimeOptions?.task as { id: string; state: string } | undefined;
      if (task?.state === 'COMPLETED' && !completed.has(task.id)) completed.set(task.id, now());
      if (task?.state === 'FAILED' || task?.state === 'REJECTED')
        failure = `ctxbus task ${task.id} ended ${task.state}`;
    },
  });
  await stream.ready;
  let progressAt = now();
  let seen = 0;
  return {
    /**
     * How many completed so far; throws when one failed, or when every task was sent and none
     * more was announced for STALL_MS (a task whose end is never announced: name it, not hang).
     */
    completed(sent?: ReadonlyMap<string, number>) {
      if (failure) throw new Error(failure);
      if (completed.size !== seen) [seen, progressAt] = [completed.size, now()];
      if (sent && now() - progressAt > STALL_MS) {
        const missing = [...sent.keys()].filter((id) => !completed.has(id));
        throw new Error(
          `no completion announced on the origin's stream for ${STALL_MS / 1000} s; ${missing.length} tasks never announced: ${missing.slice(0, 5).join(', ')}`,
        );
      }
      return completed.size;
    },
    last: () => Math.max(...completed.values()),
    close: () => stream.close(),
  };
}

/** When each task went WORKING, from its history (the hub's clock, 1 ms resolution). */
async function startedAt(hub: HubProcess, token: string, ids: Iterable<string>) {
  const started = new Map<string, number>();
  for (const id of ids) {
    const { body } = await call(hub.url, 'GET', `/api/tasks/${id}`, { token });
    const working = (body.history as { to: string; at: string }[]).find(
      (event) => event.to === 'WORKING',
    );
    if (working) started.set(id, Date.parse(working.at));
  }
  return started;
}

async function runCtxbus(
  system: 'ctxbus-pg' | 'ctxbus-sqlite',
  serverUrl: string | null,
  tasks: number,
): Promise<RunResult> {
  const dataDir = tempDir('ctxbus-bench-peers-');
  const machine = realpathSync(tempDir('ctxbus-bench-peers-worker-'));
  const project = join(machine, 'project');
  mkdirSync(project);
  const capabilities = join(dataDir, 'capabilities.yaml');
  writeFileSync(capabilities, TASK_HUB_CAPABILITIES);
  const database =
    system === 'ctxbus-pg' && serverUrl ? await freshDatabase(serverUrl, 'ctxbus') : null;
  // The hub's advisory locks (packages/store's PostgreSQL tasks: the quoted schema's keys)
  // named in the lock report.
  const watch =
    database && serverUrl
      ? new PgWatch(serverUrl, database.name, {
          'task event appends, one at a time': `"${SCHEMA}".task_events`,
          "createTask's per-runtime waiting count": `"${SCHEMA}".tasks/bench/claude-code`,
        })
      : null;
  const timeline = new Timeline();
  const children: Child[] = [];
  let hub: HubProcess | null = null;
  try {
    await watch?.connect();
    hub = await startHubProcess({
      ...(database ? { store: storeUrl(database.url, SCHEMA) } : { dataDir }),
      args: ['--log-level', 'warn', '--capabilities', capabilities],
      env: {
        CTXBUS_VALIDATE_RESPONSES: '0',
        // e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`: profile the hub alone.
        NODE_OPTIONS: process.env.CTXBUS_BENCH_HUB_NODE_OPTIONS ?? '',
      },
    });
    const origin = await runtimeToken(hub, 'bench', 'openclaw');
    const code = await runtimeToken(hub, 'bench', 'claude-code');
    const producer = startPeer(
      'ctxbus producer',
      ['produce', 'ctxbus', hub.url, origin, String(tasks), String(IN_FLIGHT), project],
      timeline.onLine,
    );
    children.push(producer);
    children.push(...(await startCtxbusWorkers(hub, code, origin, machine)));
    await waitWhileAlive(children, () => timeline.ready === 1, 'the ctxbus producer');
    const follow = await followCompletions(hub, origin);
    const measured = {
      producer,
      hub: hub.process.pid ?? 0,
      workers: children.slice(1),
      watch,
    };
    const before = await startRun(measured);
    await waitWhileAlive(
      children,
      () => timeline.produced && follow.completed(timeline.ids) >= tasks,
      `${tasks} ctxbus tasks completed on the origin's stream`,
    );
    follow.close();
    const first = Math.min(...timeline.sent.values());
    const last = follow.last();
    const result = await endRun(measured, before, tasks, last - first, []);
    const stats = await call(hub.url, 'GET', '/api/admin/tasks', { token: hub.adminToken ?? '' });
    if (stats.status === 200) {
      result.claimAttempts = stats.body.claims.attempts as number;
      result.claimedWithCompletion = stats.body.claims.takenWithCompletion as number;
      const { batches, events } = stats.body.relay as { batches: number; events: number };
      if (batches > 0) result.eventsPerBatch = events / batches;
    }
    const started = await startedAt(hub, origin, timeline.ids.keys());
    for (const [id, index] of timeline.ids) {
      const at = started.get(id);
      if (at !== undefined) result.createToStart.push(at - (timeline.sent.get(index) as number));
    }
    return result;
  } finally {
    await Promise.all(children.map((child) => child.stop()));
    await hub?.stop();
    await watch?.close();
    await database?.drop();
    removeDir(dataDir);
    removeDir(machine);
  }
}

function runSystem(system: System, serverUrl: string | null, tasks: number, bwrap: string | null) {
  if (!isPeer(system)) return runCtxbus(system, serverUrl, tasks);
  const guarded = system.endsWith('-guarded');
  return runPeer(
    system.replace('-guarded', '') as Peer,
    serverUrl as string,
    tasks,
    guarded ? bwrap : null,
  );
}

function merge(runs: readonly RunResult[]): RunResult {
  const total = (pick: (run: RunResult) => number) => runs.reduce((sum, run) => sum + pick(run), 0);
  const lockWaits = new Map<string, number>();
  let samples = 0;
  let samplesWithLockWait = 0;
  for (const run of runs) {
    samples += run.watch?.samples ?? 0;
    samplesWithLockWait += run.watch?.samplesWithLockWait ?? 0;
    for (const [query, n] of run.watch?.lockWaits ?? [])
      lockWaits.set(query, (lockWaits.get(query) ?? 0) + n);
  }
  return {
    tasks: total((run) => run.tasks),
    elapsedMs: total((run) => run.elapsedMs),
    producerMs: total((run) => run.producerMs),
    hubMs: total((run) => run.hubMs),
    workersMs: total((run) => run.workersMs),
    commandMs: total((run) => run.commandMs),
    databaseMs: total((run) => run.databaseMs),
    allPostgresMs: total((run) => run.allPostgresMs),
    harnessMs: total((run) => run.harnessMs),
    machineMs: total((run) => run.machineMs),
    createToStart: runs.flatMap((run) => run.createToStart),
    ...(runs.every((run) => run.claimAttempts !== undefined) && {
      claimAttempts: total((run) => run.claimAttempts ?? 0),
    }),
    ...(runs.every((run) => run.claimedWithCompletion !== undefined) && {
      claimedWithCompletion: total((run) => run.claimedWithCompletion ?? 0),
    }),
    ...(runs.every((run) => run.eventsPerBatch !== undefined) && {
      eventsPerBatch: total((run) => run.eventsPerBatch ?? 0) / runs.length,
    }),
    watch: runs.some((run) => run.watch)
      ? { backendsMs: 0, allPostgresMs: 0, samples, lockWaits, samplesWithLockWait }
      : null,
  };
}

const cores = availableParallelism();

const perTask = (run: RunResult) =>
  (run.producerMs + run.hubMs + run.workersMs + run.databaseMs) / run.tasks;
const rate = (run: RunResult) => (run.tasks / run.elapsedMs) * 1000;

function describeRun(system: System, run: RunResult): string {
  const each = (value: number) => (value / run.tasks).toFixed(2);
  return (
    `${LABELS[system]}: ${run.tasks} tasks in ${(run.elapsedMs / 1000).toFixed(1)} s ` +
    `(${rate(run).toFixed(1)} tasks/s); CPU ms per task: producer ${each(run.producerMs)}, ` +
    `hub ${each(run.hubMs)}, workers ${each(run.workersMs)}, database ${each(run.databaseMs)} ` +
    `(every postgres process of the machine, others' too, less backends that ended: ${each(run.allPostgresMs)}), command ${each(run.commandMs)}, this bench process ${each(run.harnessMs)}; the whole machine ${each(run.machineMs)} of ${cores} cores; ` +
    `create -> started p50 ${ms(percentile(run.createToStart, 50))}`
  );
}

function systemRows(system: System, run: RunResult): Row[] {
  const label = LABELS[system];
  const each = (value: number) => (value / run.tasks).toFixed(2);
  const row = (metric: string, value: string): Row => ({
    section: SECTION,
    metric: `${label}: ${metric}`,
    value,
  });
  return [
    row(
      `throughput (${run.tasks.toLocaleString('en-US')} tasks, ${PROCESSES} processes x ${CONCURRENCY})`,
      `${rate(run).toFixed(1)} tasks/s`,
    ),
    row('CPU per task, command excluded', ms(perTask(run))),
    row(
      'CPU per task, split',
      `producer ${each(run.producerMs)} + hub ${each(run.hubMs)} + workers ${each(run.workersMs)} + database ${each(run.databaseMs)} ms; command ${each(run.commandMs)} ms`,
    ),
    row(
      `the whole machine's busy CPU per task (${cores} cores; the kernel's work and others' too)`,
      ms(run.machineMs / run.tasks),
    ),
    row('create -> started p50', ms(percentile(run.createToStart, 50))),
    row('create -> started p99', ms(percentile(run.createToStart, 99))),
  ];
}

/**
 * ctxbus against the peers. The targets compare like for like: with the peers' handlers
 * spawning `true` in the same guard as the ctxbus worker's commands (`guarded`), or bare when
 * this machine has no guard (the ctxbus worker then runs its commands bare too). The ratios to
 * the bare peers, where the guarded ones ran, are printed beside them, without a target.
 */
function ratioRows(results: ReadonlyMap<System, RunResult>, guarded: boolean): Row[] {
  const rows: Row[] = [];
  const like = (peer: Peer) => results.get(guarded ? `${peer}-guarded` : peer);
  for (const system of ['ctxbus-pg', 'ctxbus-sqlite'] as const) {
    const run = results.get(system);
    if (!run) continue;
    const add = (metric: string, value: number, target?: { text: string; ok: boolean }) =>
      rows.push({
        section: SECTION,
        metric: `${LABELS[system]}: ${metric}`,
        value: `${value.toFixed(2)}x`,
        ...(target && { target: target.text, ok: target.ok }),
      });
    const as = (peer: Peer) => (guarded ? `${peer}'s, guarded` : `${peer}'s`);
    const graphile = like('graphile-worker');
    const boss = like('pg-boss');
    if (graphile) {
      const cpu = perTask(run) / perTask(graphile);
      add(`CPU per task / ${as('graphile-worker')}`, cpu, { text: '<= 2.0x', ok: cpu <= 2 });
    }
    if (boss) {
      const speed = rate(run) / rate(boss);
      add(`tasks/s / ${as('pg-boss')}`, speed, { text: '>= 1.0x', ok: speed >= 1 });
    }
    if (graphile) {
      const speed = rate(run) / rate(graphile);
      add(`tasks/s / ${as('graphile-worker')}`, speed, { text: '>= 0.5x', ok: speed >= 0.5 });
    }
    if (!guarded) continue;
    const bareGraphile = results.get('graphile-worker');
    const bareBoss = results.get('pg-boss');
    const bare = "'s, bare (its `true` unguarded, ctxbus's guarded)";
    if (bareGraphile)
      add(`CPU per task / graphile-worker${bare}`, perTask(run) / perTask(bareGraphile));
    if (bareBoss) add(`tasks/s / pg-boss${bare}`, rate(run) / rate(bareBoss));
    if (bareGraphile) add(`tasks/s / graphile-worker${bare}`, rate(run) / rate(bareGraphile));
  }
  return rows;
}

/**
 * What the ctxbus worker's command guard (a PID namespace per command) costs the machine per
 * spawned `true`, measured apart from the runs.
 */
async function guardRows(results: ReadonlyMap<System, RunResult>, spawns: number) {
  const ran = (['ctxbus-pg', 'ctxbus-sqlite'] as const).filter((system) => results.has(system));
  if (ran.length === 0) return [];
  const cost = await measureCommandGuard(spawns);
  if (cost === null)
    return [{ section: SECTION, metric: 'the command guard', value: 'skipped: no usable bwrap' }];
  const pair = (plain: number, guarded: number) =>
    `${plain.toFixed(1)} / ${guarded.toFixed(1)} ms (+${(guarded - plain).toFixed(1)} ms)`;
  return [
    {
      section: SECTION,
      metric: `the command guard: CPU per \`true\` spawned from Node bare / in a PID namespace (bwrap), ${spawns} each, of the processes`,
      value: pair(cost.plainMs, cost.guardedMs),
    },
    {
      section: SECTION,
      metric:
        "the command guard: the same, the whole machine's busy CPU (the kernel's work for no process too; others' load too)",
      value: pair(cost.plainMachineMs, cost.guardedMachineMs),
    },
  ];
}

function lockRows(run: RunResult | undefined): Row[] {
  if (!run?.watch) return [];
  const waits = [...run.watch.lockWaits].sort((a, b) => b[1] - a[1]);
  const audit = waits.filter(([query]) => /audit/i.test(query)).reduce((sum, [, n]) => sum + n, 0);
  const label = LABELS['ctxbus-pg'];
  return [
    {
      section: SECTION,
      metric: `${label}: pg_stat_activity samples with a backend waiting on a lock`,
      value: `${run.watch.samplesWithLockWait} of ${run.watch.samples}`,
    },
    {
      section: SECTION,
      metric: `${label}: lock waits by query (backend-samples)`,
      value:
        waits
          .slice(0, 4)
          .map(([query, n]) => `${n} "${query}"`)
          .join('; ') || 'none',
    },
    {
      section: SECTION,
      metric: `${label}: lock waits on the audit chain (backend-samples)`,
      value: String(audit),
      target: '0',
      ok: audit === 0,
    },
  ];
}

export interface TaskPeersOptions {
  quick: boolean;
  log: (line: string) => void;
  /** The PostgreSQL server, or null: then only ctxbus on SQLite runs, and the rows say why. */
  serverUrl: string | null;
  skipReason?: string;
  /** Tasks per run (default 1,000; 200 quick). */
  tasks?: number;
}

export async function benchTaskPeers(options: TaskPeersOptions): Promise<Row[]> {
  const tasks = options.tasks ?? (options.quick ? 200 : 1_000);
  // CTXBUS_BENCH_PEER_SYSTEMS=ctxbus-pg,graphile-worker: only these (profiling one system).
  const only = process.env.CTXBUS_BENCH_PEER_SYSTEMS?.split(',') ?? null;
  // The ctxbus worker's guard, which the peers' guarded runs use too (none: they do not run).
  const guard = await detectPidNamespace();
  const bwrap = guard.available ? guard.bwrapPath : null;
  const all: System[] = [
    'graphile-worker',
    'graphile-worker-guarded',
    'ctxbus-pg',
    'pg-boss',
    'pg-boss-guarded',
    'ctxbus-sqlite',
  ];
  const order: System[] =
    options.serverUrl === null
      ? ['ctxbus-sqlite']
      : all.filter(
          (system) =>
            (only === null || only.includes(system)) &&
            (bwrap !== null || !system.endsWith('-guarded')),
        );
  const rounds = options.quick ? 1 : 2;
  const runs = new Map<System, RunResult[]>();
  const loadBefore = loadavg()[0] ?? 0;
  for (let round = 0; round < rounds; round++) {
    for (const system of order) {
      options.log(
        `task-peers: ${LABELS[system]}, ${tasks} tasks (round ${round + 1} of ${rounds})`,
      );
      const run = await runSystem(system, options.serverUrl, tasks, bwrap);
      options.log(`  ${describeRun(system, run)}`);
      runs.set(system, [...(runs.get(system) ?? []), run]);
    }
  }
  const results = new Map([...runs].map(([system, list]) => [system, merge(list)] as const));
  const rows: Row[] = [
    {
      section: SECTION,
      metric: 'load average (1 min) before / after',
      value: `${loadBefore.toFixed(1)} / ${(loadavg()[0] ?? 0).toFixed(1)}`,
    },
  ];
  for (const system of order) rows.push(...systemRows(system, results.get(system) as RunResult));
  rows.push(...ratioRows(results, bwrap !== null));
  if (bwrap === null && options.serverUrl !== null)
    rows.push({
      section: SECTION,
      metric: 'graphile-worker and pg-boss, guarded',
      value: `skipped: no command guard here (${guard.available ? 'bwrap' : guard.reason}), so the ctxbus worker runs its commands bare too`,
    });
  rows.push(...(await guardRows(results, options.quick ? 100 : 300)));
  rows.push(...lockRows(results.get('ctxbus-pg')));
  for (const system of ['ctxbus-pg', 'ctxbus-sqlite'] as const) {
    const run = results.get(system);
    if (run?.claimAttempts === undefined) continue;
    const ratio = run.claimAttempts / run.tasks;
    rows.push({
      section: SECTION,
      metric: `${LABELS[system]}: claim attempts per task (idle workers racing for each new task)`,
      value: ratio.toFixed(2),
      target: '<= 1.1',
      ok: ratio <= 1.1,
    });
    if (run.claimedWithCompletion !== undefined) {
      rows.push({
        section: SECTION,
        metric: `${LABELS[system]}: tasks claimed by a completion (the worker's next task in the same call)`,
        value: `${((100 * run.claimedWithCompletion) / run.tasks).toFixed(0)}%`,
      });
    }
    if (run.eventsPerBatch !== undefined) {
      rows.push({
        section: SECTION,
        metric: `${LABELS[system]}: task events per relay batch (each batch: one item write, one audit transaction)`,
        value: run.eventsPerBatch.toFixed(1),
      });
    }
  }
  if (options.serverUrl === null)
    rows.push({
      section: SECTION,
      metric: 'graphile-worker, pg-boss, ctxbus on PostgreSQL',
      value: `skipped: ${options.skipReason ?? 'no PostgreSQL server'}`,
    });
  return rows;
}
