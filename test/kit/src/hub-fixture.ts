import { afterAll, beforeAll, expect } from 'vitest';
import { runtimeToken } from './http.ts';
import type { HubProcess, StartOptions } from './hub-process.ts';
import { removeDir, startHubProcess } from './hub-process.ts';

export interface HubFixtureOptions<Name extends string> extends StartOptions {
  /** Runtime tokens to mint once the hub is up, by name: `{ code: ['acme', 'claude-code'] }`. */
  tokens?: Record<Name, readonly [teamId: string, runtime: string]>;
  /** Starts the hub another way (on PostgreSQL, say); by default `startHubProcess(options)`. */
  start?: () => Promise<HubProcess>;
  /** More checks once the hub has stopped (its log, say). */
  afterStop?: (hub: HubProcess) => void;
}

/** A hub process that tests use once the fixture's beforeAll has started it. */
export interface HubFixture<Name extends string = never> extends HubProcess {
  /** The minted runtime tokens, by the names given in `tokens`. */
  readonly tokens: Readonly<Record<Name, string>>;
}

/**
 * A real `ctxbus serve` for the tests of the enclosing file or describe block: started, with
 * its runtime tokens, in a beforeAll; stopped in an afterAll, where it must exit with 0, and
 * its data directory removed. Its fields can be read once the tests (or later hooks) run.
 */
export function useHubProcess<Name extends string = never>(
  options: HubFixtureOptions<Name> = {},
): HubFixture<Name> {
  const { tokens: wanted, start, afterStop, ...startOptions } = options;
  let started: HubProcess | undefined;
  const tokens = {} as Record<Name, string>;
  const hub = (): HubProcess => {
    if (!started) throw new Error('the hub fixture is used before its beforeAll started the hub');
    return started;
  };
  beforeAll(async () => {
    started = await (start ? start() : startHubProcess(startOptions));
    for (const [name, [teamId, runtime]] of Object.entries(wanted ?? {}) as [
      Name,
      readonly [string, string],
    ][]) {
      tokens[name] = await runtimeToken(started, teamId, runtime);
    }
  });
  afterAll(async () => {
    if (!started) return;
    try {
      expect(await started.stop(), `the hub's exit code; its log:\n${started.stderr()}`).toBe(0);
      afterStop?.(started);
    } finally {
      removeDir(started.dataDir);
    }
  });
  return {
    get url() {
      return hub().url;
    },
    get adminToken() {
      return hub().adminToken;
    },
    get dataDir() {
      return hub().dataDir;
    },
    get process() {
      return hub().process;
    },
    stderr: () => hub().stderr(),
    stop: () => hub().stop(),
    kill: () => hub().kill(),
    tokens,
  };
}
