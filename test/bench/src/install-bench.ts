// `./dev bench --only install` (issue 28): the published package as a person gets it. Packs the
// tarball, installs it once to warm npm's cache, then times an install into another empty
// prefix on a clean HOME; measures the installed size (du), `ctxbus --version` and the time from
// `ctxbus serve` to its first answered /health, and the CPU time and peak memory of
// `ctxbus --help` and `ctxbus write` (issue 26: each command loads only what it runs). Last,
// the whole way from the tarball to a decision shared across runtimes (test-kit's
// packed-journey.ts): a fresh install, serve, connect, a Claude Code turn stating a decision,
// and the seconds until OpenClaw's next model request carries it (target <= 60 s).

import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { removeDir, tempDir } from '@ctxbus/test-kit';
import { openClawUnavailable } from '@ctxbus/test-kit/openclaw-home';
import {
  cleanHomeEnv,
  diskUsage,
  installedBin,
  installTarball,
  packTarball,
  startInstalledHub,
} from '@ctxbus/test-kit/packed-cli';
import {
  createJourneyMachine,
  journeyLine,
  runDecisionJourney,
  stepsLine,
} from '@ctxbus/test-kit/packed-journey';
import { contentText } from '@ctxbus/test-kit/scripted-openai-model';
import type { Row } from './stats.ts';
import { ms, percentile } from './stats.ts';

const TARGET_INSTALL_MB = 40;
const TARGET_INSTALL_S = 20;
const TARGET_VERSION_MS = 300;
const TARGET_HEALTH_MS = 1_000;
const TARGET_COMMAND_CPU_MS = 150;
const TARGET_COMMAND_RSS_MB = 60;
const TARGET_JOURNEY_S = 60;
/** The real runtimes the journey connects (this package's devDependencies). */
const BIN_DIR = resolve(import.meta.dirname, '../node_modules/.bin');

const mb = (bytes: number) => bytes / 1024 / 1024;

function row(metric: string, value: string, target?: string, ok?: boolean): Row {
  return {
    section: 'install',
    metric,
    value,
    ...(target && { target }),
    ...(ok !== undefined && { ok }),
  };
}

/** Wall time of `ctxbus --version`, process start to exit, p50 of `runs`. */
function versionMs(prefix: string, home: string, runs: number): number {
  const times: number[] = [];
  for (let run = 0; run < runs; run++) {
    const start = performance.now();
    const result = spawnSync(process.execPath, [installedBin(prefix), '--version'], {
      env: cleanHomeEnv(home),
    });
    times.push(performance.now() - start);
    if (result.status !== 0) throw new Error(`ctxbus --version failed: ${result.stderr}`);
  }
  return percentile(times, 50);
}

/** `ctxbus serve` started -> its first /health answered with 200, in ms. */
async function healthMs(prefix: string, home: string): Promise<number> {
  const start = performance.now();
  const hub = await startInstalledHub(prefix, home);
  try {
    for (;;) {
      const response = await fetch(`${hub.url}/health`).catch(() => null);
      if (response?.status === 200) return performance.now() - start;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  } finally {
    await hub.stop();
  }
}

/**
 * Runs the installed `ctxbus ARGS` in a node whose exit records its own resource usage (user +
 * system CPU, peak RSS): the command's whole cost, Node's start included.
 */
function commandCost(
  prefix: string,
  home: string,
  args: string[],
  runs: number,
): { cpuMs: number; rssMb: number } {
  const file = join(home, 'command-cost.json');
  const record = `process.on('exit', () => { const u = process.resourceUsage(); require('node:fs').writeFileSync(process.env.BENCH_COST_FILE, JSON.stringify({ cpuMs: (u.userCPUTime + u.systemCPUTime) / 1000, rssMb: u.maxRSS / 1024 })); });
import(require('node:url').pathToFileURL(process.argv[1]).href);`;
  const cpu: number[] = [];
  const rss: number[] = [];
  for (let run = 0; run < runs; run++) {
    const result = spawnSync(
      process.execPath,
      ['-e', record, '--', installedBin(prefix), ...args],
      {
        env: { ...cleanHomeEnv(home), BENCH_COST_FILE: file },
      },
    );
    if (result.status !== 0) throw new Error(`ctxbus ${args.join(' ')} failed: ${result.stderr}`);
    const cost = JSON.parse(readFileSync(file, 'utf8')) as { cpuMs: number; rssMb: number };
    cpu.push(cost.cpuMs);
    rss.push(cost.rssMb);
  }
  return { cpuMs: percentile(cpu, 50), rssMb: percentile(rss, 50) };
}

/**
 * `ctxbus write` against an installed hub, with a runtime token saved as a person would. `home`
 * is a HOME of its own: the hub's first start there saves its admin token for `token create`.
 */
async function writeCost(prefix: string, home: string, runs: number) {
  mkdirSync(home);
  const hub = await startInstalledHub(prefix, home);
  try {
    const minted = spawnSync(
      process.execPath,
      [
        installedBin(prefix),
        'token',
        'create',
        '--url',
        hub.url,
        '--team',
        'bench',
        '--runtime',
        'cli',
        '--save',
      ],
      { env: cleanHomeEnv(home) },
    );
    if (minted.status !== 0) throw new Error(`ctxbus token create failed: ${minted.stderr}`);
    return commandCost(
      prefix,
      home,
      ['write', '--url', hub.url, '--type', 'status', '--title', 'bench', '--content', 'one write'],
      runs,
    );
  } finally {
    await hub.stop();
  }
}

function costRows(command: string, cost: { cpuMs: number; rssMb: number }): Row[] {
  return [
    row(
      `${command} CPU (user + sys) p50`,
      ms(cost.cpuMs),
      `<= ${TARGET_COMMAND_CPU_MS} ms`,
      cost.cpuMs <= TARGET_COMMAND_CPU_MS,
    ),
    row(
      `${command} peak RSS p50`,
      `${cost.rssMb.toFixed(0)} MB`,
      `<= ${TARGET_COMMAND_RSS_MB} MB`,
      cost.rssMb <= TARGET_COMMAND_RSS_MB,
    ),
  ];
}

/**
 * Tarball present -> OpenClaw's model request carrying the decision Claude Code stated: an
 * install into an empty prefix (npm's cache warm), serve, connect, one turn of each runtime.
 */
async function journeyRows(tarball: string, prefix: string, log: (line: string) => void) {
  const unavailable = openClawUnavailable(join(BIN_DIR, 'openclaw'));
  const metric = 'tarball -> decision in the other runtime (install, serve, connect, 2 turns)';
  if (unavailable) return [row(metric, `skipped: ${unavailable}`)];
  log('install: tarball -> serve -> connect -> Claude Code decides -> OpenClaw sees it');
  const machine = await createJourneyMachine(BIN_DIR);
  try {
    const journey = await runDecisionJourney(machine, prefix, () =>
      installTarball(tarball, prefix, machine.home),
    );
    const sent = journey.seenRequest?.messages.map((message) => contentText(message.content));
    if (!sent?.join('\n').includes(journey.decision)) {
      throw new Error("the decision Claude Code stated is not in OpenClaw's model request");
    }
    log(`install: ${journeyLine(journey.times)}`);
    log(`install: ctxbus connect, step by step: ${stepsLine(journey.connect)}`);
    const { times } = journey;
    return [
      row(
        metric,
        `${times.seen.toFixed(1)} s`,
        `<= ${TARGET_JOURNEY_S} s`,
        times.seen <= TARGET_JOURNEY_S,
      ),
      row(
        'journey step: ctxbus connect (Claude Code, OpenClaw, Codex)',
        `${(times.connected - times.serving).toFixed(1)} s`,
      ),
      row(
        'journey step: OpenClaw start -> its model request',
        `${(times.seen - times.decided).toFixed(1)} s`,
      ),
    ];
  } finally {
    await machine.close();
  }
}

export async function benchInstall(quick: boolean, log: (line: string) => void): Promise<Row[]> {
  const root = tempDir('ctxbus-bench-install-');
  try {
    log('install: packing the ctxbus package');
    const tarball = await packTarball(join(root, 'out'));
    const home = join(root, 'home');
    mkdirSync(home);
    log('install: warming npm cache (first install)');
    await installTarball(tarball, join(root, 'warm'), home);
    log('install: timed install into an empty prefix');
    const prefix = join(root, 'prefix');
    const start = performance.now();
    await installTarball(tarball, prefix, home);
    const seconds = (performance.now() - start) / 1000;
    const installed = mb(diskUsage(join(prefix, 'node_modules')));
    const version = versionMs(prefix, home, quick ? 5 : 20);
    log('install: serve -> first /health');
    const health = await healthMs(prefix, home);
    log('install: ctxbus --help and ctxbus write, CPU and memory');
    const help = commandCost(prefix, home, ['--help'], quick ? 5 : 20);
    const write = await writeCost(prefix, join(root, 'home-write'), quick ? 5 : 20);
    const journey = await journeyRows(tarball, join(root, 'prefix-journey'), log);
    return [
      row('tarball size', `${mb(statSync(tarball).size).toFixed(1)} MB`),
      row(
        'installed size (du node_modules)',
        `${installed.toFixed(1)} MB`,
        `<= ${TARGET_INSTALL_MB} MB`,
        installed <= TARGET_INSTALL_MB,
      ),
      row(
        'npm install from the tarball, warm cache',
        `${seconds.toFixed(1)} s`,
        `<= ${TARGET_INSTALL_S} s`,
        seconds <= TARGET_INSTALL_S,
      ),
      row(
        'ctxbus --version p50',
        ms(version),
        `<= ${TARGET_VERSION_MS} ms`,
        version <= TARGET_VERSION_MS,
      ),
      row(
        'serve -> first /health',
        ms(health),
        `<= ${TARGET_HEALTH_MS} ms`,
        health <= TARGET_HEALTH_MS,
      ),
      ...costRows('ctxbus --help', help),
      ...costRows('ctxbus write', write),
      ...journey,
    ];
  } finally {
    removeDir(root);
  }
}
