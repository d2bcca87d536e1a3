import type { WebClient } from '@ctxbus/adapter-web';
import { createWebClient } from '@ctxbus/adapter-web';

// The dashboard's token lives in this tab's session storage: gone when the tab closes, never in
// a URL (where history, logs and Referer headers would keep it), never in local storage.
const TOKEN_KEY = 'ctxbus.token';

/** Who the token acts as, read from the hub at sign-in. */
export interface Identity {
  teamId: string;
  runtime: string;
}

export interface Session {
  client: WebClient;
  identity: Identity;
}

export function storedToken(): string | null {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}

export function forgetToken(): void {
  sessionStorage.removeItem(TOKEN_KEY);
}

/**
 * Checks a token against the hub (the page's own origin) and keeps it for this tab. A runtime
 * token is needed: the views read as a runtime would (its private items, its subscriptions).
 * Throws the hub's error (`unauthorized`, `forbidden` for an admin token) for the form to show.
 */
export async function signIn(token: string, origin = location.origin): Promise<Session> {
  const client = createWebClient({ url: origin, token });
  // The shared bundle names the token's team (its identity's runtime is the one the bundle is
  // formatted for, `web` here, whatever the token's), the capabilities the caller's runtime.
  const [bundle, capabilities] = await Promise.all([
    client.shared({ tokenBudget: 64, preview: true }),
    client.capabilities(),
  ]);
  const runtime = capabilities.approvers.caller.runtime ?? bundle.identity.runtime;
  sessionStorage.setItem(TOKEN_KEY, token);
  return { client, identity: { teamId: bundle.identity.teamId, runtime } };
}
