// `./dev bench --only install` (issue 28): the published package as a person gets it. Packs the
// tarball, installs it once to warm npm's cache, then times an install into another empty
// prefix on a clean HOME; measures the installed size (du), `ctxbus --version` and the time from
// `ctxbus serve` to its first answered /health.

import { spawnSync } from 'node:child_process';
import { mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { removeDir, tempDir } from '@ctxbus/test-kit';
import {
  cleanHomeEnv,
  diskUsage,
  installedBin,
  installTarball,
  packTarball,
  startInstalledHub,
} from '@ctxbus/test-kit/packed-cli';
import type { Row } from './stats.ts';
import { ms, percentile } from './stats.ts';

const TARGET_INSTALL_MB = 40;
const TARGET_INSTALL_S = 20;
const TARGET_VERSION_MS = 300;
const TARGET_HEALTH_MS = 1_000;

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
    ];
  } finally {
    removeDir(root);
  }
}
