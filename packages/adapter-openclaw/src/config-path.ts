import { lstatSync, readFileSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';

// Where OpenClaw's config file is, found without starting OpenClaw (each start of OpenClaw
// 2026.9 costs 1-3 s and 100-200 MB). Only what OpenClaw's documented rules settle is answered
// here (docs/help/environment.md, docs/cli/config.md): OPENCLAW_CONFIG_PATH; else
// $OPENCLAW_STATE_DIR/openclaw.json; else ~/.openclaw/openclaw.json, `~` being OPENCLAW_HOME,
// else HOME; and only when that file exists as a regular file, since OpenClaw looks further
// (legacy names and folders) when it does not. Everything else is left to `openclaw config
// file`: a profile, a relative or `~` path, no config yet, a symlink, and an env file OpenClaw
// loads itself that sets an OPENCLAW_ variable (its global .env can move the config).

type Env = NodeJS.ProcessEnv;

/** A variable as OpenClaw reads it: trimmed; blank, "undefined" and "null" are unset. */
function setting(env: Env, key: string): string | undefined {
  const value = env[key]?.trim();
  return value && value !== 'undefined' && value !== 'null' ? value : undefined;
}

function isRegularFile(path: string): boolean {
  try {
    return lstatSync(path).isFile();
  } catch {
    return false;
  }
}

/** Whether one of the env files OpenClaw loads at start sets one of its own variables. */
function envFileSetsOpenClaw(files: string[]): boolean {
  return files.some((file) => {
    try {
      return /\bOPENCLAW_/.test(readFileSync(file, 'utf8'));
    } catch {
      return false;
    }
  });
}

/** The env files OpenClaw loads before it resolves its paths (its global .env, gateway.env). */
function envFiles(env: Env, home: string, stateDir: string): string[] {
  const configHomes = [join(home, '.config'), setting(env, 'XDG_CONFIG_HOME')];
  const osHome = setting(env, 'HOME');
  if (osHome) configHomes.push(join(osHome, '.config'));
  return [
    join(stateDir, '.env'),
    ...configHomes
      .filter((dir): dir is string => dir !== undefined)
      .map((dir) => join(dir, 'openclaw', 'gateway.env')),
  ];
}

/**
 * The config file `openclaw config file` would print for this environment, or null when
 * OpenClaw must be asked. `profile` is OpenClaw's --profile (any profile: ask OpenClaw).
 */
export function knownConfigPath(env: Env = process.env, profile?: string): string | null {
  if (profile || setting(env, 'OPENCLAW_PROFILE')) return null;
  const explicit = setting(env, 'OPENCLAW_CONFIG_PATH');
  if (explicit) {
    // The process's own value wins over every env file (OpenClaw never overrides it).
    return isAbsolute(explicit) && isRegularFile(resolve(explicit)) ? resolve(explicit) : null;
  }
  const home = setting(env, 'OPENCLAW_HOME') ?? setting(env, 'HOME');
  if (!home || !isAbsolute(home)) return null;
  const stateDir = setting(env, 'OPENCLAW_STATE_DIR') ?? join(home, '.openclaw');
  if (!isAbsolute(stateDir)) return null;
  if (envFileSetsOpenClaw(envFiles(env, home, stateDir))) return null;
  const candidate = join(resolve(stateDir), 'openclaw.json');
  return isRegularFile(candidate) ? candidate : null;
}
