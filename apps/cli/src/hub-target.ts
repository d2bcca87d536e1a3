import { CtxbusError } from '@ctxbus/core/light';
import {
  CLI_RUNTIME,
  credentialsPath,
  hubCredentials,
  hubKey,
  readCredentials,
  savedRuntimeToken,
} from './credentials.js';

// Which hub a command talks to, and with which token: a flag, else the environment, else what
// this machine saved (see credentials.ts). One rule for every command.

/** A hub URL from a flag or the environment: http(s) with a host, or a clear error (exit 2). */
export function parseHubUrl(value: string, label: string): string {
  let url: URL | null = null;
  try {
    url = new URL(value);
  } catch {
    url = null;
  }
  if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:') || !url.host) {
    throw new CtxbusError(
      'validation_failed',
      `${label} must be an http(s) URL such as http://127.0.0.1:7420 (got "${value}")`,
    );
  }
  return value.replace(/\/+$/, '');
}

/**
 * A flag given empty (`--token "$TOKEN"` with TOKEN unset) is refused: falling back to the
 * environment or what this machine saved would act as another identity than the one named.
 */
function given(flag: string | undefined, name: string): string | undefined {
  if (flag === '') {
    throw new CtxbusError('validation_failed', `${name} is empty (an unset variable?)`);
  }
  return flag;
}

/** --url, else $CTXBUS_URL, else the saved default hub; null when none is known. */
export function findHubUrl(flag: string | undefined): string | null {
  if (given(flag, '--url')) return parseHubUrl(flag as string, '--url');
  if (process.env.CTXBUS_URL) return parseHubUrl(process.env.CTXBUS_URL, 'CTXBUS_URL');
  return readCredentials().defaultHub;
}

export function hubUrl(flag: string | undefined): string {
  const url = findHubUrl(flag);
  if (url === null) {
    throw new CtxbusError(
      'validation_failed',
      'no hub URL: pass --url, set CTXBUS_URL, or start a hub here with `ctxbus serve` (it saves its URL)',
    );
  }
  return url;
}

/**
 * When nothing is saved for `url` but other hubs have credentials here: those hubs, as a hint
 * (a mistyped port, localhost for 127.0.0.1); else ''.
 */
function otherHubs(url: string): string {
  const saved = Object.keys(readCredentials().hubs);
  if (saved.length === 0 || saved.includes(hubKey(url))) return '';
  return ` (this machine has tokens for ${saved.join(', ')} only: another hub, or a mistyped --url?)`;
}

/** --token, else $CTXBUS_TOKEN, else the runtime token saved for `url`. */
export function runtimeToken(url: string, flag: string | undefined): string {
  const token = given(flag, '--token') || process.env.CTXBUS_TOKEN || hubCredentials(url).token;
  if (!token) {
    throw new CtxbusError(
      'validation_failed',
      `no token for the CLI at ${url}${otherHubs(url)}: pass --token, set CTXBUS_TOKEN, or save the CLI's own with \`ctxbus token create --runtime cli --save\` (a token saved for another runtime acts for the CLI only with --as-cli)`,
    );
  }
  return token;
}

/**
 * A runtime's own token (a worker's, the bot's): --token, else $CTXBUS_TOKEN, else the token
 * saved for `runtime` (`token create --save`; without a runtime, the one saved that is not the
 * CLI's), else, from credentials saved before runtimes were kept apart, the CLI's.
 */
export function ownRuntimeToken(
  url: string,
  flag: string | undefined,
  runtime: string | undefined,
): string {
  const chosen = given(flag, '--token') || process.env.CTXBUS_TOKEN;
  if (chosen) return chosen;
  const saved = savedRuntimeToken(url, runtime);
  if (saved) return saved.token;
  const credentials = hubCredentials(url);
  const all = Object.keys(credentials.runtimes ?? {});
  const others = all.filter((name) => name !== CLI_RUNTIME);
  // Credentials from before runtimes were kept apart: their one token.
  if (all.length === 0 && credentials.token) return credentials.token;
  // No runtime asked for and only the CLI's saved: the CLI's token.
  if (runtime === undefined && others.length === 0) return runtimeToken(url, undefined);
  throw new CtxbusError(
    'validation_failed',
    runtime === undefined
      ? `several runtime tokens are saved for ${url} (${others.join(', ')}): pick one with --runtime, or pass --token`
      : `no ${runtime} token saved for ${url} (saved: ${all.length > 0 ? all.join(', ') : 'none'}): \`ctxbus token create --team TEAM --runtime ${runtime} --save\`, or pass --token`,
  );
}

/** --admin-token, else $CTXBUS_ADMIN_TOKEN, else the admin token saved for `url`. */
export function findAdminToken(url: string, flag: string | undefined): string | null {
  return (
    given(flag, '--admin-token') ||
    process.env.CTXBUS_ADMIN_TOKEN ||
    hubCredentials(url).adminToken ||
    null
  );
}

export function adminToken(url: string, flag: string | undefined): string {
  const token = findAdminToken(url, flag);
  if (!token) {
    throw new CtxbusError(
      'validation_failed',
      `no admin token for ${url}${otherHubs(url)}: pass --admin-token or set CTXBUS_ADMIN_TOKEN (\`ctxbus serve\` saves a new hub's in ${credentialsPath()})`,
    );
  }
  return token;
}
