import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

// A runtime's hub and token as ctxbus saved them on this machine: the CLI's credentials file
// (`credentials.json`, 0600, written by `ctxbus serve`, `ctxbus connect`, `ctxbus install` and
// `ctxbus token create --runtime <runtime> --save`). The token is the runtime's own
// (`hubs[<origin>].runtimes[<runtime>]`), never the CLI's identity. Read by hand, without zod:
// hooks read it on every prompt. The CLI's own reader (apps/cli credentials.ts) validates the
// whole file; this one only looks for what a runtime needs and never throws.

export interface SavedHubTarget {
  url: string;
  token: string;
}

/** $CTXBUS_CONFIG_DIR, else $XDG_CONFIG_HOME/ctxbus, else ~/.config/ctxbus (the CLI's rule). */
export function ctxbusConfigDir(env: NodeJS.ProcessEnv): string {
  if (env.CTXBUS_CONFIG_DIR) return resolve(env.CTXBUS_CONFIG_DIR);
  return join(env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'ctxbus');
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

function readSaved(env: NodeJS.ProcessEnv): Record<string, unknown> | null {
  try {
    const file = JSON.parse(
      readFileSync(join(ctxbusConfigDir(env), 'credentials.json'), 'utf8'),
    ) as unknown;
    return isRecord(file) && isRecord(file.hubs) ? file : null;
  } catch {
    return null;
  }
}

function tokenIn(file: Record<string, unknown>, url: string, runtime: string): string | null {
  try {
    const hub = (file.hubs as Record<string, unknown>)[new URL(url).origin];
    if (!isRecord(hub) || !isRecord(hub.runtimes)) return null;
    const entry = hub.runtimes[runtime];
    return isRecord(entry) && typeof entry.token === 'string' && entry.token ? entry.token : null;
  } catch {
    return null;
  }
}

/** `runtime`'s token saved for `url`'s hub, or null. Never throws. */
export function savedRuntimeToken(
  url: string,
  runtime: string,
  env: NodeJS.ProcessEnv,
): string | null {
  const file = readSaved(env);
  return file ? tokenIn(file, url, runtime) : null;
}

/**
 * The hub `runtime` talks to and its token: `url` when given, else the saved default hub, with
 * the token saved for `runtime` there. Null when either is missing. Never throws.
 */
export function savedHubTarget(
  runtime: string,
  env: NodeJS.ProcessEnv,
  url?: string,
): SavedHubTarget | null {
  const file = readSaved(env);
  if (!file) return null;
  const hub = url || (typeof file.defaultHub === 'string' ? file.defaultHub : null);
  if (!hub) return null;
  const token = tokenIn(file, hub, runtime);
  return token ? { url: hub.replace(/\/+$/, ''), token } : null;
}
