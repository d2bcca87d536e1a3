import { join } from 'node:path';
import type { Store } from '@ctxbus/store';
import { openSqliteStore } from '@ctxbus/store';
import { mintToken } from './auth.js';
import type { Hub } from './create-hub.js';
import { createHub } from './create-hub.js';

// For tests: a hub in process on an in-memory SQLite store, with the repository's
// capabilities.yaml, no sweeps, responses checked against their schemas, and a runtime token
// per name in team acme.

export interface MemoryHub<Name extends string> {
  store: Store;
  hub: Hub;
  tokens: Record<Name, string>;
  close(): Promise<void>;
}

/** `runtimes`: a name for each token and the runtime it acts as, e.g. { code: 'claude-code' }. */
export async function memoryHub<Name extends string>(
  runtimes: Record<Name, string>,
): Promise<MemoryHub<Name>> {
  const store = openSqliteStore({ path: ':memory:' });
  const hub = await createHub({
    store,
    validateResponses: true,
    capabilities: { file: join(import.meta.dirname, '../../../capabilities.yaml'), pollMs: 0 },
    sweep: false,
  });
  const tokens = {} as Record<Name, string>;
  for (const [name, runtime] of Object.entries(runtimes) as [Name, string][]) {
    tokens[name] = (await mintToken(store, { role: 'runtime', teamId: 'acme', runtime })).token;
  }
  return {
    store,
    hub,
    tokens,
    async close() {
      await hub.close();
      await store.close();
    },
  };
}
