import type { TokenInfo } from '@ctxbus/core/contract';
import { CtxbusError } from '@ctxbus/core/contract';
import { mintToken, tokenInfo } from '@ctxbus/hub';
import type { Store, TokenRole } from '@ctxbus/store';
import { openSqliteStore } from '@ctxbus/store';
import { assertNoHub, databasePath } from '../data-dir.js';

// Token management straight on a data directory no hub holds (loaded only when needed).

async function withStore<T>(dataDir: string, work: (store: Store) => Promise<T>): Promise<T> {
  assertNoHub(dataDir);
  const store = openSqliteStore({ path: databasePath(dataDir) });
  try {
    return await work(store);
  } finally {
    await store.close();
  }
}

export function createOffline(
  dataDir: string,
  request: { role: TokenRole; teamId: string | null; runtime: string | null; label: string | null },
): Promise<{ token: string; info: TokenInfo }> {
  return withStore(dataDir, async (store) => {
    const minted = await mintToken(store, request);
    return { token: minted.token, info: tokenInfo(minted.record) };
  });
}

export function listOffline(
  dataDir: string,
  options: { teamId?: string; includeRevoked: boolean },
): Promise<TokenInfo[]> {
  return withStore(dataDir, async (store) => (await store.listTokens(options)).map(tokenInfo));
}

export function revokeOffline(dataDir: string, id: string): Promise<TokenInfo> {
  return withStore(dataDir, async (store) => {
    const record = await store.revokeToken(id);
    if (!record) throw new CtxbusError('not_found', `no token ${id}`);
    return tokenInfo(record);
  });
}
