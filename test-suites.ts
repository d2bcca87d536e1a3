/**
 * Runs every workspace package's test suite (`pnpm run test`: vitest) and the typecheck
 * (`pnpm typecheck`), side by side so that every core works, and reports every failure.
 *
 *   node --experimental-strip-types test-suites.ts [--concurrency N] [--only NAME,...]
 *     [-- vitest args]
 *
 * Most suites leave a core idle much of their run (waiting on PostgreSQL, timers, Chromium or
 * child processes: CPU / wall 0.2-0.7), a few keep one busy (HEAVY: 0.8-1.7). So one suite
 * more than there are cores runs at once (3 on 2 cores), of which at most one heavy suite per
 * core. Two suites of one group (APART) never run beside each other: of the suites that open
 * PostgreSQL connections by the dozen (integration, bench, store) one runs at a time (two at
 * once passed the server's default 100: "sorry, too many clients already"), and the
 * integration tests (hub processes by the dozen) do not run beside Chromium. The longest
 * suites start first (ORDER). Every suite runs to its end whatever the others did (as `turbo
 * --continue`); the summary lists each suite's time and result, and the exit code is 1 when
 * any failed. The packages must be built first (`turbo run build`, as `./dev test` does).
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';

const ROOT = import.meta.dirname;
/** The name of the typecheck job (`pnpm typecheck`: tsc -b over the project references). */
const TYPECHECK = 'typecheck';

/** Groups of suites of which one at a time runs. */
const APART: ReadonlyArray<ReadonlySet<string>> = [
  // Hub processes by the dozen beside Chromium.
  new Set(['@ctxbus/integration-tests', '@ctxbus/web']),
  // PostgreSQL connections by the dozen to the hundred (hubs, pools, claimers, pg-boss and
  // graphile-worker): two of these at once passed the server's default 100 connections.
  new Set(['@ctxbus/integration-tests', '@ctxbus/bench', '@ctxbus/store']),
];

/**
 * The suites that keep a core busy (CPU / wall, measured alone on the 2-core CI machine: e2e
 * 0.99, integration 1.7, cli 0.92, bench 0.8); every other suite is below 0.7.
 */
const HEAVY = new Set(['@ctxbus/e2e', '@ctxbus/integration-tests', '@ctxbus/bench', 'ctxbus']);

/** Whether `name` may start while the suites in `running` run, `heavyLimit` heavy ones at most. */
const mayStart = (name: string, running: ReadonlySet<string>, heavyLimit: number) =>
  !APART.some((group) => group.has(name) && [...running].some((other) => group.has(other))) &&
  !(HEAVY.has(name) && [...running].filter((other) => HEAVY.has(other)).length >= heavyLimit);

/**
 * Start order: the longest first (measured on the 2-core CI machine): e2e, the critical path
 * (~400 s of a ~500 s run), and integration beside it; the light suites fill the third lane
 * meanwhile, the other heavy and PostgreSQL suites follow integration. Unlisted suites and the
 * typecheck come after the listed ones.
 */
const ORDER = [
  '@ctxbus/e2e',
  '@ctxbus/integration-tests',
  '@ctxbus/bench',
  '@ctxbus/web',
  '@ctxbus/store',
  'ctxbus',
  '@ctxbus/hub',
  '@ctxbus/exec',
  '@ctxbus/telegram',
];

interface Suite {
  name: string;
  dir: string;
  /** The package script to run: `test` (vitest, which takes the extra arguments) or `typecheck`. */
  script: 'test' | 'typecheck';
}

interface Outcome {
  suite: Suite;
  code: number | null;
  seconds: number;
  /** The CPU seconds (user + system) of the suite's process tree, where the system tells. */
  cpu: number | null;
  /** The suite's last output lines (TAIL_LINES). */
  tail: string[];
}

function workspaceSuites(): Suite[] {
  const suites: Suite[] = [];
  for (const group of ['packages', 'apps', 'test']) {
    for (const entry of readdirSync(join(ROOT, group), { withFileTypes: true })) {
      const manifest = join(ROOT, group, entry.name, 'package.json');
      if (!entry.isDirectory() || !existsSync(manifest)) continue;
      const pkg = JSON.parse(readFileSync(manifest, 'utf8')) as {
        name: string;
        scripts?: Record<string, string>;
      };
      if (pkg.scripts?.test) {
        suites.push({ name: pkg.name, dir: join(ROOT, group, entry.name), script: 'test' });
      }
    }
  }
  // The whole repo's typecheck (tsc -b) is one more job: it fills a lane that would idle.
  suites.push({ name: TYPECHECK, dir: ROOT, script: 'typecheck' });
  const rank = (suite: Suite) => {
    const at = ORDER.indexOf(suite.name);
    return at < 0 ? ORDER.length : at;
  };
  return suites.sort((a, b) => rank(a) - rank(b) || a.name.localeCompare(b.name));
}

/**
 * How many of a suite's last output lines the summary repeats when it fails: vitest ends with
 * its failures and their stacks, which a long run would otherwise bury (and a CI log's tail
 * would not show).
 */
const TAIL_LINES = 150;

/**
 * Writes a child's output line by line, each line prefixed with its suite's name, and keeps
 * the last TAIL_LINES of them (both streams) in `tail`.
 */
function prefixed(name: string, out: NodeJS.WriteStream, tail: string[]) {
  let pending = '';
  const emit = (line: string) => {
    out.write(`${name}: ${line}\n`);
    tail.push(line);
    if (tail.length > TAIL_LINES) tail.shift();
  };
  return {
    write(chunk: Buffer) {
      pending += chunk.toString();
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) emit(line);
    },
    flush() {
      if (pending) emit(pending);
      pending = '';
    },
  };
}

/**
 * The CPU seconds (user + system) of this process's children that have ended and been waited
 * for (Linux: /proc's cutime and cstime, in USER_HZ = 100 ticks a second), or null elsewhere.
 * Read as each suite ends: only that suite's tree was reaped since the last reading.
 */
function reapedChildrenCpu(): number | null {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[13]) + Number(fields[14])) / 100;
  } catch {
    return null;
  }
}

let cpuRead = reapedChildrenCpu();

/** The CPU the suite that just ended used (see reapedChildrenCpu). */
function endedSuiteCpu(): number | null {
  const now = reapedChildrenCpu();
  const used = now === null || cpuRead === null ? null : now - cpuRead;
  cpuRead = now;
  return used;
}

/**
 * How fast this machine is right now, for reading a run's times beside another machine's: the
 * median wall time of five bare Node starts, and the 1-minute load average.
 */
function machineNow(): string {
  const starts = Array.from({ length: 5 }, () => {
    const began = performance.now();
    spawnSync(process.execPath, ['-e', ''], { stdio: 'ignore' });
    return performance.now() - began;
  }).sort((a, b) => a - b);
  return `a bare Node start ${Math.round(starts[2] ?? 0)} ms (median of 5), load ${loadavg()[0]?.toFixed(1)}`;
}

function runSuite(suite: Suite, args: string[]): Promise<Outcome> {
  const began = performance.now();
  process.stdout.write(`${suite.name}: started (${relative(ROOT, suite.dir)})\n`);
  const child = spawn(
    'pnpm',
    [
      '--silent',
      'run',
      suite.script,
      // pnpm hands what follows the script's name to it as is (a `--` would reach vitest, which
      // then ignores every argument after it).
      ...(suite.script === 'test' ? args : []),
    ],
    {
      cwd: suite.dir,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const tail: string[] = [];
  const out = prefixed(suite.name, process.stdout, tail);
  const err = prefixed(suite.name, process.stderr, tail);
  child.stdout.on('data', out.write);
  child.stderr.on('data', err.write);
  return new Promise((resolve) => {
    const finish = (code: number | null) => {
      out.flush();
      err.flush();
      const seconds = (performance.now() - began) / 1000;
      resolve({ suite, code, seconds, cpu: endedSuiteCpu(), tail });
    };
    child.once('error', (error) => {
      process.stderr.write(`${suite.name}: could not start: ${error.message}\n`);
      finish(null);
    });
    child.once('close', (code) => finish(code));
  });
}

const USAGE = 'node test-suites.ts [--concurrency N] [--only NAME,...] [-- vitest args]';

interface Options {
  concurrency: number;
  /** Heavy suites at once: one per core (one fewer than concurrency). */
  heavyLimit: number;
  /** Only these suites (package names); empty: every suite. */
  only: string[];
  vitestArgs: string[];
}

function options(argv: string[]): Options {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { concurrency: { type: 'string' }, only: { type: 'string', multiple: true } },
    allowPositionals: true,
  });
  const cores = Math.min(Math.max(2, availableParallelism()), 4);
  const concurrency = Number(values.concurrency ?? cores + 1);
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new Error(`--concurrency takes a whole number of at least 1 (usage: ${USAGE})`);
  }
  const only = (values.only ?? []).flatMap((names) => names.split(',')).filter(Boolean);
  return { concurrency, heavyLimit: Math.max(1, concurrency - 1), only, vitestArgs: positionals };
}

async function main(): Promise<number> {
  let parsed: Options;
  try {
    parsed = options(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`test-suites: ${(error as Error).message}\n`);
    return 2;
  }
  const { concurrency, heavyLimit, only, vitestArgs } = parsed;
  const queue = workspaceSuites().filter((suite) => only.length === 0 || only.includes(suite.name));
  const unknown = only.filter((name) => !queue.some((suite) => suite.name === name));
  if (unknown.length > 0) {
    process.stderr.write(`test-suites: no test suite named ${unknown.join(', ')}\n`);
    return 2;
  }
  const machineBefore = machineNow();
  const began = performance.now();
  const outcomes: Outcome[] = [];
  const running = new Set<string>();
  process.stdout.write(
    `running ${queue.length} test suites, ${concurrency} at a time (${heavyLimit} of ${[...HEAVY].join(', ')}); one at a time of ${APART.map((group) => [...group].join(', ')).join('; of ')}\n`,
  );
  await new Promise<void>((done) => {
    const next = () => {
      if (queue.length === 0 && running.size === 0) return done();
      while (running.size < concurrency) {
        const at = queue.findIndex((suite) => mayStart(suite.name, running, heavyLimit));
        if (at < 0) return;
        const [suite] = queue.splice(at, 1);
        if (!suite) return;
        running.add(suite.name);
        void runSuite(suite, vitestArgs).then((outcome) => {
          outcomes.push(outcome);
          running.delete(suite.name);
          next();
        });
      }
    };
    next();
  });
  const failed = outcomes.filter((outcome) => outcome.code !== 0);
  const lines = outcomes
    .sort((a, b) => b.seconds - a.seconds)
    .map(({ suite, code, seconds, cpu }) => {
      const result = code === 0 ? 'passed' : `FAILED (exit ${code})`;
      const used = cpu === null ? '' : `  (${cpu.toFixed(1)} s CPU)`;
      return `  ${seconds.toFixed(1).padStart(7)} s  ${suite.name}  ${result}${used}`;
    });
  const total = ((performance.now() - began) / 1000).toFixed(1);
  const cpu = outcomes.every((outcome) => outcome.cpu !== null)
    ? `, ${outcomes.reduce((sum, outcome) => sum + (outcome.cpu ?? 0), 0).toFixed(1)} s of CPU`
    : '';
  process.stdout.write(
    `\ntest suites, ${total} s in all${cpu}:\n${lines.join('\n')}\nmachine: before, ${machineBefore}; after, ${machineNow()}\n`,
  );
  if (failed.length > 0) {
    for (const { suite, tail } of failed) {
      process.stdout.write(
        `\n${suite.name} failed; its last ${tail.length} lines:\n${tail.map((line) => `  | ${line}`).join('\n')}\n`,
      );
    }
    process.stdout.write(
      `\n${failed.length} of ${outcomes.length} suites failed: ${failed.map((o) => o.suite.name).join(', ')}\n`,
    );
    return 1;
  }
  process.stdout.write(`\nall ${outcomes.length} suites passed\n`);
  return 0;
}

process.exitCode = await main();
