import { detectPidNamespace } from '@ctxbus/exec';
import { postgresRequired, probePostgres } from '@ctxbus/store/testing';
import { describe, expect, it } from 'vitest';
import { skipReason } from './postgres-bench.ts';
import { runBench } from './run-bench-process.ts';

// The sections on PostgreSQL (and their SQLite side), apart from bench.test.ts's: vitest runs
// the two files side by side, and the sections here wait on leases, workers and the server
// while those wait on the real runtimes and Chromium. One section on PostgreSQL at a time
// (test-suites.ts keeps this suite apart from the other suites that open connections by the
// dozen): a full postgres section's hundred listeners beside task-peers' pools would pass the
// server's default 100 connections (a quick run opens 20).

const server = await probePostgres();

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
      expect(metrics).toContain(`claim p99 (16 claimers over 100 tasks, ${backend})`);
      expect(metrics).toContain(
        `claim + complete throughput (16 claimers over 100 tasks, ${backend})`,
      );
    }
    expect(rows.find((row) => row.metric.startsWith('task path beside'))?.value).toBe(
      'skipped: CTXBUS_BENCH_PEER_TASKS=0',
    );
    for (const metric of [
      'task create -> claimed by an idle connected worker p99',
      'claim -> process spawned p50',
      "result -> origin's SSE p99",
      "100 tasks through 16 workers: create -> completed on the origin's stream p99",
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
    // Where the ctxbus worker guards its commands, the peers run guarded too (like for like).
    const guarded = (await detectPidNamespace()).available;
    const peers = guarded
      ? ['graphile-worker', 'graphile-worker, guarded', 'pg-boss', 'pg-boss, guarded']
      : ['graphile-worker', 'pg-boss'];
    const systems = withServer
      ? [...peers, 'ctxbus on PostgreSQL', 'ctxbus on SQLite']
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
      const like = guarded ? "'s, guarded" : "'s";
      for (const store of ['PostgreSQL', 'SQLite']) {
        for (const metric of [
          `CPU per task / graphile-worker${like}`,
          `tasks/s / pg-boss${like}`,
          `tasks/s / graphile-worker${like}`,
        ]) {
          const found = rows.find((row) => row.metric === `ctxbus on ${store}: ${metric}`);
          expect(found?.value, metric).toMatch(/^\d+\.\d+x$/);
          expect(found, metric).toHaveProperty('target');
        }
        if (guarded)
          expect(
            value(
              `ctxbus on ${store}: tasks/s / pg-boss's, bare (its \`true\` unguarded, ctxbus's guarded)`,
            ),
          ).toMatch(/^\d+\.\d+x$/);
      }
      expect(
        value('ctxbus on PostgreSQL: pg_stat_activity samples with a backend waiting on a lock'),
      ).toMatch(/^\d+ of [1-9]\d*$/);
    } else {
      expect(value('graphile-worker, pg-boss, ctxbus on PostgreSQL')).toMatch(/^skipped: /);
    }
  });
});

describe('./dev bench --only task-crash', () => {
  it('runs tasks through workers and hubs killed at random points on both stores when a server answers (SQLite alone otherwise), and prints the counts that must be zero', async () => {
    // A cheap form: 40 tasks per store, what the section does at any size.
    const result = await runBench(['--quick', '--only', 'task-crash', '--json'], {
      ...(server.url !== null && { CTXBUS_TEST_POSTGRES_URL: server.url }),
      CTXBUS_BENCH_CRASH_TASKS: '40',
    });
    expect(result.code, result.stderr).toBe(0);
    const { rows } = JSON.parse(result.stdout) as {
      rows: { metric: string; value: string; ok?: boolean }[];
    };
    const stores = ['SQLite'];
    if (server.url !== null || postgresRequired()) stores.push('PostgreSQL');
    else
      expect(rows.find((row) => row.metric === 'ctxbus on PostgreSQL')?.value).toMatch(
        /^skipped: /,
      );
    for (const store of stores) {
      const find = (metric: string) =>
        rows.find((row) => row.metric === `ctxbus on ${store}: ${metric}`);
      expect(find('tasks, kills (SIGKILL)')?.value).toMatch(
        /^40 tasks; 3 workers and 2 hubs killed after /,
      );
      for (const metric of [
        'tasks lost (not ended after the drain)',
        'tasks run twice (from the command log)',
        'audit holes (GET /api/audit/verify)',
      ]) {
        expect(find(metric)?.value, metric).toMatch(/^0\b/);
        expect(find(metric)?.ok, metric).toBe(true);
      }
      expect(find('ended')?.value).toMatch(/^\d+ completed, \d+ worker_lost, \d+ dead letters/);
    }
  });
});

describe('./dev bench --only postgres (two hubs on one PostgreSQL schema)', () => {
  if (server.url === null) {
    const reason = skipReason(server);
    if (postgresRequired()) {
      it('needs a PostgreSQL server (CI=true or CTXBUS_REQUIRE_POSTGRES=1)', () => {
        expect.fail(`the PostgreSQL benchmarks cannot run: ${reason}`);
      });
    } else {
      it.skip(`skipped: ${reason}, or CTXBUS_REQUIRE_POSTGRES=1 to fail instead`, () => {});
    }
    return;
  }
  it('measures throughput, delivery across two hubs, the raw NOTIFY floor and their ratio', async () => {
    const result = await runBench(['--quick', '--only', 'postgres', '--json'], {
      CTXBUS_TEST_POSTGRES_URL: server.url,
    });
    expect(result.code, result.stderr).toBe(0);
    const { rows } = JSON.parse(result.stdout) as {
      rows: { section: string; metric: string; value: string }[];
    };
    // Only that each row was measured: whether the targets are met is the benchmark's to say.
    const value = (prefix: string) => {
      const found = rows.find((row) => row.section === 'postgres' && row.metric.startsWith(prefix));
      expect(found, `no row "${prefix}..." in ${JSON.stringify(rows)}`).toBeDefined();
      return found?.value ?? '';
    };
    for (const prefix of [
      'throughput, 1 client, single items',
      'throughput, 16 clients, single items',
      'throughput, 16 clients, batches of 50',
    ]) {
      expect(value(prefix)).toMatch(/^\d[\d,]* items\/s$/);
    }
    for (const prefix of [
      // A quick run's 20 subscribers (a full run's: 100).
      'write -> SSE p50, 20 subscribers on 2 hubs',
      'write -> SSE p99, 20 subscribers on 2 hubs',
      'write -> SSE p99, 10 on the other hub',
      'raw NOTIFY p50, ',
      'raw NOTIFY p99, ',
    ]) {
      expect(value(prefix)).toMatch(/^\d[\d.]* ms$/);
    }
    expect(value('delivery p99 / raw NOTIFY p99 (20 subscribers')).toMatch(/^\d+\.\d+x$/);
    const undelivered = rows.filter((row) => /not delivered|not received/.test(row.metric));
    expect(undelivered).toEqual([]);
  });
});

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
