import { postgresRequired, probePostgres } from '@ctxbus/store/testing';
import { browserUnavailable } from '@ctxbus/web/testing';
import { describe, expect, it } from 'vitest';
import { runBench } from './bench-child.ts';

// The sections' tests are in two files, bench.test.ts and bench-stores.test.ts, so that two
// run at once (each file's tests run one after another).

describe('./dev bench', () => {
  it('measures every section in a quick run and prints what it measured', async () => {
    const result = await runBench(['--quick', '--only', 'writes,delivery,scale', '--json']);
    expect(result.code, result.stderr).toBe(0);
    const { rows } = JSON.parse(result.stdout) as { rows: { metric: string; value: string }[] };
    const metrics = rows.map((row) => row.metric);
    for (const expected of [
      'write latency p50 (1 client, single item)',
      'throughput, 1 client, batches of 500',
      'write -> SSE p99, 100 subscriber(s)',
      'shared bundle p50 @ 5k items',
      'search p50 @ 5k items',
      'hub RSS @ 5k items',
    ]) {
      expect(metrics).toContain(expected);
    }
    expect(metrics.some((metric) => metric.startsWith('events not delivered'))).toBe(false);
    for (const row of rows) expect(row.value, row.metric).toMatch(/^\d[\d,.]* (ms|MB|items\/s)$/);
  });
});

describe('./dev bench --only tasks', () => {
  it('measures the routing decision on 50 runtimes x 20 capabilities (every kind made), exec spawns, and 16 racing claimers on SQLite and, when a server answers, PostgreSQL', async () => {
    // The side-by-side run has a test of its own, below.
    const result = await runBench(['--quick', '--only', 'tasks', '--json'], {
      ...(server.url !== null && { CTXBUS_TEST_POSTGRES_URL: server.url }),
      CTXBUS_BENCH_PEER_TASKS: '0',
      CTXBUS_BENCH_CRASH_TASKS: '0',
    });
    expect(result.code, result.stderr).toBe(0);
    const { rows } = JSON.parse(result.stdout) as { rows: { metric: string; value: string }[] };
    for (const metric of [
      'routing decision p50 (50 runtimes x 20 capabilities)',
      'routing decision p99 (50 runtimes x 20 capabilities)',
    ]) {
      expect(rows.find((row) => row.metric === metric)?.value, metric).toMatch(/^\d[\d.]* ms$/);
    }
    // The seeded cases reach every kind of decision, so each path is what is timed.
    const mix = rows.find((row) => row.metric.startsWith('routing decisions made'));
    for (const kind of ['native', 'via-api', 'via-mcp', 'proxy', 'queue', 'escalate']) {
      expect(mix?.metric).toMatch(new RegExp(`[(, ]${kind} \\d+`));
    }
    const metrics = rows.map((row) => row.metric);
    const backends = ['SQLite, two stores on one file'];
    if (server.url !== null || postgresRequired()) backends.push('PostgreSQL, two pools');
    for (const backend of backends) {
      expect(metrics).toContain(`task create p99 (${backend})`);
      expect(metrics).toContain(`claim p99 (16 claimers over 200 tasks, ${backend})`);
      expect(metrics).toContain(
        `claim + complete throughput (16 claimers over 200 tasks, ${backend})`,
      );
    }
    expect(rows.find((row) => row.metric.startsWith('task path beside'))?.value).toBe(
      'skipped: CTXBUS_BENCH_PEER_TASKS=0',
    );
    for (const metric of [
      'task create -> claimed by an idle connected worker p99',
      'claim -> process spawned p50',
      "result -> origin's SSE p99",
      "200 tasks through 16 workers: create -> completed on the origin's stream p99",
    ]) {
      expect(rows.find((row) => row.metric === metric)?.value, metric).toMatch(/^\d[\d.]* ms$/);
    }
  });
});

describe('./dev bench --only task-peers', () => {
  it("runs tasks through graphile-worker, pg-boss and ctxbus on both stores when a server answers (SQLite alone otherwise), and prints each one's figures and the ratios", async () => {
    // A cheap form: 10 tasks per system, what the section does at any size.
    const result = await runBench(['--quick', '--only', 'task-peers', '--json'], {
      ...(server.url !== null && { CTXBUS_TEST_POSTGRES_URL: server.url }),
      CTXBUS_BENCH_PEER_TASKS: '10',
    });
    expect(result.code, result.stderr).toBe(0);
    const { rows } = JSON.parse(result.stdout) as {
      rows: { section: string; metric: string; value: string }[];
    };
    const value = (metric: string) => {
      const found = rows.find((row) => row.section === 'task-peers' && row.metric === metric);
      expect(found, `no row "${metric}" in ${JSON.stringify(rows)}`).toBeDefined();
      return found?.value ?? '';
    };
    const withServer = server.url !== null || postgresRequired();
    const systems = withServer
      ? ['graphile-worker', 'ctxbus on PostgreSQL', 'pg-boss', 'ctxbus on SQLite']
      : ['ctxbus on SQLite'];
    for (const system of systems) {
      expect(value(`${system}: throughput (10 tasks, 4 processes x 4)`)).toMatch(
        /^\d[\d.]* tasks\/s$/,
      );
      expect(value(`${system}: CPU per task, command excluded`)).toMatch(/^\d[\d.]* ms$/);
      expect(value(`${system}: CPU per task, split`)).toMatch(
        /^producer [\d.]+ \+ hub [\d.]+ \+ workers [\d.]+ \+ database [\d.]+ ms; command [\d.]+ ms$/,
      );
      expect(value(`${system}: create -> started p99`)).toMatch(/^\d[\d.]* ms$/);
    }
    const claims = value(
      'ctxbus on SQLite: claim attempts per task (idle workers racing for each new task)',
    );
    expect(Number(claims)).toBeGreaterThanOrEqual(1);
    if (withServer) {
      for (const store of ['PostgreSQL', 'SQLite']) {
        expect(value(`ctxbus on ${store}: CPU per task / graphile-worker's`)).toMatch(
          /^\d+\.\d+x$/,
        );
        expect(value(`ctxbus on ${store}: tasks/s / pg-boss's`)).toMatch(/^\d+\.\d+x$/);
      }
      expect(
        value('ctxbus on PostgreSQL: pg_stat_activity samples with a backend waiting on a lock'),
      ).toMatch(/^\d+ of [1-9]\d*$/);
    } else {
      expect(value('graphile-worker, pg-boss, ctxbus on PostgreSQL')).toMatch(/^skipped: /);
    }
  });
});

describe('./dev bench --only stalled', () => {
  it('delivers every item, in order, to every reader while stalled subscribers never read', async () => {
    const result = await runBench(['--quick', '--only', 'stalled', '--json']);
    expect(result.code, result.stderr).toBe(0);
    const { rows } = JSON.parse(result.stdout) as {
      rows: { metric: string; value: string; ok?: boolean }[];
    };
    const complete = rows.find((row) => row.metric.startsWith('timed readers that got every'));
    expect(complete?.value).toBe('90 and 90 of 90');
    expect(complete?.ok).toBe(true);
    expect(rows.map((row) => row.metric)).toContain('hub RSS peak / end, 90 readers, 10 stalled');
  });
});

describe('./dev bench --only dashboard', () => {
  it('times a write reaching the dashboard in Chromium, and weighs the dashboard', async () => {
    const result = await runBench(['--quick', '--only', 'dashboard', '--json']);
    expect(result.code, result.stderr).toBe(0);
    const { rows } = JSON.parse(result.stdout) as {
      rows: { metric: string; value: string; ok?: boolean }[];
    };
    const bundle = rows.find((row) => row.metric === 'bundle, gzipped');
    expect(bundle?.value).toMatch(/^\d+\.\d KB$/);
    expect(bundle?.ok).toBe(true);
    const p99 = rows.find((row) => row.metric === 'write -> DOM p99');
    // The browser is there in CI (.ci/run installs it); elsewhere the row says why not.
    expect(p99?.value).toMatch(browserUnavailable() ? /^skipped: / : /^\d+(\.\d+)? ms$/);
  });
});

const server = await probePostgres();

describe('./dev bench --only vectors', () => {
  it('measures vector search on SQLite and, when a server answers, PostgreSQL', async () => {
    const result = await runBench(['--quick', '--only', 'vectors', '--json'], {
      ...(server.url !== null && { CTXBUS_TEST_POSTGRES_URL: server.url }),
    });
    expect(result.code, result.stderr).toBe(0);
    const { rows } = JSON.parse(result.stdout) as { rows: { metric: string; value: string }[] };
    const metrics = rows.map((row) => row.metric);
    expect(metrics).toContain('vector search p50 (1,000 items x 256 dims, SQLite, in memory)');
    expect(metrics).toContain('vector search p50 (1,000 items x 256 dims, SQLite, scan in SQL)');
    if (server.url !== null || postgresRequired()) {
      for (const how of ['PostgreSQL, in memory', 'PostgreSQL, scan in SQL'])
        expect(metrics).toContain(`vector search p99 (1,000 items x 256 dims, ${how})`);
    }
    for (const row of rows) expect(row.value, row.metric).toMatch(/^\d[\d.]* ms$/);
  });
});
