// Spawn latency of the remote-execution runner (@ctxbus/exec's runCommand): from the call to
// the child's `spawn` event, and the whole run, for a trivial command (/bin/true) run plain, in
// a PID namespace of its own (what a worker does for an unsandboxed command) and inside the
// sandbox; with the whole machine's CPU per run, the kernel's work included (namespaces are
// set up and torn down there). Run through ./dev bench --only tasks, or alone:
//   node test/bench/src/exec-spawn.ts [--quick]
import { realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import {
  detectPidNamespace,
  detectSandbox,
  pidNamespaceArgv,
  runCommand,
  sandboxArgv,
} from '@ctxbus/exec';
import { machineBusyMs } from './proc-cpu.ts';
import type { Row } from './stats.ts';
import { ms, percentile } from './stats.ts';

const PROGRAM = '/bin/true';

interface Samples {
  spawnMs: number[];
  totalMs: number[];
  /** The whole machine's busy CPU over the runs, per run (null off Linux). */
  machineMs: number | null;
}

async function measure(
  argv: string[],
  cwd: string,
  runs: number,
  pidNamespace = false,
): Promise<Samples> {
  const spawnMs: number[] = [];
  const totalMs: number[] = [];
  const before = machineBusyMs();
  for (let run = 0; run < runs; run++) {
    const result = await runCommand({
      argv,
      cwd,
      env: { PATH: '/usr/bin:/bin' },
      timeoutMs: 10_000,
      inactivityMs: 10_000,
      maxOutputBytes: 4_096,
      pidNamespace,
    });
    if (result.exitCode !== 0 || result.spawnMs === null) {
      throw new Error(`${argv.join(' ')} failed: ${result.error ?? result.stderr}`);
    }
    spawnMs.push(result.spawnMs);
    totalMs.push(result.durationMs);
  }
  const after = machineBusyMs();
  const machineMs = before === null || after === null ? null : (after - before) / runs;
  return { spawnMs, totalMs, machineMs };
}

/** Rows for the `tasks` section: runCommand spawn latency plain and in bwrap. */
export async function benchExecSpawn(quick: boolean, log: (line: string) => void): Promise<Row[]> {
  const runs = quick ? 50 : 500;
  const cwd = realpathSync(tmpdir());
  const rows: Row[] = [];
  const add = (label: string, samples: Samples) => {
    const p50 = percentile(samples.spawnMs, 50);
    rows.push(
      {
        section: 'tasks',
        metric: `runCommand spawn p50 (${label})`,
        value: ms(p50),
        target: '<= 15 ms',
        ok: p50 <= 15,
      },
      {
        section: 'tasks',
        metric: `runCommand spawn p99 (${label})`,
        value: ms(percentile(samples.spawnMs, 99)),
      },
      {
        section: 'tasks',
        metric: `runCommand whole run p50 (${label})`,
        value: ms(percentile(samples.totalMs, 50)),
      },
      {
        section: 'tasks',
        metric: `runCommand whole run p99 (${label})`,
        value: ms(percentile(samples.totalMs, 99)),
      },
      {
        section: 'tasks',
        metric: `runCommand: the whole machine's busy CPU per run (${label}; the kernel's work and others' too)`,
        value: samples.machineMs === null ? 'n/a (no /proc/stat)' : ms(samples.machineMs),
      },
    );
  };
  log(`tasks: runCommand ${PROGRAM}, ${runs} runs plain`);
  await measure([PROGRAM], cwd, 5);
  add(`${PROGRAM}, plain`, await measure([PROGRAM], cwd, runs));
  const namespace = await detectPidNamespace();
  if (!namespace.available) {
    rows.push({
      section: 'tasks',
      metric: 'runCommand in a PID namespace',
      value: `skipped: ${namespace.reason}`,
    });
  } else {
    log(`tasks: runCommand ${PROGRAM}, ${runs} runs in a PID namespace (an unsandboxed task)`);
    const argv = pidNamespaceArgv(namespace.bwrapPath, cwd, [PROGRAM]);
    await measure(argv, cwd, 5, true);
    add(`${PROGRAM}, PID namespace`, await measure(argv, cwd, runs, true));
  }
  const sandbox = await detectSandbox();
  if (!sandbox.available) {
    rows.push({
      section: 'tasks',
      metric: 'runCommand in bwrap',
      value: `skipped: ${sandbox.reason}`,
    });
  } else {
    log(`tasks: runCommand ${PROGRAM}, ${runs} runs in bwrap`);
    const argv = sandboxArgv({ bwrapPath: sandbox.bwrapPath, workdir: cwd }, [PROGRAM]);
    await measure(argv, cwd, 5, true);
    add(`${PROGRAM}, bwrap`, await measure(argv, cwd, runs, true));
  }
  return rows;
}

if (import.meta.main) {
  const rows = await benchExecSpawn(process.argv.includes('--quick'), (line) =>
    process.stderr.write(`${line}\n`),
  );
  for (const row of rows) {
    process.stdout.write(
      `${row.metric}: ${row.value}${row.target ? ` (target ${row.target})` : ''}\n`,
    );
  }
}
