// A real hub in the test's own process, on a loopback port the OS picks, over a store of its
// own: what packages below the CLI test against when the hub process is not their subject
// (a `ctxbus serve` process is `useHubProcess`).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Store } from '@ctxbus/store';
import { openSqliteStore } from '@ctxbus/store';

/** The repository's capabilities.yaml (claude-code runs code; openclaw and web ask). */
export const REPO_CAPABILITIES = join(import.meta.dirname, '../../../capabilities.yaml');

/** What the fixture starts the hub with; the rest of `startHub`'s options pass through. */
export interface InProcessStartOptions {
  store: Store;
  host?: string;
  port?: number;
  validateResponses?: boolean;
}

/** The part of a running hub the fixture uses. */
export interface InProcessRunning {
  url: string;
  close(): Promise<void>;
}

/**
 * `startHub` and `mintToken` of `@ctxbus/hub`, passed in by the test: the hub's own tests use
 * this kit, so the kit cannot depend on the hub.
 */
export interface HubPackage<
  Options extends InProcessStartOptions,
  Running extends InProcessRunning,
> {
  startHub(options: Options): Promise<Running>;
  mintToken(
    store: Store,
    request: { role: 'runtime'; teamId: string; runtime: string },
  ): Promise<{ token: string; record: { id: string } }>;
}

export interface InProcessHubOptions<Name extends string, Settings> {
  /** Runtime tokens to mint once the hub is up, by name: `{ code: ['acme', 'claude-code'] }`. */
  tokens?: Record<Name, readonly [teamId: string, runtime: string]>;
  /**
   * A PostgreSQL store at this URL (and `schema`), left in place at close; by default a SQLite
   * file in a temporary directory that close removes.
   */
  postgres?: { url: string; schema?: string };
  /** The hub's other options (`clock`, `capabilities`, ...); `validateResponses` is on by default. */
  hub?: Settings;
}

export interface InProcessHub<Name extends string = never, Running = InProcessRunning> {
  readonly url: string;
  /** The temporary directory holding the SQLite file (none on PostgreSQL); close removes it. */
  readonly dataDir: string | undefined;
  /** The store the hub runs on (a new one after `restart`). */
  readonly store: Store;
  /** The running hub (a new one after `restart`). */
  readonly running: Running;
  /** The minted runtime tokens, by the names given in `tokens`. */
  readonly tokens: Readonly<Record<Name, string>>;
  /** Mints another runtime token (team acme by default); `tokenId` to revoke it. */
  mint(runtime: string, teamId?: string): Promise<{ token: string; tokenId: string }>;
  /**
   * Stops the hub, ending every connection the way a dropped network does, and starts it again
   * on the same port and store (reopened); `between` runs while it is down.
   */
  restart(between?: () => Promise<void>): Promise<void>;
  /** Stops the hub, closes its store and removes its temporary directory. */
  close(): Promise<void>;
}

type Settings<Options> = Omit<Options, 'store' | 'host' | 'port'>;

/** Starts a hub in this process on 127.0.0.1 and a free port, and mints its tokens. */
export async function startInProcessHub<
  Options extends InProcessStartOptions,
  Running extends InProcessRunning,
  Name extends string = never,
>(
  hubPackage: HubPackage<Options, Running>,
  options: InProcessHubOptions<Name, Settings<Options>> = {},
): Promise<InProcessHub<Name, Running>> {
  const dir = options.postgres ? undefined : mkdtempSync(join(tmpdir(), 'ctxbus-hub-'));
  const openStore = async (): Promise<Store> => {
    if (dir) return openSqliteStore({ path: join(dir, 'hub.db') });
    const { openPostgresStore } = await import('@ctxbus/store/postgres');
    const { url, schema } = options.postgres ?? { url: '' };
    return openPostgresStore({ connectionString: url, ...(schema !== undefined && { schema }) });
  };
  const start = (store: Store, port: number) =>
    hubPackage.startHub({
      validateResponses: true,
      ...options.hub,
      store,
      host: '127.0.0.1',
      port,
    } as Options);
  let store = await openStore();
  let running: Running;
  try {
    running = await start(store, 0);
  } catch (error) {
    await store.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const url = running.url;
  const port = Number(new URL(url).port);
  const mint = async (runtime: string, teamId = 'acme') => {
    const minted = await hubPackage.mintToken(store, { role: 'runtime', teamId, runtime });
    return { token: minted.token, tokenId: minted.record.id };
  };
  const tokens = {} as Record<Name, string>;
  for (const [name, [teamId, runtime]] of Object.entries(options.tokens ?? {}) as [
    Name,
    readonly [string, string],
  ][]) {
    tokens[name] = (await mint(runtime, teamId)).token;
  }
  return {
    url,
    dataDir: dir,
    get store() {
      return store;
    },
    get running() {
      return running;
    },
    tokens,
    mint,
    async restart(between) {
      await running.close();
      await store.close();
      await between?.();
      store = await openStore();
      running = await start(store, port);
    },
    async close() {
      try {
        await running.close();
        await store.close();
      } finally {
        if (dir) rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
