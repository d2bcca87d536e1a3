// Spawn latency of the remote-execution runner (@ctxbus/exec's runCommand): from the call to
// the child's `spawn` event, and the whole run, for a trivial command (/bin/true) run plain and
// inside bubblewrap. Run through ./dev bench --only tasks, or alone:
//   node test/bench/src/exec-spawn.ts [--quick]
import { realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { detectSandbox, runCommand, sandboxArgv } from '@ctxbus/exec';
import type { Row } from './stats.ts';
import { ms, percentile } from './stats.ts';

const PROGRAM = '/bin/true';

async function measure(argv: string[], cwd: string, runs: number) {
  const spawnMs: number[] = [];
  const totalMs: number[] = [];
  for (let run = 0; run < runs; run++) {
    const result = await runCommand({
      argv,
      cwd,
      env: { PATH: '/usr/bin:/bin' },
      timeoutMs: 10_000,
      inactivityMs: 10_000,
      maxOutputBytes: 4_096,
    });
    if (result.exitCode !== 0 || result.spawnMs === null) {
      throw new Error(`${argv.join(' ')} failed: ${result.error ?? result.stderr}`);
    }
    spawnMs.push(result.spawnMs);
    totalMs.push(result.durationMs);
  }
  return { spawnMs, totalMs };
}

/** Rows for the `tasks` section: runCommand spawn latency plain and in bwrap. */
export async function benchExecSpawn(quick: boolean, log: (line: string) => void): Promise<Row[]> {
  const runs = quick ? 50 : 500;
  const cwd = realpathSync(tmpdir());
  const rows: Row[] = [];
  const add = (label: string, samples: { spawnMs: number[]; totalMs: number[] }) => {
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
    );
  };
  log(`tasks: runCommand ${PROGRAM}, ${runs} runs plain`);
  await measure([PROGRAM], cwd, 5);
  add(`${PROGRAM}, plain`, await measure([PROGRAM], cwd, runs));
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
    await measure(argv, cwd, 5);
    add(`${PROGRAM}, bwrap`, await measure(argv, cwd, runs));
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
