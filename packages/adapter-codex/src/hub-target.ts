import { join } from 'node:path';
import { ctxbusConfigDir, savedRuntimeToken } from '@ctxbus/client/saved-hub';

// Which hub the hook and the MCP server talk to, and with which token. Codex's hook and MCP
// commands name the hub (`--url`, written by `ctxbus install codex`); the token is never in
// Codex's files: it is Codex's runtime token saved in ctxbus's own credentials (0600, where
// `ctxbus install codex` saved it; `@ctxbus/client/saved-hub` reads it), or $CTXBUS_CODEX_TOKEN. Never $CTXBUS_TOKEN: that is the
// CLI's identity, and a Codex session must not act as the person's CLI.

/** The runtime name Codex's token is minted for and saved under. */
export const CODEX_RUNTIME = 'codex';

export interface HubTarget {
  url: string;
  token: string;
}

/** The `--url <hub>` of a command line, or null. */
export function urlArgument(argv: readonly string[]): string | null {
  const at = argv.indexOf('--url');
  const value = at >= 0 ? argv[at + 1] : undefined;
  return value && /^https?:\/\//.test(value) ? value : null;
}

/**
 * The hub and token: `--url` (else $CTXBUS_URL) and $CTXBUS_CODEX_TOKEN, else the token saved
 * for that hub. Null when either is missing (the hook then fails open with a notice).
 */
export function findHubTarget(argv: readonly string[], env: NodeJS.ProcessEnv): HubTarget | null {
  const url = urlArgument(argv) ?? env.CTXBUS_URL ?? null;
  if (!url) return null;
  const token = env.CTXBUS_CODEX_TOKEN || savedRuntimeToken(url, CODEX_RUNTIME, env);
  return token ? { url, token } : null;
}

/**
 * Why `findHubTarget` found nothing, in one line a person can act on: no hub named, or no
 * token for Codex at that hub where this process looks (ctxbus's credentials under
 * $CTXBUS_CONFIG_DIR, else ~/.config/ctxbus: set at connect, it must be set where Codex runs).
 */
export function hubTargetProblem(argv: readonly string[], env: NodeJS.ProcessEnv): string {
  const url = urlArgument(argv) ?? env.CTXBUS_URL ?? null;
  if (!url) return 'no hub configured (ctxbus connect codex)';
  const credentials = join(ctxbusConfigDir(env), 'credentials.json');
  return `no codex token for ${url} in ${credentials} (ctxbus connect codex, or set CTXBUS_CODEX_TOKEN; if CTXBUS_CONFIG_DIR was set when you connected, set it where Codex runs too)`;
}
