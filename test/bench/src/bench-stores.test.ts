import { postgresRequired, probePostgres } from '@ctxbus/store/testing';
import { describe, expect, it } from 'vitest';
import { runBench } from './bench-child.ts';
import { LOCOMO_PATH, locomoAvailable } from './corpus.ts';
import { measureLocomo } from './locomo-recall.ts';
import { skipReason } from './postgres-bench.ts';

// The benchmarks that crash hubs, drive PostgreSQL or rank LoCoMo (the other sections are in
// bench.test.ts; two files run at once).

const server = await probePostgres();

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
      'write -> SSE p50, 100 subscribers on 2 hubs',
      'write -> SSE p99, 100 subscribers on 2 hubs',
      'write -> SSE p99, 50 on the other hub',
      'raw NOTIFY p50, ',
      'raw NOTIFY p99, ',
    ]) {
      expect(value(prefix)).toMatch(/^\d[\d.]* ms$/);
    }
    expect(value('delivery p99 / raw NOTIFY p99 (100 subscribers')).toMatch(/^\d+\.\d+x$/);
    const undelivered = rows.filter((row) => /not delivered|not received/.test(row.metric));
    expect(undelivered).toEqual([]);
  });
});

describe('search quality on LoCoMo (development split)', () => {
  const reason = `the LoCoMo data is not at ${LOCOMO_PATH} (set CTXBUS_LOCOMO)`;
  const required = process.env.CI === 'true';
  if (!locomoAvailable()) {
    if (required) {
      it('needs the data in CI', () => {
        expect.fail(`CI must measure search quality, but ${reason}`);
      });
    } else {
      it.skip(`skipped: ${reason}`, () => {});
    }
    return;
  }
  it('puts an evidence turn in the top 10 for at least 80% of questions (BM25 alone: 64%)', async () => {
    const result = await measureLocomo();
    const at10 = result.at10 / result.questions;
    process.stderr.write(
      `LoCoMo dev: ${result.questions} questions, top-10 ${(100 * at10).toFixed(1)}%, top-5 ${((100 * result.at5) / result.questions).toFixed(1)}%\n`,
    );
    expect(result.questions).toBeGreaterThan(900);
    // Measured 82.9%; a drop below 80% means the ranking regressed.
    expect(at10).toBeGreaterThanOrEqual(0.8);
  });
});
