// ctxbus benchmarks: starts a real `ctxbus serve` on a fresh embedded store and measures it
// over HTTP. Usage: ./dev bench [--quick] [--only writes,delivery,scale,hooks,live,codex,openclaw,cache,mcp,locomo,hybrid,postgres,vectors,stalled,tasks,task-peers,task-crash,telegram,dashboard,install,analytics] [--json]

import nodeModule from 'node:module';
import { parseArgs } from 'node:util';
import type { HubProcess } from '@ctxbus/test-kit';
import type { Row } from './stats.ts';

// Each section's module (and what it loads: the store, PostgreSQL's client, Playwright, the
// MCP SDK...) is imported when the section runs, through V8's code cache (as the CLI does): a
// run of one section (each test of bench.test.ts and bench-postgres.test.ts is one) loads only that section's code.
nodeModule.enableCompileCache?.();
const { call, openStream, removeDir, runtimeToken, startHubProcess, tempDir } = await import(
  '@ctxbus/test-kit'
);
const { ms, percentile, perSecond, rssMb } = await import('./stats.ts');
/** The store's PostgreSQL probe and the reason a section skips, loaded when a section needs them. */
const postgresProbe = async () => {
  const [{ postgresRequired, probePostgres }, { skipReason }] = await Promise.all([
    import('@ctxbus/store/testing'),
    import('./postgres-bench.ts'),
  ]);
  return { postgresRequired, probePostgres, skipReason };
};

const { values: flags } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    json: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});

if (flags.help) {
  process.stdout.write(`ctxbus benchmarks (a real hub process on a fresh embedded store)

  ./dev bench [--quick] [--only writes,delivery,scale,hooks,live,codex,openclaw,cache,mcp,locomo,hybrid,postgres,vectors,stalled,tasks,task-peers,task-crash,telegram,dashboard,install,analytics] [--json]

  writes    write latency p50/p99 (1 client), throughput (16 clients, single items; batches of 500),
            100,000-character items built to slow tokenizing and secret scanning, vs prose
  delivery  write -> SSE delivery latency p50/p99 with 1 and 100 subscribers
  scale     shared bundle and search latency, and hub RSS, at 10k and 100k items
  hooks     Claude Code hook latency (SessionStart, UserPromptSubmit) and tokens injected
  live      live push (install --live) with the real Claude Code CLI and a scripted model: a
            blocking item written during a running tool call -> the session's inbox, -> the
            model request (p50/p99), tool call returned -> that request (target p99 <= 1 s)
  codex     Codex hook latency (SessionStart, UserPromptSubmit, Stop; target p99 <= 100 ms),
            node -e '' in the same loop (the floor), tokens injected at session start and per
            turn; CTXBUS_BENCH_CODEX_BASELINE=<another build's ctxbus-codex-hook.js> also runs
            that hook, alternated with this one (an A/B on the same load, with ratios)
  openclaw  OpenClaw plugin: latency before_prompt_build adds to a turn, tokens injected;
            the shared-context bridge: agent output file -> bus -> SSE
  cache     prompt-cache stability (issue 29): a session of 50 turns (8 with --quick) per
            runtime, each the real CLI (Claude Code: claude -p --resume; OpenClaw: openclaw
            agent --session-id; Codex: codex exec resume) against a scripted model that logs
            its requests, another runtime writing one new item before every turn: turns whose
            request starts with the previous turn's (target >= 98%), tokens injected per turn
            p50/max, new items in the next turn's request (target 100%), the machine load
            (CTXBUS_BENCH_CACHE_RUNTIMES=claude-code,openclaw,codex picks runtimes, those the
            default; openclaw is OpenClaw's openai provider on the Responses API, also
            openclaw-chat and openclaw-responses-custom: a provider of the config's own on
            Chat Completions or Responses;
            CTXBUS_BENCH_CACHE_TURNS=N sets the turns; CTXBUS_BENCH_CACHE_DUMP=DIR keeps
            each turn's request)
  mcp       MCP tool-call latency over Streamable HTTP (/mcp) and stdio (ctxbus mcp)
  locomo    search quality on ../shared/data/locomo-dev (evidence turn in top 5/10)
  postgres  two hubs on one PostgreSQL schema (CTXBUS_TEST_POSTGRES_URL, else the local
            server's test database): write throughput (1 and 16 clients, batches of 50),
            write -> SSE p50/p99 with 100 subscribers on both hubs, the raw LISTEN/NOTIFY
            round trip with 100 listeners in the same run, and their ratio. Skipped with the
            reason when no server answers (an error when CI=true or CTXBUS_REQUIRE_POSTGRES=1)
  vectors   vector search at the store: exact scan (SQLite; PostgreSQL without pgvector) and
            pgvector when the server has it, 10k items x 256 and 1536 dimensions
  hybrid    LoCoMo recall@10, full text against hybrid with the test kit's embeddings stand-in
            (words hashed into 256 dimensions, a weak model): hybrid must not rank below
            full text
  stalled   hub RSS with 900 reading and 100 stalled SSE subscribers while 10,000 items of
            2 KB are written at 250/s (target <= 400 MB), and the readers' delivery p50/p99
            against the same run without stalled subscribers (100 readers timed)
  tasks     routing decision (routeTask, in process) p50/p99 for 50 runtimes x 20
            capabilities on seeded random matrices, mixed presence (target p99 <= 1 ms);
            remote execution: runCommand spawn latency p50/p99 (call -> spawn event) and whole
            run for /bin/true, plain and inside bubblewrap (target: spawn p50 <= 15 ms);
            the task store: create p50/p99, and 16 claimers racing over 1,000 tasks
            through two stores on one database (SQLite file; PostgreSQL, two pools): claim
            p50/p99 and claim + complete throughput; through a real hub and \`ctxbus worker\`:
            create -> claimed by an idle worker p50/p99 (targets 20/60 ms), claim -> spawn
            p50 (15 ms), result -> origin's SSE p99 (25 ms), 1,000 tasks through 16 workers;
            the audit log: append p50/p99, 16 appenders on one team's chain through two
            stores, a whole-chain verification; and task-peers
  task-peers the task path side by side (issue 24): N tasks running \`true\` through 16 workers
            (4 processes x 4) on graphile-worker and pg-boss (npm) and on ctxbus (a real hub
            on PostgreSQL and on SQLite, real \`ctxbus worker\` processes), each on a fresh
            database, alternated: tasks/s, CPU ms per task (producer, hub, workers, database;
            the command apart), create -> started p50/p99, the ratios issue 24 targets, and
            lock waits sampled from pg_stat_activity. 1,000 tasks, twice each (200 once with
            --quick; CTXBUS_BENCH_PEER_TASKS=N sets N, 0 skips it; the tasks test of bench-postgres.test.ts skips it, and a test of its own runs it with 10 tasks)
  task-crash tasks through real workers and a real hub killed at random points (issue 24):
            1,000 tasks (200 with --quick; CTXBUS_BENCH_CRASH_TASKS=N sets N, 0 skips it)
            through 4 \`ctxbus worker\` processes x 4, each a node script logging its run,
            on PostgreSQL and on SQLite, while 3 workers and 2 hubs are killed with SIGKILL
            (the hub started again on the same store and port): tasks lost, tasks run twice,
            audit holes (targets 0), and how the tasks ended (completed, worker_lost, dead
            letters, requeued before their command started)
  telegram  a real \`ctxbus telegram\` on a local Bot API server: blocking item written ->
            sendMessage received p50/p99 (target p99 <= 250 ms)
  dashboard the dashboard in headless Chromium (playwright-core): an item written over REST ->
            its row in the page's DOM p50/p99 (target p99 <= 150 ms); the built
            dashboard's size, gzipped (target <= 200 KB)
  install   the published package (./dev pack): tarball size; installed into an empty prefix
            on a clean HOME with a warm npm cache: size (du, target <= 40 MB) and seconds
            (target <= 20 s); ctxbus --version p50 (target <= 300 ms); serve -> first /health
            (target <= 1,000 ms); tarball present -> a decision stated in the real Claude Code
            in the real OpenClaw's next model request, through a fresh install, serve and
            connect on a clean HOME (target <= 60 s)
  analytics context analytics' cost on the hot path: the shared bundle with its injections
            recorded against the same bundle as a preview (not recorded), alternated in one
            run at 20k items: p50 each and their ratio (target <= 1.10); GET /api/analytics p50;
            injections counted = items served (target equal)
  --quick   small sizes (a smoke run of every section, ~30 s)

  CTXBUS_BENCH_HUB_NODE_OPTIONS  NODE_OPTIONS for the postgres section's hubs, e.g.
            "--cpu-prof --cpu-prof-dir=/tmp/prof" to profile them under load
`);
  process.exit(0);
}

const quick = flags.quick;
const sections = new Set(
  (
    flags.only ??
    'writes,delivery,scale,hooks,live,codex,openclaw,cache,mcp,locomo,hybrid,postgres,vectors,stalled,tasks,telegram,dashboard,install,analytics'
  ).split(','),
);
const rows: Row[] = [];
const log = (line: string) => process.stderr.write(`${line}\n`);

function row(section: string, metric: string, value: string, target?: string, ok?: boolean) {
  rows.push({ section, metric, value, ...(target && { target }), ...(ok !== undefined && { ok }) });
}

async function timed(work: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await work();
  return performance.now() - start;
}

async function post(hub: HubProcess, token: string, body: unknown) {
  const response = await call(hub.url, 'POST', '/api/context', { token, body });
  if (response.status !== 201 && response.status !== 200) {
    throw new Error(`write failed: ${response.status} ${JSON.stringify(response.body)}`);
  }
  return response;
}

async function benchWrites(hub: HubProcess, token: string) {
  const single = quick ? 200 : 2_000;
  const latencies: number[] = [];
  const started = performance.now();
  for (let index = 0; index < single; index++) {
    latencies.push(
      await timed(() =>
        post(hub, token, {
          type: 'status',
          title: `single write ${index}`,
          content: 'x'.repeat(200),
        }),
      ),
    );
  }
  const sequentialMs = performance.now() - started;
  const p50 = percentile(latencies, 50);
  row('writes', 'write latency p50 (1 client, single item)', ms(p50), '<= 2 ms', p50 <= 2);
  row('writes', 'write latency p99 (1 client, single item)', ms(percentile(latencies, 99)));
  row('writes', 'throughput, 1 client, single items', perSecond(single, sequentialMs));

  const clients = 16;
  const perClient = quick ? 50 : 500;
  const concurrentMs = await timed(() =>
    Promise.all(
      Array.from({ length: clients }, async (_, client) => {
        for (let index = 0; index < perClient; index++) {
          await post(hub, token, {
            type: 'status',
            title: `c${client} write ${index}`,
            content: 'y'.repeat(200),
          });
        }
      }),
    ),
  );
  row(
    'writes',
    `throughput, ${clients} clients, single items`,
    perSecond(clients * perClient, concurrentMs),
  );

  const batches = quick ? 4 : 40;
  const batchLatencies: number[] = [];
  const batchedMs = await timed(async () => {
    for (let batch = 0; batch < batches; batch++) {
      const items = Array.from({ length: 500 }, (_, index) => ({
        type: 'discovery',
        title: `batch ${batch} item ${index}`,
        content: 'z'.repeat(200),
      }));
      batchLatencies.push(await timed(() => post(hub, token, { items })));
    }
  });
  row('writes', 'throughput, 1 client, batches of 500', perSecond(batches * 500, batchedMs));
  row('writes', 'batch of 500 latency p50', ms(percentile(batchLatencies, 50)));
  await benchHostileWrites(hub, token);
}

/**
 * Items of 100,000 characters built to make tokenizing and secret scanning slow (one unbroken
 * run of a letter, of CJK, of `a-`/`a.`/`eyJ-` word boundaries): each write beside plain prose
 * of the same length. Quadratic work here held the hub's event loop for seconds per item.
 */
async function benchHostileWrites(hub: HubProcess, token: string) {
  const length = 100_000;
  const cjk = Array.from({ length }, (_, index) =>
    String.fromCodePoint(0x4e00 + ((index * 7919) % 20_000)),
  ).join('');
  const contents: Record<string, string> = {
    'prose (baseline)': 'We keep the invoices in Postgres. '.repeat(length / 34).slice(0, length),
    'one letter': 'q'.repeat(length),
    CJK: cjk,
    'a-a-a-': 'a-'.repeat(length / 2),
    'a.a.a.': 'a.'.repeat(length / 2),
    'eyJ-eyJ-': 'eyJ-'.repeat(length / 4),
  };
  const times: Record<string, number> = {};
  for (const [name, content] of Object.entries(contents)) {
    times[name] = await timed(() => post(hub, token, { type: 'discovery', title: name, content }));
  }
  const baseline = times['prose (baseline)'] ?? 1;
  for (const [name, time] of Object.entries(times)) {
    if (name === 'prose (baseline)') {
      row('writes', 'one 100,000-character item, prose', ms(time));
      continue;
    }
    const ratio = time / baseline;
    row(
      'writes',
      `one 100,000-character item, ${name} (vs prose)`,
      `${ms(time)} (${ratio.toFixed(1)}x)`,
      '<= 20x',
      ratio <= 20,
    );
  }
}

async function benchDelivery(hub: HubProcess, token: string, subscribers: number) {
  const writes = quick ? 40 : 300;
  const reader = await runtimeToken(hub, 'bench', 'openclaw');
  const sentAt = new Map<string, number>();
  const latencies: number[] = [];
  const received = Array.from({ length: subscribers }, () => 0);
  const streams = Array.from({ length: subscribers }, (_, index) =>
    openStream(hub.url, reader, {
      query: 'tags=delivery',
      onEvent(event) {
        if (event.event !== 'context-added') return;
        const now = performance.now();
        const start = sentAt.get(JSON.parse(event.data).item.title as string);
        if (start === undefined) return;
        latencies.push(now - start);
        received[index] = (received[index] ?? 0) + 1;
      },
    }),
  );
  await Promise.all(streams.map((stream) => stream.ready));
  for (let index = 0; index < writes; index++) {
    const title = `delivery ${subscribers} ${index}`;
    sentAt.set(title, performance.now());
    await post(hub, token, { type: 'status', title, relevanceTags: ['delivery'] });
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  const deadline = Date.now() + 10_000;
  while (received.some((count) => count < writes) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  for (const stream of streams) stream.close();
  const missing = writes * subscribers - latencies.length;
  const p99 = percentile(latencies, 99);
  const target = subscribers >= 100 ? '<= 25 ms' : undefined;
  row('delivery', `write -> SSE p50, ${subscribers} subscriber(s)`, ms(percentile(latencies, 50)));
  row(
    'delivery',
    `write -> SSE p99, ${subscribers} subscriber(s)`,
    ms(p99),
    target,
    target ? p99 <= 25 : undefined,
  );
  if (missing > 0)
    row(
      'delivery',
      `events not delivered, ${subscribers} subscriber(s)`,
      String(missing),
      '0',
      false,
    );
}

/** A realistic mix of item kinds, so the shared bundle has work to do at every size. */
function mixedItem(index: number, texts: readonly string[]): Record<string, unknown> {
  const text = texts[index % texts.length] ?? 'text';
  const title = text.split(/\s+/).slice(0, 8).join(' ') || `item ${index}`;
  const kind = index % 100;
  if (kind < 8) return { type: 'decision', title, content: text, relevanceTags: ['arch'] };
  if (kind < 14) {
    return {
      type: 'status',
      title,
      content: text,
      scopeKey: `task:T-${index % 700}`,
      ...(kind === 13 && { relevanceTags: ['done'] }),
    };
  }
  if (kind < 18)
    return { type: 'discovery', title, content: text, scopeKey: `thread:chat-${index % 50}` };
  if (kind < 20)
    return { type: 'alert', title, content: text, urgency: kind === 18 ? 'blocking' : 'attention' };
  if (kind < 21) return { type: 'request', title, content: text };
  if (kind < 24)
    return {
      type: 'discovery',
      title,
      content: text,
      key: `project/p${index % 40}/note-${index % 7}`,
    };
  return {
    type: kind % 2 ? 'discovery' : 'status',
    title,
    content: text,
    relevanceTags: [`t${kind % 9}`],
  };
}

async function fillTo(hub: HubProcess, token: string, target: number, texts: readonly string[]) {
  let count =
    (await call(hub.url, 'GET', '/api/context?limit=1', { token })).body.items[0]?.seq ?? 0;
  const started = performance.now();
  while (count < target) {
    const size = Math.min(500, target - count);
    const items = Array.from({ length: size }, (_, offset) => mixedItem(count + offset, texts));
    await post(hub, token, { items });
    count += size;
    if (count % 20_000 === 0) log(`  filled ${count.toLocaleString('en-US')} items`);
  }
  return performance.now() - started;
}

async function benchScale(hub: HubProcess, token: string) {
  const { corpusQueries, corpusTexts } = await import('./corpus.ts');
  const texts = corpusTexts();
  const queries = corpusQueries();
  const checkpoints = quick ? [1_000, 2_000] : [10_000, 100_000];
  for (const size of checkpoints) {
    log(`scale: filling to ${size.toLocaleString('en-US')} items`);
    await fillTo(hub, token, size, texts);
    const label = size >= 1000 ? `${size / 1000}k` : String(size);
    const repeats = quick ? 30 : 200;
    const shared: number[] = [];
    for (let index = 0; index < repeats; index++) {
      shared.push(await timed(() => call(hub.url, 'GET', '/api/context/shared', { token })));
    }
    const search: number[] = [];
    for (let index = 0; index < repeats; index++) {
      const query = queries[(index * 7) % queries.length] ?? 'status';
      search.push(
        await timed(() =>
          call(hub.url, 'POST', '/api/context/search', { token, body: { query, limit: 10 } }),
        ),
      );
    }
    const final = size === checkpoints.at(-1);
    const sharedP50 = percentile(shared, 50);
    const searchP50 = percentile(search, 50);
    row(
      'scale',
      `shared bundle p50 @ ${label} items`,
      ms(sharedP50),
      final ? '<= 10 ms' : undefined,
      final ? sharedP50 <= 10 : undefined,
    );
    row('scale', `shared bundle p99 @ ${label} items`, ms(percentile(shared, 99)));
    row(
      'scale',
      `search p50 @ ${label} items`,
      ms(searchP50),
      final ? '<= 10 ms' : undefined,
      final ? searchP50 <= 10 : undefined,
    );
    row('scale', `search p99 @ ${label} items`, ms(percentile(search, 99)));
    const rss = rssMb(hub.process.pid ?? 0);
    row(
      'scale',
      `hub RSS @ ${label} items`,
      `${rss.toFixed(0)} MB`,
      final ? '<= 300 MB' : undefined,
      final ? rss <= 300 : undefined,
    );
  }
}

function printTable(): void {
  if (flags.json) {
    process.stdout.write(`${JSON.stringify({ quick, rows }, null, 2)}\n`);
    return;
  }
  const header = ['section', 'metric', 'value', 'target', ''];
  const lines = rows.map((r) => [
    r.section,
    r.metric,
    r.value,
    r.target ?? '',
    r.ok === undefined ? '' : r.ok ? 'ok' : 'MISSED',
  ]);
  const widths = header.map((_, column) =>
    Math.max(header[column]?.length ?? 0, ...lines.map((line) => line[column]?.length ?? 0)),
  );
  const format = (cells: string[]) =>
    `| ${cells.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join(' | ')} |`;
  process.stdout.write(
    `${format(header)}\n|${widths.map((width) => '-'.repeat(width + 2)).join('|')}|\n`,
  );
  for (const line of lines) process.stdout.write(`${format(line)}\n`);
}

/** The task path beside graphile-worker and pg-boss; CTXBUS_BENCH_PEER_TASKS sets its size. */
async function taskPeers() {
  const size = process.env.CTXBUS_BENCH_PEER_TASKS;
  if (size === '0') {
    log('task-peers: skipped (CTXBUS_BENCH_PEER_TASKS=0)');
    row(
      'task-peers',
      'task path beside graphile-worker and pg-boss',
      'skipped: CTXBUS_BENCH_PEER_TASKS=0',
    );
    return;
  }
  const { postgresRequired, probePostgres, skipReason } = await postgresProbe();
  const server = await probePostgres();
  if (server.url === null && postgresRequired()) {
    throw new Error(
      `task-peers: cannot run (CI=true or CTXBUS_REQUIRE_POSTGRES=1): ${skipReason(server)}`,
    );
  }
  rows.push(
    ...(await (
      await import('./task-peers.ts')
    ).benchTaskPeers({
      quick,
      log,
      serverUrl: server.url,
      ...(server.url === null && { skipReason: skipReason(server) }),
      ...(size && { tasks: Number(size) }),
    })),
  );
}

/** Tasks through workers and a hub killed at random points, on PostgreSQL and on SQLite. */
async function taskCrash() {
  const size = process.env.CTXBUS_BENCH_CRASH_TASKS;
  if (size === '0') {
    log('task-crash: skipped (CTXBUS_BENCH_CRASH_TASKS=0)');
    row(
      'task-crash',
      'tasks through killed workers and hubs',
      'skipped: CTXBUS_BENCH_CRASH_TASKS=0',
    );
    return;
  }
  const { postgresRequired, probePostgres, skipReason } = await postgresProbe();
  const server = await probePostgres();
  if (server.url === null && postgresRequired()) {
    throw new Error(
      `task-crash: cannot run (CI=true or CTXBUS_REQUIRE_POSTGRES=1): ${skipReason(server)}`,
    );
  }
  rows.push(
    ...(await (
      await import('./task-crash.ts')
    ).benchTaskCrash({
      quick,
      log,
      serverUrl: server.url,
      ...(server.url === null && { skipReason: skipReason(server) }),
      ...(size && { tasks: Number(size) }),
    })),
  );
}

async function main() {
  log(`ctxbus bench (${quick ? 'quick' : 'full'}): ${[...sections].join(', ')}`);
  const withHub = async (work: (hub: HubProcess, token: string) => Promise<void>) => {
    const dataDir = tempDir('ctxbus-bench-');
    const hub = await startHubProcess({
      dataDir,
      // The subscribers of a delivery run share one token: room for all of them.
      args: ['--log-level', 'error', '--max-streams-per-token', '5000'],
      env: { CTXBUS_VALIDATE_RESPONSES: '0' },
    });
    try {
      await work(hub, await runtimeToken(hub, 'bench', 'claude-code'));
    } finally {
      await hub.stop();
      removeDir(dataDir);
    }
  };
  if (sections.has('writes') || sections.has('delivery')) {
    await withHub(async (hub, token) => {
      if (sections.has('writes')) {
        log('writes');
        await benchWrites(hub, token);
      }
      if (sections.has('delivery')) {
        for (const subscribers of [1, 100]) {
          log(`delivery: ${subscribers} subscriber(s)`);
          await benchDelivery(hub, token, subscribers);
        }
      }
    });
  }
  // Scale gets a fresh hub so that each size is exactly the items it says.
  if (sections.has('scale')) await withHub(benchScale);
  if (sections.has('hooks')) {
    log('hooks: Claude Code hook latency');
    await withHub(async (hub) => {
      rows.push(...(await (await import('./hook-latency.ts')).benchHooks(hub, quick ? 10 : 50)));
    });
  }
  if (sections.has('live')) {
    log('live: push into a running Claude Code session');
    await withHub(async (hub) => {
      rows.push(
        ...(await (await import('./live-push-latency.ts')).benchLivePush(hub, quick ? 3 : 30)),
      );
    });
  }
  if (sections.has('codex')) {
    log('codex: Codex hook latency');
    await withHub(async (hub) => {
      rows.push(
        ...(await (await import('./codex-hook-latency.ts')).benchCodexHooks(hub, quick ? 10 : 50)),
      );
    });
  }
  if (sections.has('openclaw')) {
    log('openclaw: plugin turn latency');
    await withHub(async (hub) => {
      rows.push(
        ...(await (await import('./openclaw-latency.ts')).benchOpenClaw(hub, quick ? 40 : 300)),
      );
      rows.push(
        ...(await (
          await import('./openclaw-latency.ts')
        ).benchSharedContextBridge(hub, quick ? 10 : 50)),
      );
    });
  }
  if (sections.has('cache')) {
    const turns = Number(process.env.CTXBUS_BENCH_CACHE_TURNS ?? (quick ? 8 : 50));
    await withHub(async (hub) => {
      rows.push(...(await (await import('./cache-stability.ts')).benchCache(hub, turns, log)));
    });
  }
  if (sections.has('mcp')) {
    log('mcp: tool-call latency');
    await withHub(async (hub) => {
      rows.push(...(await (await import('./mcp-latency.ts')).benchMcp(hub, quick ? 20 : 200)));
    });
  }
  const { locomoAvailable } = await import('./corpus.ts');
  if (sections.has('locomo')) {
    if (!locomoAvailable()) {
      row(
        'locomo',
        'search recall',
        'skipped: ../shared/data/locomo-dev not found (set CTXBUS_LOCOMO)',
      );
    } else {
      log('locomo: search quality');
      rows.push(...(await (await import('./locomo-recall.ts')).runLocomo()));
    }
  }
  if (sections.has('hybrid')) {
    if (!locomoAvailable()) {
      row(
        'hybrid',
        'hybrid recall',
        'skipped: ../shared/data/locomo-dev not found (set CTXBUS_LOCOMO)',
      );
    } else {
      log('hybrid: LoCoMo recall, full text against hybrid with a weak embedding model');
      rows.push(...(await (await import('./locomo-recall.ts')).runHybridLocomo()));
    }
  }
  if (sections.has('postgres')) {
    const { postgresRequired, probePostgres, skipReason } = await postgresProbe();
    const server = await probePostgres();
    if (server.url === null) {
      const reason = skipReason(server);
      if (postgresRequired()) {
        throw new Error(`postgres: cannot run (CI=true or CTXBUS_REQUIRE_POSTGRES=1): ${reason}`);
      }
      log(`postgres: skipped: ${reason}`);
      row('postgres', 'PostgreSQL benchmarks', `skipped: ${reason}`);
    } else {
      rows.push(
        ...(await (await import('./postgres-bench.ts')).benchPostgres(server.url, { quick, log })),
      );
    }
  }
  if (sections.has('vectors'))
    rows.push(...(await (await import('./vector-search.ts')).benchVectorSearch(quick, log)));
  if (sections.has('stalled')) {
    const stalled = await import('./stalled-readers.ts');
    rows.push(
      ...(await stalled.benchStalled(quick ? stalled.STALLED_QUICK : stalled.STALLED_FULL, log))
        .rows,
    );
  }
  if (sections.has('tasks')) {
    rows.push(...(await import('./routing-bench.ts')).benchRouting(quick ? 2_000 : 20_000, log));
    rows.push(...(await (await import('./exec-spawn.ts')).benchExecSpawn(quick, log)));
    rows.push(...(await (await import('./task-store.ts')).benchTaskStore(quick, log)));
    rows.push(...(await (await import('./task-latency.ts')).benchTaskLatency(quick, log)));
    rows.push(...(await (await import('./audit-log.ts')).benchAuditLog(quick, log)));
  }
  if (sections.has('tasks') || sections.has('task-peers')) await taskPeers();
  if (sections.has('tasks') || sections.has('task-crash')) await taskCrash();
  if (sections.has('telegram')) {
    await withHub(async (hub) => {
      rows.push(
        ...(await (
          await import('./telegram-latency.ts')
        ).benchTelegram(hub, quick ? 20 : 200, log)),
      );
    });
  }
  if (sections.has('dashboard')) {
    await withHub(async (hub) => {
      rows.push(
        ...(await (
          await import('./dashboard-latency.ts')
        ).benchDashboard(hub, quick ? 20 : 200, log)),
      );
    });
  }
  if (sections.has('install'))
    rows.push(...(await (await import('./install-bench.ts')).benchInstall(quick, log)));
  if (sections.has('analytics')) {
    await withHub(async (hub, token) => {
      rows.push(
        ...(await (
          await import('./analytics-bench.ts')
        ).benchAnalytics(hub, token, {
          items: quick ? 2_000 : 20_000,
          repeats: quick ? 100 : 400,
          log,
        })),
      );
    });
  }
  printTable();
}

await main();
