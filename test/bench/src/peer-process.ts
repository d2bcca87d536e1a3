// One process of the side-by-side task benchmark (task-peers.ts starts several): a worker of
// graphile-worker or pg-boss whose handler spawns `true` and waits for it to exit, or the
// producer of a run (graphile-worker, pg-boss, or ctxbus over HTTP as the origin runtime).
// Processes of their own, so that each one's CPU time is read from /proc apart.
//
//   node peer-process.ts graphile-worker <postgres url> <schema> <concurrency> [bwrap]
//   node peer-process.ts pg-boss-worker <postgres url> <schema> <concurrency> [bwrap]
//
// With a bwrap path, the handler spawns `true` in the PID namespace the ctxbus worker puts
// every unsandboxed command in (the same argv, @ctxbus/exec's pidNamespaceArgv): a queue
// doing what the ctxbus worker does for its commands, so that the two compare like for like.
//   node peer-process.ts produce graphile-worker|pg-boss <postgres url> <schema> <tasks> <in flight>
//   node peer-process.ts produce ctxbus <hub url> <token> <tasks> <in flight> <cwd>
//
// It speaks in lines on stdout: `ready` once set up, `start I T` / `done I T` around each
// handler, `sent I T [TASK ID]` before each create, `produced` after the last. T is the
// epoch in ms (fractional). A producer creates when it reads `go` on stdin, and every process
// stays until SIGTERM (or stdin closes), so that its CPU can be read after the run.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { pidNamespaceArgv } from '@ctxbus/exec';
import { Logger, makeWorkerUtils, run, runMigrations } from 'graphile-worker';
import { PgBoss } from 'pg-boss';

/** The job's name on both peers. */
const JOB = 'bench';

const now = () => performance.timeOrigin + performance.now();
const say = (line: string) => process.stdout.write(`${line}\n`);

/** graphile-worker's log: warnings and errors only, to stderr. */
const quiet = new Logger(() => (level, message) => {
  if (level === 'error' || level === 'warning') process.stderr.write(`${level}: ${message}\n`);
});

/** What a handler spawns: `true`, bare or in the ctxbus worker's guard. */
let command: readonly string[] = ['true'];

function runTrue(): Promise<void> {
  return new Promise((resolve, reject) => {
    const [program = 'true', ...args] = command;
    const child = spawn(program, args, { stdio: 'ignore' });
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`${command.join(' ')} exited with ${code}`)),
    );
  });
}

async function handle(index: number): Promise<void> {
  say(`start ${index} ${now()}`);
  await runTrue();
  say(`done ${index} ${now()}`);
}

/** Resolves on SIGTERM or when the parent closes stdin. */
function untilStopped(): Promise<void> {
  return new Promise((resolve) => {
    process.once('SIGTERM', () => resolve());
    process.stdin.once('end', () => resolve());
    process.stdin.resume();
  });
}

function goSignal(): Promise<void> {
  return new Promise((resolve) => {
    const lines = createInterface({ input: process.stdin });
    lines.on('line', (line) => {
      if (line.trim() === 'go') {
        lines.close();
        resolve();
      }
    });
  });
}

async function graphileWorker(url: string, schema: string, concurrency: number) {
  const runner = await run({
    connectionString: url,
    schema,
    concurrency,
    maxPoolSize: concurrency + 2,
    noHandleSignals: true,
    logger: quiet,
    taskList: { [JOB]: (payload) => handle((payload as { i: number }).i) },
  });
  say('ready');
  await untilStopped();
  await runner.stop();
}

function pgBoss(url: string, schema: string, max: number): PgBoss {
  const boss = new PgBoss({ connectionString: url, schema, max, useListenNotify: true });
  boss.on('error', (error) => process.stderr.write(`pg-boss: ${error.message}\n`));
  return boss;
}

async function pgBossWorker(url: string, schema: string, concurrency: number) {
  const boss = pgBoss(url, schema, concurrency + 2);
  await boss.start();
  // localConcurrency: this many workers in the process, each fetching batchSize jobs (1). A
  // worker waits its polling interval between fetches, even after one that found a job; the
  // queue's NOTIFY wakes it early for a new job. Both intervals at their minimum, 0.5 s (with
  // notify's default of 30 s, a burst's tail waits for it).
  await boss.work(
    JOB,
    {
      localConcurrency: concurrency,
      batchSize: 1,
      pollingIntervalSeconds: 0.5,
      notifyPollingIntervalSeconds: 0.5,
    },
    async (jobs) => {
      for (const job of jobs) await handle((job.data as { i: number }).i);
    },
  );
  say('ready');
  await untilStopped();
  await boss.stop({ graceful: false });
}

/** Creates `tasks` with at most `inFlight` creates pending. */
async function burst(tasks: number, inFlight: number, create: (index: number) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(inFlight, tasks) }, async () => {
      while (next < tasks) await create(next++);
    }),
  );
}

async function produce(system: string, args: string[]) {
  const [target = '', key = '', count = '0', inFlightArg = '32', cwd = ''] = args;
  const tasks = Number(count);
  const inFlight = Number(inFlightArg);
  let create: (index: number) => Promise<void>;
  let close = async () => {};
  if (system === 'graphile-worker') {
    await runMigrations({ connectionString: target, schema: key, logger: quiet });
    const utils = await makeWorkerUtils({
      connectionString: target,
      schema: key,
      maxPoolSize: inFlight,
      logger: quiet,
    });
    create = async (index) => {
      say(`sent ${index} ${now()}`);
      await utils.addJob(JOB, { i: index });
    };
    close = async () => {
      await utils.release();
    };
  } else if (system === 'pg-boss') {
    const boss = pgBoss(target, key, inFlight);
    await boss.start();
    await boss.createQueue(JOB, { notify: true });
    create = async (index) => {
      say(`sent ${index} ${now()}`);
      await boss.send(JOB, { i: index });
    };
    close = () => boss.stop({ graceful: false });
  } else if (system === 'ctxbus') {
    create = async (index) => {
      const at = now();
      const response = await fetch(`${target}/api/tasks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          title: `bench ${index}`,
          requiredCapabilities: ['code_execution'],
          input: { argv: ['true'], cwd },
        }),
      });
      const body = (await response.json()) as { task?: { id: string } };
      if (response.status !== 201 || !body.task)
        throw new Error(`create failed: ${response.status} ${JSON.stringify(body)}`);
      say(`sent ${index} ${at} ${body.task.id}`);
    };
  } else {
    throw new Error(`unknown system ${system}`);
  }
  say('ready');
  await goSignal();
  await burst(tasks, inFlight, create);
  say('produced');
  await untilStopped();
  await close();
}

async function main() {
  const [role = '', ...args] = process.argv.slice(2);
  if (role.endsWith('worker') && args[3])
    command = pidNamespaceArgv(args[3], process.cwd(), ['true']);
  if (role === 'graphile-worker')
    await graphileWorker(args[0] ?? '', args[1] ?? '', Number(args[2]));
  else if (role === 'pg-boss-worker')
    await pgBossWorker(args[0] ?? '', args[1] ?? '', Number(args[2]));
  else if (role === 'produce') await produce(args[0] ?? '', args.slice(1));
  else throw new Error(`unknown role ${role}`);
  process.exit(0);
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
