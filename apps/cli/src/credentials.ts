import { mkdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { writeFileAtomic } from '@ctxbus/client/files';
import { CtxbusError } from '@ctxbus/core/light';
import { z } from 'zod';

// The CLI's credentials on this machine, as gh and npm keep theirs: one JSON file readable by
// its owner alone (0600, in a 0700 directory). `ctxbus serve` saves a new hub's admin token
// there; `ctxbus token create --save` a runtime token for the CLI's own commands; every
// command falls back to them when no flag or environment variable names a hub or a token.

const hubCredentialsSchema = z.strictObject({
  /** Admin token: token commands, and installers that mint a runtime's token. */
  adminToken: z.string().min(1).optional(),
  /** Runtime token the CLI's own commands (write, read, search, shared, watch) act with. */
  token: z.string().min(1).optional(),
  /** Its team and runtime, as minted (shown by doctor, default team of installers). */
  teamId: z.string().min(1).optional(),
  runtime: z.string().min(1).optional(),
  /**
   * Each runtime's own token on this machine (a worker's, the Telegram bot's), kept apart from
   * the CLI's: `token create --save` of another runtime never changes whom the CLI acts as.
   */
  runtimes: z
    .record(z.string(), z.strictObject({ token: z.string().min(1), teamId: z.string().min(1) }))
    .optional(),
});

const credentialsSchema = z.strictObject({
  version: z.literal(1),
  /** The hub used when neither --url nor $CTXBUS_URL names one. */
  defaultHub: z.string().nullable(),
  /** By hub URL (origin, no trailing slash). */
  hubs: z.record(z.string(), hubCredentialsSchema),
});

export type HubCredentials = z.infer<typeof hubCredentialsSchema>;
export type Credentials = z.infer<typeof credentialsSchema>;

/** $CTXBUS_CONFIG_DIR, else $XDG_CONFIG_HOME/ctxbus, else ~/.config/ctxbus. */
export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.CTXBUS_CONFIG_DIR) return resolve(env.CTXBUS_CONFIG_DIR);
  return join(env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'ctxbus');
}

export function credentialsPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(configDir(env), 'credentials.json');
}

/** A hub URL as credentials are keyed: its origin, e.g. `http://127.0.0.1:7420`. */
export function hubKey(url: string): string {
  return new URL(url).origin;
}

const EMPTY: Credentials = { version: 1, defaultHub: null, hubs: {} };

/** The saved credentials; none when the file does not exist. A broken file is an error. */
export function readCredentials(path = credentialsPath()): Credentials {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return structuredClone(EMPTY);
    throw new CtxbusError('internal', `cannot read ${path}: ${(error as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new CtxbusError('validation_failed', `${path} is not JSON: fix or delete it`);
  }
  const parsed = credentialsSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new CtxbusError(
      'validation_failed',
      `${path}: ${issue?.path.join('.') || 'file'}: ${issue?.message ?? 'invalid'}; fix or delete it`,
    );
  }
  return parsed.data;
}

/** The credentials saved for `url`'s hub, if any. */
export function hubCredentials(url: string, path = credentialsPath()): HubCredentials {
  return readCredentials(path).hubs[hubKey(url)] ?? {};
}

/** The runtime the CLI's own commands act as when `token create --save` names it. */
export const CLI_RUNTIME = 'cli';

/**
 * Saves a minted runtime token for `url`'s hub under its runtime. It becomes the identity the
 * CLI's own commands act as only for the CLI's runtime (`cli`), or with `asCli`; what it
 * replaced, if anything, is returned so the caller says so (never a silent switch).
 */
export function saveRuntimeToken(
  url: string,
  minted: { token: string; teamId: string; runtime: string },
  options: { asCli?: boolean; path?: string } = {},
): { path: string; cli: boolean; replaced: string | null } {
  const saved = hubCredentials(url, options.path);
  const cli = options.asCli === true || minted.runtime === CLI_RUNTIME;
  const runtimes = {
    ...saved.runtimes,
    [minted.runtime]: { token: minted.token, teamId: minted.teamId },
  };
  const before = saved.token ? `${saved.teamId ?? '?'}/${saved.runtime ?? '?'}` : null;
  const after = `${minted.teamId}/${minted.runtime}`;
  const path = saveHubCredentials(
    url,
    cli
      ? { runtimes, token: minted.token, teamId: minted.teamId, runtime: minted.runtime }
      : { runtimes },
    options.path === undefined ? {} : { path: options.path },
  );
  return { path, cli, replaced: cli && before !== null && before !== after ? before : null };
}

/**
 * The token saved for `runtime` on `url`'s hub; without a runtime, the one saved runtime that
 * is not the CLI's (a worker's machine has one). Null when none, or when several could be meant.
 */
export function savedRuntimeToken(
  url: string,
  runtime: string | undefined,
  path?: string,
): { runtime: string; token: string; teamId: string } | null {
  const saved = hubCredentials(url, path).runtimes ?? {};
  if (runtime !== undefined) {
    const entry = saved[runtime];
    return entry ? { runtime, ...entry } : null;
  }
  const others = Object.entries(saved).filter(([name]) => name !== CLI_RUNTIME);
  if (others.length !== 1) return null;
  const [name, entry] = others[0] as [string, { token: string; teamId: string }];
  return { runtime: name, ...entry };
}

/**
 * Merges `update` into `url`'s entry and saves atomically (a temporary file renamed over the
 * old one), readable by the owner alone. With `makeDefault`, the hub becomes the default;
 * the first hub saved becomes it anyway.
 */
export function saveHubCredentials(
  url: string,
  update: HubCredentials,
  options: { makeDefault?: boolean; path?: string } = {},
): string {
  const path = options.path ?? credentialsPath();
  const credentials = readCredentials(path);
  const key = hubKey(url);
  credentials.hubs[key] = { ...credentials.hubs[key], ...update };
  if (options.makeDefault || credentials.defaultHub === null) credentials.defaultHub = key;
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileAtomic(path, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 });
  return path;
}

/**
 * Forgets the token saved for `runtime` on `url`'s hub (what `ctxbus disconnect` saved); the
 * CLI's own identity and the admin token stay. Whether there was one.
 */
export function forgetRuntimeToken(
  url: string,
  runtime: string,
  path = credentialsPath(),
): boolean {
  const credentials = readCredentials(path);
  const entry = credentials.hubs[hubKey(url)];
  if (!entry?.runtimes?.[runtime]) return false;
  const { [runtime]: _forgotten, ...rest } = entry.runtimes;
  if (Object.keys(rest).length === 0) delete entry.runtimes;
  else entry.runtimes = rest;
  writeFileAtomic(path, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 });
  return true;
}
