import { afterAll, beforeAll, expect } from 'vitest';
import { runtimeToken } from './http.ts';
import type { HubProcess, StartOptions, TestHub } from './hub-process.ts';
import { removeDir, startHubProcess } from './hub-process.ts';

export interface HubFixtureOptions<Name extends string, Hub extends TestHub = HubProcess>
  extends StartOptions {
  /** Runtime tokens to mint once the hub is up, by name: `{ code: ['acme', 'claude-code'] }`. */
  tokens?: Record<Name, readonly [teamId: string, runtime: string]>;
  /** Starts the hub another way (on PostgreSQL, say); by default from the other options. */
  start?: () => Promise<Hub>;
  /** More checks once the hub has stopped (its log, say). */
  afterStop?: (hub: Hub) => void;
}

/** A hub that tests use once the fixture's beforeAll has started it. */
export type HubFixture<Name extends string = never, Hub extends TestHub = HubProcess> = Hub & {
  /** The minted runtime tokens, by the names given in `tokens`. */
  readonly tokens: Readonly<Record<Name, string>>;
};

/**
 * The hub `start` starts, for the tests of the enclosing file or describe block: started, with
 * its runtime tokens, in a beforeAll; stopped in an afterAll, where it must stop cleanly (exit
 * with 0), and its data directory removed. Its fields can be read once the tests (or later
 * hooks) run; reading one earlier throws.
 */
export function useHub<Name extends string, Hub extends TestHub>(
  start: () => Promise<Hub>,
  options: Pick<HubFixtureOptions<Name, Hub>, 'tokens' | 'afterStop'> = {},
): HubFixture<Name, Hub> {
  let started: Hub | undefined;
  const tokens = {} as Record<Name, string>;
  const hub = (): Hub => {
    if (!started) throw new Error('the hub fixture is used before its beforeAll started the hub');
    return started;
  };
  beforeAll(async () => {
    started = await start();
    for (const [name, [teamId, runtime]] of Object.entries(options.tokens ?? {}) as [
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
      options.afterStop?.(started);
    } finally {
      removeDir(started.dataDir);
    }
  });
  // Every field but `tokens` is the started hub's, read when used.
  return new Proxy({ tokens } as HubFixture<Name, Hub>, {
    get: (fixture, key) => (key === 'tokens' ? fixture.tokens : Reflect.get(hub(), key)),
  });
}

/**
 * A real `ctxbus serve` for the tests of the enclosing file or describe block (see `useHub`):
 * `startHubProcess(options)`, or `options.start`.
 */
export function useHubProcess<Name extends string = never>(
  options: HubFixtureOptions<Name> = {},
): HubFixture<Name> {
  const { tokens, start, afterStop, ...startOptions } = options;
  return useHub(start ?? (() => startHubProcess(startOptions)), {
    ...(tokens && { tokens }),
    ...(afterStop && { afterStop }),
  });
}
