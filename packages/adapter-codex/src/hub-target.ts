import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

// Which hub the hook and the MCP server talk to, and with which token. Codex's hook and MCP
// commands name the hub (`--url`, written by `ctxbus install codex`); the token is never in
// Codex's files: it is Codex's runtime token saved in ctxbus's own credentials (0600, where
// `ctxbus install codex` saved it), or $CTXBUS_CODEX_TOKEN. Never $CTXBUS_TOKEN: that is the
// CLI's identity, and a Codex session must not act as the person's CLI. Read by hand (no zod):
// the hook runs on every prompt.

/** The runtime name Codex's token is minted for and saved under. */
export const CODEX_RUNTIME = 'codex';

export interface HubTarget {
  url: string;
  token: string;
}

/** $CTXBUS_CONFIG_DIR, else $XDG_CONFIG_HOME/ctxbus, else ~/.config/ctxbus (the CLI's rule). */
export function ctxbusConfigDir(env: NodeJS.ProcessEnv): string {
  if (env.CTXBUS_CONFIG_DIR) return resolve(env.CTXBUS_CONFIG_DIR);
  return join(env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'ctxbus');
}

/** The `--url <hub>` of a command line, or null. */
export function urlArgument(argv: readonly string[]): string | null {
  const at = argv.indexOf('--url');
  const value = at >= 0 ? argv[at + 1] : undefined;
  return value && /^https?:\/\//.test(value) ? value : null;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** Codex's token saved for `url`'s hub in ctxbus's credentials, or null. Never throws. */
export function savedCodexToken(url: string, env: NodeJS.ProcessEnv): string | null {
  try {
    const file = JSON.parse(
      readFileSync(join(ctxbusConfigDir(env), 'credentials.json'), 'utf8'),
    ) as unknown;
    if (!isRecord(file) || !isRecord(file.hubs)) return null;
    const hub = file.hubs[new URL(url).origin];
    if (!isRecord(hub) || !isRecord(hub.runtimes)) return null;
    const entry = hub.runtimes[CODEX_RUNTIME];
    return isRecord(entry) && typeof entry.token === 'string' && entry.token ? entry.token : null;
  } catch {
    return null;
  }
}

/**
 * The hub and token: `--url` (else $CTXBUS_URL) and $CTXBUS_CODEX_TOKEN, else the token saved
 * for that hub. Null when either is missing (the hook then fails open with a notice).
 */
export function findHubTarget(argv: readonly string[], env: NodeJS.ProcessEnv): HubTarget | null {
  const url = urlArgument(argv) ?? env.CTXBUS_URL ?? null;
  if (!url) return null;
  const token = env.CTXBUS_CODEX_TOKEN || savedCodexToken(url, env);
  return token ? { url, token } : null;
}
