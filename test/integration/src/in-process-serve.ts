// `ctxbus serve` in the test's own process: the integration files whose subject is not the hub
// process (its start, signals, restart or command line) run the real hub this way, without the
// ~0.65 s of CPU a `ctxbus serve` process costs to start. The CLI's own code parses the same
// options and sets the hub up as the command does (first admin token, capabilities.yaml in the
// data directory, MCP, the dashboard, the signing key); only the worker thread, the signals and
// the printed lines are left out. The hub shares the test's event loop.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { HubFixture, HubFixtureOptions, StartOptions, TestHub } from '@ctxbus/test-kit';
import {
  hubEnvironment,
  removeDir,
  TASK_HUB_CAPABILITIES,
  tempDir,
  useHub,
} from '@ctxbus/test-kit';
import { serveInProcess } from 'ctxbus/serve-in-process';

/**
 * Starts what `ctxbus serve --port 0 --data <a temporary directory> --log-level warn <args>`
 * starts (`--store` on PostgreSQL), with the environment a `ctxbus serve` of the test kit gets.
 * `stop` resolves with 0 once it has closed (a failure to close rejects).
 */
export async function startInProcessServe(options: StartOptions = {}): Promise<TestHub> {
  const dataDir = options.store ? '' : (options.dataDir ?? tempDir());
  const where = options.store ? ['--store', options.store] : ['--data', dataDir];
  let log = '';
  const served = await serveInProcess(
    ['--port', '0', ...where, '--log-level', 'warn', ...(options.args ?? [])],
    {
      env: hubEnvironment(options.env),
      log: (line) => {
        log += line;
      },
    },
  ).catch((error: unknown) => {
    // A directory this call made is its own to remove (as `ctxbus serve` leaves a given one).
    if (!options.dataDir) removeDir(dataDir);
    throw error;
  });
  let stopped: Promise<number> | undefined;
  return {
    url: served.url,
    adminToken: served.adminToken,
    dataDir,
    stderr: () => log,
    stop: () => {
      stopped ??= served.close().then(() => 0);
      return stopped;
    },
  };
}

/**
 * `useHubProcess`'s in-process twin: the same options (`args`, `store`, `dataDir`, `env`,
 * `tokens`, `afterStop`, `start`), a hub started in a beforeAll and stopped in an afterAll.
 */
export function useInProcessHub<Name extends string = never>(
  options: HubFixtureOptions<Name, TestHub> = {},
): HubFixture<Name, TestHub> {
  const { tokens, start, afterStop, ...startOptions } = options;
  return useHub(start ?? (() => startInProcessServe(startOptions)), {
    ...(tokens && { tokens }),
    ...(afterStop && { afterStop }),
  });
}

/**
 * An in-process hub for a real `ctxbus worker`: OpenClaw's code_execution goes to Claude
 * Code's workers (TASK_HUB_CAPABILITIES), with a token for each (`code`, `claw`).
 */
export function useTaskHub(prefix: string) {
  const dataDir = tempDir(prefix);
  writeFileSync(join(dataDir, 'capabilities.yaml'), TASK_HUB_CAPABILITIES);
  return useInProcessHub({
    dataDir,
    tokens: { code: ['acme', 'claude-code'], claw: ['acme', 'openclaw'] },
  });
}
