import { createClient } from '@ctxbus/client';
import type { TokenInfo } from '@ctxbus/core/contract';
import { parseOrThrow, runtimeNameSchema, teamIdSchema } from '@ctxbus/core/contract';
import { defaultTeam, hubCredentials, saveRuntimeToken } from '../credentials.js';
import { adminToken, findHubUrl, hubUrl } from '../hub-target.js';
import { oneLine } from '../output.js';
import type { StoreTarget } from '../store-target.js';
import { storeTarget } from '../store-target.js';

export interface TargetOptions {
  url?: string;
  adminToken?: string;
  data?: string;
  store?: string;
  json?: boolean;
}

type Target =
  | { kind: 'online'; url: string; client: ReturnType<typeof createClient> }
  | { kind: 'offline'; store: StoreTarget };

/**
 * A running hub (--url, $CTXBUS_URL, or the hub saved by `ctxbus serve` when no --data or
 * --store is given) with an admin token; otherwise the store is opened directly.
 */
export function target(options: TargetOptions): Target {
  // A store named by flag or by $CTXBUS_STORE is opened directly (a saved hub does not win
  // over it); --url still goes to a hub.
  const direct = options.data || options.store || process.env.CTXBUS_STORE;
  const url = direct ? options.url && hubUrl(options.url) : findHubUrl(options.url);
  if (url) {
    return {
      kind: 'online',
      url,
      client: createClient({ url, token: adminToken(url, options.adminToken) }),
    };
  }
  return { kind: 'offline', store: storeTarget(options) };
}

export const offline = () => import('./offline-tokens.js');

export function tokenRow(info: TokenInfo): string {
  const who = info.role === 'admin' ? 'admin' : `${info.teamId}/${info.runtime}`;
  const revoked = info.revokedAt ? ` revoked ${info.revokedAt}` : '';
  return `${info.id}  ${who}  created ${info.createdAt}${info.label ? `  "${oneLine(info.label)}"` : ''}${revoked}`;
}

// For the command's actions, which import this module when they run.
export {
  defaultTeam,
  hubCredentials,
  parseOrThrow,
  runtimeNameSchema,
  saveRuntimeToken,
  teamIdSchema,
};
