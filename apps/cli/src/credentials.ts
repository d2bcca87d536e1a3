import { mkdirSync, readFileSync } from 'node:fs';
import { homedir, userInfo } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { writeFileAtomic } from '@ctxbus/client/files';
import { CtxbusError } from '@ctxbus/core/light';

// The CLI's credentials on this machine, as gh and npm keep theirs: one JSON file readable by
// its owner alone (0600, in a 0700 directory). `ctxbus serve` saves a new hub's admin token
// there; `ctxbus token create --save` a runtime token for the CLI's own commands; every
// command falls back to them when no flag or environment variable names a hub or a token.

/** What the CLI keeps for one hub. */
export interface HubCredentials {
  /** Admin token: token commands, and installers that mint a runtime's token. */
  adminToken?: string;
  /** Runtime token the CLI's own commands (write, read, search, shared, watch) act with. */
  token?: string;
  /** Its team and runtime, as minted (shown by doctor, default team of installers). */
  teamId?: string;
  runtime?: string;
  /**
   * Each runtime's own token on this machine (a worker's, the Telegram bot's), kept apart from
   * the CLI's: `token create --save` of another runtime never changes whom the CLI acts as.
   */
  runtimes?: Record<string, { token: string; teamId: string }>;
}

export interface Credentials {
  version: 1;
  /** The hub used when neither --url nor $CTXBUS_URL names one. */
  defaultHub: string | null;
  /** By hub URL (origin, no trailing slash). */
  hubs: Record<string, HubCredentials>;
}

// Checked by hand, not with zod: every command reads this file, and zod alone is ~0.1 s of CPU
// and ~20 MB at each start (the `write` target is 150 ms and 60 MB). Strict, as a schema
// would be: an unknown field, a wrong type or an empty string names its path.

type Shape = Record<string, (value: unknown, at: string) => void>;

function fail(at: string, message: string): never {
  throw new CtxbusError('validation_failed', `${at}: ${message}`);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function text(optional: boolean) {
  return (value: unknown, at: string) => {
    if (value === undefined && optional) return;
    if (typeof value !== 'string' || value.length === 0) fail(at, 'expected a non-empty string');
  };
}

function object(shape: Shape) {
  return (value: unknown, at: string) => {
    if (!isObject(value)) fail(at, 'expected an object');
    for (const key of Object.keys(value)) {
      if (!Object.hasOwn(shape, key)) fail(at ? `${at}.${key}` : key, 'unknown field');
    }
    for (const [key, check] of Object.entries(shape)) check(value[key], at ? `${at}.${key}` : key);
  };
}

function record(check: (value: unknown, at: string) => void, optional: boolean) {
  return (value: unknown, at: string) => {
    if (value === undefined && optional) return;
    if (!isObject(value)) fail(at, 'expected an object');
    for (const [key, entry] of Object.entries(value)) check(entry, `${at}.${key}`);
  };
}

const checkHub = object({
  adminToken: text(true),
  token: text(true),
  teamId: text(true),
  runtime: text(true),
  runtimes: record(object({ token: text(false), teamId: text(false) }), true),
});

const checkCredentials = object({
  version: (value, at) => {
    if (value !== 1) fail(at, 'expected 1');
  },
  defaultHub: (value, at) => {
    if (value !== null && typeof value !== 'string') fail(at, 'expected a string or null');
  },
  hubs: record(checkHub, false),
});

/** The file's JSON as credentials, or a validation error naming the first bad path. */
export function parseCredentials(json: unknown): Credentials {
  checkCredentials(json, '');
  return json as Credentials;
}

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
  try {
    return parseCredentials(json);
  } catch (error) {
    throw new CtxbusError(
      'validation_failed',
      `${path}: ${(error as Error).message}; fix or delete it`,
    );
  }
}

/** The credentials saved for `url`'s hub, if any. */
export function hubCredentials(url: string, path = credentialsPath()): HubCredentials {
  return readCredentials(path).hubs[hubKey(url)] ?? {};
}

/**
 * The team a command acts in when none is given: the one this machine's credentials for the
 * hub already act in (the CLI's, else a saved runtime's: what `ctxbus connect` wired), else the
 * user's name (`local` when it makes no team id). Teams share nothing: one rule for connect and
 * the CLI's own token keeps them in one team.
 */
export function defaultTeam(url: string): string {
  const saved = hubCredentials(url);
  const team = saved.teamId ?? Object.values(saved.runtimes ?? {})[0]?.teamId;
  if (team) return team;
  const name = userInfo()
    .username.replace(/[^A-Za-z0-9._-]/g, '')
    .slice(0, 64);
  return /^[A-Za-z0-9]/.test(name) ? name : 'local';
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
