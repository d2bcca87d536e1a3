import { browserUnavailable } from '@ctxbus/web/testing';
import { describe, expect, it } from 'vitest';
import { LOCOMO_PATH, locomoAvailable } from './corpus.ts';
import { measureLocomo } from './locomo-recall.ts';
import { runBench } from './run-bench-process.ts';

// The sections without PostgreSQL; those on it are in bench-postgres.test.ts, which vitest runs
// beside this file.

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
      'shared bundle p50 @ 2k items',
      'search p50 @ 2k items',
      'hub RSS @ 2k items',
    ]) {
      expect(metrics).toContain(expected);
    }
    expect(metrics.some((metric) => metric.startsWith('events not delivered'))).toBe(false);
    // A measure, and for the hostile writes its ratio to prose's: "22.4 ms (0.5x)".
    for (const row of rows) {
      expect(row.value, row.metric).toMatch(/^\d[\d,.]* (ms|MB|items\/s)( \(\d[\d,.]*x\))?$/);
    }
    expect(metrics).toContain('one 100,000-character item, CJK (vs prose)');
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
    expect(complete?.value).toBe('30 and 30 of 30');
    expect(complete?.ok).toBe(true);
    expect(rows.map((row) => row.metric)).toContain('hub RSS peak / end, 30 readers, 10 stalled');
  });
});

describe('./dev bench --only analytics', () => {
  it('counts every injection it serves, and compares recorded bundles with previews in one run', async () => {
    const result = await runBench(['--quick', '--only', 'analytics', '--json']);
    expect(result.code, result.stderr).toBe(0);
    const { rows } = JSON.parse(result.stdout) as {
      rows: { metric: string; value: string; ok?: boolean }[];
    };
    const counted = rows.find((row) => row.metric === 'injections counted / served');
    expect(counted?.ok, counted?.value).toBe(true);
    expect(counted?.value).toMatch(/^[1-9]\d* \/ [1-9]\d*$/);
    const metrics = rows.map((row) => row.metric);
    expect(metrics).toContain('recorded / preview p50');
    expect(metrics).toContain('GET /api/analytics p50 (7 days)');
  });
});

describe('./dev bench --only live', () => {
  it('drives the real Claude Code CLI: every pushed item rides in the request after its tool call', async () => {
    const result = await runBench(['--quick', '--only', 'live', '--json']);
    expect(result.code, result.stderr).toBe(0);
    const { rows } = JSON.parse(result.stdout) as {
      rows: { metric: string; value: string; ok?: boolean }[];
    };
    const same = rows.find((row) => row.metric.startsWith('items in the request right after'));
    expect(same?.value).toBe('3 / 3');
    const metrics = rows.map((row) => row.metric);
    expect(metrics).toContain('tool call returned -> model request with the item p50 / p99');
    expect(metrics).toContain('machine load (1 / 5 min)');
  });
});

describe('./dev bench --only cache', () => {
  it('drives Claude Code and Codex through turns of one session each and measures prefix, tokens and reach', async () => {
    // Two turns (one comparison) per runtime: what the section does at any length. OpenClaw is
    // left to `./dev bench --only cache`: a turn of it is 40-60 s here, and its prefix across
    // turns is proven in test/e2e (openclaw.test.ts on Chat Completions, less OpenClaw's own
    // trailing context; openclaw-responses.test.ts on OpenAI's Responses API, strict); the
    // section's code is the same for all.
    const result = await runBench(['--quick', '--only', 'cache', '--json'], {
      CTXBUS_BENCH_CACHE_TURNS: '2',
      CTXBUS_BENCH_CACHE_RUNTIMES: 'claude-code,codex',
    });
    expect(result.code, result.stderr).toBe(0);
    const { rows } = JSON.parse(result.stdout) as { rows: { metric: string; value: string }[] };
    const value = (metric: string) => rows.find((row) => row.metric === metric)?.value;
    for (const runtime of ['Claude Code', 'Codex']) {
      expect(value(`${runtime}: turns whose request starts with the previous turn's`)).toMatch(
        /^[01] \/ 1 \(/,
      );
      expect(value(`${runtime}: tokens injected, first turn; later turns p50 / max`)).toMatch(
        /^\d+; \d+ \/ \d+$/,
      );
      expect(value(`${runtime}: new items in the next turn's request`)).toMatch(/^[0-2] \/ 2 \(/);
    }
    expect(value('machine load (1 / 5 min)')).toMatch(/^\d+\.\d+ \/ \d+\.\d+$/);
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
