import type { TokenInfo } from '@ctxbus/core/contract';
import { CtxbusError } from '@ctxbus/core/light';
import { mintToken, tokenInfo } from '@ctxbus/hub';
import type { TokenRole } from '@ctxbus/store';
import type { StoreTarget } from '../store-target.js';
import { assertStoreExists, withOfflineStore as withStore } from '../store-target.js';

// Token management straight on the store (loaded only when needed): a data directory no hub
// holds, or a PostgreSQL database (hubs may run on it: they read tokens from it).

export function createOffline(
  target: StoreTarget,
  request: { role: TokenRole; teamId: string | null; runtime: string | null; label: string | null },
): Promise<{ token: string; info: TokenInfo }> {
  return withStore(target, async (store) => {
    const minted = await mintToken(store, request);
    return { token: minted.token, info: tokenInfo(minted.record) };
  });
}

export async function listOffline(
  target: StoreTarget,
  options: { teamId?: string; includeRevoked: boolean },
): Promise<TokenInfo[]> {
  assertStoreExists(target);
  return withStore(target, async (store) => (await store.listTokens(options)).map(tokenInfo));
}

export async function revokeOffline(target: StoreTarget, id: string): Promise<TokenInfo> {
  assertStoreExists(target);
  return withStore(target, async (store) => {
    const record = await store.revokeToken(id);
    if (!record) throw new CtxbusError('not_found', `no token ${id}`);
    return tokenInfo(record);
  });
}
