// Issue 24's crash run: 1,000 tasks (200 with --quick) through a real hub and 4 real workers
// (x 4 commands at once) on PostgreSQL and on SQLite, while 3 workers and 2 hubs are killed with
// SIGKILL at random points (test/kit's task-crash harness; a fixed seed per store, so a run can
// be repeated). Prints what must be zero (tasks lost, tasks run twice, audit holes) beside how
// the tasks ended: completed, worker_lost (the worker died after it started the command: it is
// not run again), dead letters, and how many were requeued (their worker died before starting).
import { loadavg } from 'node:os';
import { ScratchSchemas } from '@ctxbus/store/testing';
import { storeUrl } from '@ctxbus/test-kit/postgres';
import type { TaskCrashOptions, TaskCrashReport } from '@ctxbus/test-kit/task-crash';
import { runTaskCrash } from '@ctxbus/test-kit/task-crash';
import type { Row } from './stats.ts';

const SECTION = 'task-crash';

export interface TaskCrashBenchOptions {
  quick: boolean;
  log: (line: string) => void;
  /** The PostgreSQL server, or null: then only SQLite runs, and the rows say why. */
  serverUrl: string | null;
  skipReason?: string;
  /** Tasks per store (default 1,000; 200 quick). */
  tasks?: number;
}

function reportRows(label: string, report: TaskCrashReport): Row[] {
  const row = (metric: string, value: string, target?: string, ok?: boolean): Row => ({
    section: SECTION,
    metric: `${label}: ${metric}`,
    value,
    ...(target !== undefined && { target }),
    ...(ok !== undefined && { ok }),
  });
  const kills = report.kills;
  const workers = kills.filter((kill) => kill.what === 'worker').length;
  const other = Object.entries(report.otherEnds)
    .map(([end, n]) => `${n} ${end}`)
    .join(', ');
  return [
    row(
      'tasks, kills (SIGKILL)',
      `${report.tasks} tasks; ${workers} workers and ${kills.length - workers} hubs killed after ${kills.map((kill) => kill.afterRuns).join(', ')} runs`,
    ),
    row(
      'tasks lost (not ended after the drain)',
      String(report.lost.length),
      '0',
      report.lost.length === 0,
    ),
    row(
      'tasks run twice (from the command log)',
      String(report.ranTwice.length),
      '0',
      report.ranTwice.length === 0,
    ),
    row(
      'audit holes (GET /api/audit/verify)',
      report.audit.ok
        ? `0 (${report.audit.records} records verified)`
        : `verify failed: ${report.audit.reason}`,
      '0',
      report.audit.ok,
    ),
    row(
      'ended',
      `${report.completed} completed, ${report.workerLost} worker_lost, ${report.deadLetters} dead letters${other ? `, ${other}` : ''}; ${report.requeued} requeued before their command started`,
    ),
    row(
      'command runs',
      `${report.runs} (completed tasks without a run: ${report.completedWithoutRun.length})`,
    ),
    row(
      'time',
      `${(report.elapsedMs / 1000).toFixed(1)} s (${((report.tasks / report.elapsedMs) * 1000).toFixed(1)} tasks/s); drain after the last create ${(report.drainMs / 1000).toFixed(1)} s`,
    ),
  ];
}

export async function benchTaskCrash(options: TaskCrashBenchOptions): Promise<Row[]> {
  const run: Omit<TaskCrashOptions, 'store' | 'seed'> = {
    tasks: options.tasks ?? (options.quick ? 200 : 1_000),
    workers: 4,
    concurrency: 4,
    // What a killed worker's tasks wait out before they end or run again: most of a quick
    // run's drain (5 s, as the integration test's under CI load).
    leaseSeconds: options.quick ? 5 : 10,
    workerKills: 3,
    hubKills: 2,
    drainMs: 600_000,
    log: options.log,
  };
  const rows: Row[] = [
    {
      section: SECTION,
      metric: 'load average (1 min) before',
      value: (loadavg()[0] ?? 0).toFixed(1),
    },
  ];
  if (options.serverUrl === null) {
    rows.push({
      section: SECTION,
      metric: 'ctxbus on PostgreSQL',
      value: `skipped: ${options.skipReason ?? 'no PostgreSQL server'}`,
    });
  } else {
    const schemas = new ScratchSchemas(options.serverUrl);
    const schema = schemas.next('task_crash');
    try {
      options.log(`task-crash: ctxbus on PostgreSQL, ${run.tasks} tasks`);
      const report = await runTaskCrash({
        ...run,
        seed: 2401,
        store: { kind: 'postgres', url: storeUrl(options.serverUrl, schema), schema },
      });
      rows.push(...reportRows('ctxbus on PostgreSQL', report));
    } finally {
      await schemas.dropAll();
    }
  }
  options.log(`task-crash: ctxbus on SQLite, ${run.tasks} tasks`);
  const report = await runTaskCrash({ ...run, seed: 2402, store: { kind: 'sqlite' } });
  rows.push(...reportRows('ctxbus on SQLite', report));
  rows.push({
    section: SECTION,
    metric: 'load average (1 min) after',
    value: (loadavg()[0] ?? 0).toFixed(1),
  });
  return rows;
}
