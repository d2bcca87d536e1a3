// The crash harness of issue 24: N tasks through a real `ctxbus serve` and real `ctxbus worker`
// processes while workers and the hub are killed with SIGKILL at random points (the hub started
// again at once on the same store and port, a killed worker replaced by a new one). Each task
// runs a tiny node script that appends its label to a log, so a second run of any task shows.
// After every task has ended (or the drain gave up), it reports what must be zero (tasks lost:
// not ended; tasks run twice: two lines of the log; audit holes: GET /api/audit/verify once the
// relay has caught up) beside how the tasks ended (completed, worker_lost, dead letters).
// Used by the integration test (task-crash.test.ts) and the benchmark (`--only task-crash`).

import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Store } from '@ctxbus/store';
import { openSqliteStore } from '@ctxbus/store';
import { call, runtimeToken } from './http.ts';
import type { CliRun, HubProcess } from './hub-process.ts';
import { removeDir, spawnCli, startHubProcess, tempDir } from './hub-process.ts';
import { waitUntil } from './wait-until.ts';
import { TASK_HUB_CAPABILITIES, workerPolicy } from './worker-policy.ts';

const TEAM = 'crash';
const ENDED = new Set(['COMPLETED', 'FAILED', 'CANCELED', 'REJECTED']);
const OPEN_STATES = 'SUBMITTED,WORKING,INPUT_REQUIRED,AUTH_REQUIRED';

/** Appends its label and pid to runs.log in its working directory: one line per run. */
const LOG_SCRIPT =
  "require('node:fs').appendFileSync('runs.log', process.argv[2] + ' ' + process.pid + '\\n');\n";

export interface TaskCrashOptions {
  /** SQLite in a fresh data directory, or a PostgreSQL store URL (`?schema=` set). */
  store: { kind: 'sqlite' } | { kind: 'postgres'; url: string; schema: string };
  tasks: number;
  /** Worker processes at any time (a killed one is replaced). */
  workers: number;
  /** Commands each worker runs at once. */
  concurrency: number;
  leaseSeconds: number;
  workerKills: number;
  hubKills: number;
  /** Picks the kill points and the workers killed (the same seed, the same plan). */
  seed: number;
  /** How long the tasks may take to end after the last one was created (a hang guard). */
  drainMs: number;
  /** Check every hub answer against its schema (slower; the tests do). */
  validateResponses?: boolean;
  log?: (line: string) => void;
}

export interface TaskCrashKill {
  what: 'worker' | 'hub';
  /** Runs logged when it happened. */
  afterRuns: number;
  atMs: number;
}

export interface TaskCrashReport {
  store: 'sqlite' | 'postgres';
  tasks: number;
  /** Tasks not ended after the drain (or never stored). */
  lost: string[];
  /** Labels whose command ran more than once. */
  ranTwice: string[];
  /** COMPLETED tasks whose command left no line (should never happen). */
  completedWithoutRun: string[];
  completed: number;
  workerLost: number;
  deadLetters: number;
  /** Other ends, `state code` -> count. */
  otherEnds: Record<string, number>;
  /** Lines in the log (runs of commands). */
  runs: number;
  /** Tasks claimed more than once (requeued after a lost lease that had not started). */
  requeued: number;
  audit: { ok: boolean; records: number; reason: string | null };
  kills: TaskCrashKill[];
  elapsedMs: number;
  /** From the last create answered to the last task ended. */
  drainMs: number;
}

/** mulberry32: small, seeded, the same plan on every run. */
function seededRandom(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Kill {
  what: 'worker' | 'hub';
  /** Runs logged before it strikes. */
  threshold: number;
}

/** The kills, each at a random point between 10% and 85% of the runs, in order. */
function killPlan(options: TaskCrashOptions, random: () => number): Kill[] {
  const kills: Kill[] = [
    ...Array.from({ length: options.workerKills }, () => ({ what: 'worker' as const })),
    ...Array.from({ length: options.hubKills }, () => ({ what: 'hub' as const })),
  ].map((kill) => ({ ...kill, threshold: Math.floor((0.1 + 0.75 * random()) * options.tasks) }));
  return kills.sort((a, b) => a.threshold - b.threshold);
}

interface Worker {
  id: string;
  run: CliRun;
}

function exited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

async function openStore(options: TaskCrashOptions, dataDir: string): Promise<Store> {
  if (options.store.kind === 'sqlite') return openSqliteStore({ path: join(dataDir, 'ctxbus.db') });
  const { openPostgresStore } = await import('@ctxbus/store/postgres');
  const url = new URL(options.store.url);
  url.searchParams.delete('schema');
  return openPostgresStore({ connectionString: url.toString(), schema: options.store.schema });
}

/** Every task of the team, oldest first. */
async function allTasks(url: string, token: string) {
  const tasks: {
    id: string;
    state: string;
    attempts: number;
    idempotencyKey: string | null;
    error: { code: string } | null;
  }[] = [];
  let after: string | null = null;
  do {
    const page = await call(url, 'GET', `/api/tasks?limit=200${after ? `&after=${after}` : ''}`, {
      token,
    });
    if (page.status !== 200) throw new Error(`listing tasks: ${JSON.stringify(page.body)}`);
    tasks.push(...page.body.tasks);
    after = page.body.nextAfter as string | null;
  } while (after !== null);
  return tasks;
}

/** Runs of each label, from the log. */
function runsByLabel(logFile: string): Map<string, number> {
  const runs = new Map<string, number>();
  if (!existsSync(logFile)) return runs;
  for (const line of readFileSync(logFile, 'utf8').split('\n')) {
    const label = line.split(' ')[0];
    if (label) runs.set(label, (runs.get(label) ?? 0) + 1);
  }
  return runs;
}

function countLines(logFile: string): number {
  if (!existsSync(logFile)) return 0;
  let lines = 0;
  for (const byte of readFileSync(logFile)) if (byte === 10) lines += 1;
  return lines;
}

export async function runTaskCrash(options: TaskCrashOptions): Promise<TaskCrashReport> {
  const log = options.log ?? (() => {});
  const random = seededRandom(options.seed);
  const hubDir = tempDir('ctxbus-crash-hub-');
  const dataDir = join(hubDir, 'data');
  const capabilities = join(hubDir, 'capabilities.yaml');
  writeFileSync(capabilities, TASK_HUB_CAPABILITIES);
  const machine = realpathSync(tempDir('ctxbus-crash-worker-'));
  const project = join(machine, 'project');
  mkdirSync(project);
  writeFileSync(join(project, 'log.js'), LOG_SCRIPT);
  const logFile = join(project, 'runs.log');
  const policyFile = join(machine, 'capabilities.yaml');
  writeFileSync(policyFile, workerPolicy(machine, ['node log.js ...']));

  const startHub = (port?: string) =>
    startHubProcess({
      ...(options.store.kind === 'postgres' ? { store: options.store.url } : { dataDir }),
      args: ['--capabilities', capabilities, ...(port ? ['--port', port] : [])],
      env: { CTXBUS_VALIDATE_RESPONSES: options.validateResponses ? '1' : '0' },
    });
  let hub: HubProcess = await startHub();
  const url = hub.url;
  const port = new URL(url).port;
  const adminToken = hub.adminToken ?? '';
  const origin = await runtimeToken(hub, TEAM, 'openclaw');
  const code = await runtimeToken(hub, TEAM, 'claude-code');
  const store = await openStore(options, dataDir);
  const workers: Worker[] = [];
  const killed = new Set<ChildProcess>();
  let started = 0;

  /** Fails when a worker died that the harness did not kill. */
  const checkWorkers = () => {
    for (const worker of workers) {
      if (exited(worker.run.child) && !killed.has(worker.run.child)) {
        throw new Error(`worker ${worker.id} exited by itself`);
      }
    }
  };
  const startWorker = async () => {
    const id = `crash-${++started}`;
    const run = spawnCli(
      [
        'worker',
        '--capabilities',
        policyFile,
        '--id',
        id,
        '--concurrency',
        String(options.concurrency),
        '--lease',
        String(options.leaseSeconds),
      ],
      {
        env: { CTXBUS_URL: url, CTXBUS_TOKEN: code, CTXBUS_LOG_LEVEL: 'warn' },
        timeoutMs: 24 * 3600_000,
      },
    );
    run.done.catch(() => {});
    workers.push({ id, run });
    // Up once it announced itself (it asked the hub for the approval key before).
    await waitUntil(
      async () => {
        if (exited(run.child)) throw new Error(`worker ${id} exited while starting`);
        const live = await store.listPresence(TEAM, new Date().toISOString());
        return live.some((instance) => instance.instanceId === id);
      },
      `worker ${id} to announce itself`,
      { timeoutMs: options.drainMs },
    );
  };

  const began = Date.now();
  const kills: TaskCrashKill[] = [];
  // Resolves while the hub is up; replaced by a pending one while it restarts.
  let hubUp: Promise<void> = Promise.resolve();
  let lastCreated = began;
  try {
    for (let index = 0; index < options.workers; index++) await startWorker();

    let next = 0;
    let producerError: unknown = null;
    const produce = async () => {
      for (let index = next++; index < options.tasks; index = next++) {
        for (let attempt = 1; ; attempt++) {
          const response = await call(url, 'POST', '/api/tasks', {
            token: origin,
            body: {
              title: `crash ${index}`,
              requiredCapabilities: ['code_execution'],
              // The same key again (the hub died before answering) returns the stored task.
              idempotencyKey: `crash-${index}`,
              input: { argv: ['node', 'log.js', `t${index}`], cwd: project },
            },
          }).catch(() => null);
          if (response && (response.status === 200 || response.status === 201)) {
            lastCreated = Date.now();
            break;
          }
          if (attempt >= 20 || (response && response.status < 500)) {
            throw new Error(`creating task ${index}: ${JSON.stringify(response?.body ?? null)}`);
          }
          await hubUp;
        }
      }
    };
    const producing = Promise.all(Array.from({ length: 4 }, produce)).catch((error: unknown) => {
      producerError = error;
    });
    const guard = { timeoutMs: options.drainMs };

    for (const kill of killPlan(options, random)) {
      await waitUntil(
        () => {
          checkWorkers();
          if (producerError) throw producerError;
          return countLines(logFile) >= kill.threshold;
        },
        `${kill.threshold} runs before killing the ${kill.what}`,
        guard,
      );
      const afterRuns = countLines(logFile);
      if (kill.what === 'worker') {
        const live = workers.filter((worker) => !exited(worker.run.child));
        const victim = live[Math.floor(random() * live.length)] as Worker;
        killed.add(victim.run.child);
        victim.run.child.kill('SIGKILL');
        await victim.run.done;
        log(`  killed worker ${victim.id} after ${afterRuns} runs`);
        await startWorker();
      } else {
        let up = () => {};
        hubUp = new Promise((resolve) => {
          up = resolve;
        });
        await hub.kill();
        log(`  killed the hub after ${afterRuns} runs`);
        hub = await startHub(port);
        up();
      }
      kills.push({ what: kill.what, afterRuns, atMs: Date.now() - began });
    }
    await producing;
    if (producerError) throw producerError;

    let drained = true;
    await waitUntil(
      async () => {
        checkWorkers();
        const open = await call(url, 'GET', `/api/tasks?state=${OPEN_STATES}&limit=1`, {
          token: origin,
        });
        return open.status === 200 && open.body.tasks.length === 0;
      },
      'every task to end',
      { timeoutMs: options.drainMs, intervalMs: 250 },
    ).catch((error: unknown) => {
      drained = false;
      log(`  ${(error as Error).message}`);
    });
    const ended = Date.now();

    // The relay has passed every event, so verification sees them all.
    await waitUntil(
      async () => {
        const { seq } = await store.taskRelayCursor();
        return (await store.listTaskOutbox(seq, 1)).length === 0;
      },
      'the relay to pass every task event',
      guard,
    );
    const verified = await call(url, 'GET', `/api/audit/verify?team=${TEAM}`, {
      token: adminToken,
    });

    const tasks = await allTasks(url, origin);
    const byKey = new Map(tasks.map((task) => [task.idempotencyKey, task]));
    const runs = runsByLabel(logFile);
    const report: TaskCrashReport = {
      store: options.store.kind,
      tasks: options.tasks,
      lost: [],
      ranTwice: [...runs].filter(([, n]) => n > 1).map(([label]) => label),
      completedWithoutRun: [],
      completed: 0,
      workerLost: 0,
      deadLetters: 0,
      otherEnds: {},
      runs: [...runs.values()].reduce((sum, n) => sum + n, 0),
      requeued: tasks.filter((task) => task.attempts > 1).length,
      audit: {
        ok: verified.body?.ok === true,
        records: Number(verified.body?.records ?? 0),
        reason: verified.body?.ok === true ? null : JSON.stringify(verified.body),
      },
      kills,
      elapsedMs: ended - began,
      drainMs: ended - lastCreated,
    };
    for (let index = 0; index < options.tasks; index++) {
      const task = byKey.get(`crash-${index}`);
      if (!task || !ENDED.has(task.state)) {
        report.lost.push(task ? `${task.id} (${task.state})` : `crash-${index} (never stored)`);
        continue;
      }
      const code = task.error?.code ?? '';
      if (task.state === 'COMPLETED') {
        report.completed += 1;
        if (!runs.has(`t${index}`)) report.completedWithoutRun.push(`t${index}`);
      } else if (task.state === 'FAILED' && code === 'worker_lost') report.workerLost += 1;
      else if (task.state === 'FAILED' && code === 'dead_letter') report.deadLetters += 1;
      else {
        const key = `${task.state} ${code}`;
        report.otherEnds[key] = (report.otherEnds[key] ?? 0) + 1;
      }
    }
    if (!drained) log(`  ${report.lost.length} tasks never ended`);
    return report;
  } finally {
    for (const worker of workers) {
      if (!exited(worker.run.child)) worker.run.child.kill('SIGTERM');
    }
    await Promise.all(workers.map((worker) => worker.run.done.catch(() => {})));
    await store.close();
    await hub.stop();
    removeDir(hubDir);
    removeDir(machine);
  }
}
