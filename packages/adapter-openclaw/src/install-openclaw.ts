import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { CtxbusError } from '@ctxbus/core/contract';
import JSON5 from 'json5';
import { PLUGIN_ID } from './plugin-config.js';

// `ctxbus install openclaw`: everything goes through OpenClaw's own commands (`plugins
// install --link`, `config patch`, `plugins uninstall`), so OpenClaw validates and writes its
// config the way it always does; ctxbus only reads the file to change nothing that is already
// right. The plugin is linked, not copied: upgrading ctxbus upgrades the plugin.

/** The MCP server name ctxbus registers in OpenClaw (`mcp.servers.ctxbus`). */
export const MCP_SERVER_NAME = 'ctxbus';

/** The OpenClaw plugin shipped with this package (package.json, manifest, bundled module). */
export function openclawPluginDir(): string {
  return fileURLToPath(new URL('../plugin', import.meta.url));
}

export type JsonObject = { [key: string]: unknown };

/** Runs one `openclaw` command; resolves with its stdout, rejects with a one-line reason. */
export type OpenClawRunner = (args: string[], input?: string) => Promise<string>;

export function openclawRunner(bin = 'openclaw', profile?: string): OpenClawRunner {
  const prefix = profile ? ['--profile', profile] : [];
  return (args, input) =>
    new Promise((resolve, reject) => {
      const child = execFile(
        bin,
        [...prefix, ...args],
        { timeout: 180_000, maxBuffer: 32 * 1024 * 1024, env: process.env },
        (error, stdout, stderr) => {
          if (!error) return resolve(stdout);
          const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
          const detail = `${stderr}`.trim().split('\n').filter(Boolean).slice(-3).join(' | ');
          reject(
            new CtxbusError(
              'unavailable',
              missing
                ? `cannot run ${bin}: not found (install OpenClaw, or pass --openclaw <path>)`
                : `openclaw ${args.slice(0, 2).join(' ')} failed: ${detail || error.message}`,
            ),
          );
        },
      );
      if (input !== undefined) child.stdin?.end(input);
    });
}

function objectAt(value: unknown, ...path: string[]): JsonObject | undefined {
  let current: unknown = value;
  for (const key of path) {
    if (current === null || typeof current !== 'object' || Array.isArray(current)) return undefined;
    current = (current as JsonObject)[key];
  }
  return current !== null && typeof current === 'object' && !Array.isArray(current)
    ? (current as JsonObject)
    : undefined;
}

/** Deep equality of JSON values (key order ignored). */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const keysA = Object.keys(a as JsonObject);
  const keysB = Object.keys(b as JsonObject);
  return (
    keysA.length === keysB.length &&
    keysA.every((key) => sameJson((a as JsonObject)[key], (b as JsonObject)[key]))
  );
}

/** Does `current` already hold everything `patch` sets (merge semantics: objects recurse)? */
function holds(current: unknown, patch: unknown): boolean {
  if (patch === null) return current === undefined;
  if (typeof patch !== 'object' || Array.isArray(patch)) return sameJson(current, patch);
  if (current === null || typeof current !== 'object' || Array.isArray(current)) return false;
  return Object.entries(patch as JsonObject).every(([key, value]) =>
    holds((current as JsonObject)[key], value),
  );
}

export interface InstallPlan {
  /** Link the plugin (`openclaw plugins install --link`). */
  linkPlugin: boolean;
  /** What `openclaw config patch` must merge in; null when the config already holds it. */
  patch: JsonObject | null;
}

export interface OpenClawInstallSettings {
  url: string;
  token: string;
  pluginDir: string;
}

/** The MCP server entry: the hub's Streamable HTTP endpoint with the runtime token. */
export function mcpServerEntry(url: string, token: string): JsonObject {
  return {
    url: `${url.replace(/\/+$/, '')}/mcp`,
    transport: 'streamable-http',
    headers: { Authorization: `Bearer ${token}` },
  };
}

/**
 * What install must change in a config (the parsed openclaw.json, `{}` when there is none): the
 * plugin linked and enabled with conversation access for its hooks, its hub URL and token (other
 * settings of the user's kept), and the hub's MCP server. Nothing, when all of it is there.
 */
export function planInstall(config: JsonObject, settings: OpenClawInstallSettings): InstallPlan {
  const paths = objectAt(config, 'plugins', 'load')?.paths;
  const linked = Array.isArray(paths) && paths.includes(settings.pluginDir);
  const patch: JsonObject = {
    plugins: {
      entries: {
        [PLUGIN_ID]: {
          enabled: true,
          hooks: { allowConversationAccess: true },
          config: { url: settings.url, token: settings.token },
        },
      },
    },
    mcp: { servers: { [MCP_SERVER_NAME]: mcpServerEntry(settings.url, settings.token) } },
  };
  return { linkPlugin: !linked, patch: holds(config, patch) ? null : patch };
}

export interface UninstallPlan {
  /** Remove the plugin's install record and load path (`openclaw plugins uninstall`). */
  unlinkPlugin: boolean;
  patch: JsonObject | null;
}

/** What uninstall must remove: exactly what install added, nothing else. */
export function planUninstall(config: JsonObject, pluginDir: string): UninstallPlan {
  const paths = objectAt(config, 'plugins', 'load')?.paths;
  const linked = Array.isArray(paths) && paths.includes(pluginDir);
  const entry = objectAt(config, 'plugins', 'entries', PLUGIN_ID);
  const server = objectAt(config, 'mcp', 'servers', MCP_SERVER_NAME);
  const patch: JsonObject = {
    ...(entry && { plugins: { entries: { [PLUGIN_ID]: null } } }),
    ...(server && { mcp: { servers: { [MCP_SERVER_NAME]: null } } }),
  };
  return { unlinkPlugin: linked, patch: Object.keys(patch).length > 0 ? patch : null };
}

export interface OpenClawInstallOptions {
  url: string;
  token: string;
  /** The config already read (readOpenClawConfig), to skip reading it again. */
  current?: { path: string; config: JsonObject };
  /** The `openclaw` command (default: `openclaw` on PATH). */
  openclawBin?: string;
  /** OpenClaw's --profile: another state directory (~/.openclaw-<profile>). */
  profile?: string;
  pluginDir?: string;
  /** Runs OpenClaw (default: `openclawRunner(openclawBin, profile)`). */
  run?: OpenClawRunner;
  /** One line per step, as it starts (OpenClaw's commands take seconds each). */
  progress?: (line: string) => void;
}

export interface OpenClawInstallResult {
  /** OpenClaw's config file. */
  configPath: string;
  /** What changed; empty when nothing had to. */
  changes: string[];
}

/** OpenClaw's config file (`openclaw config file`) and its content (`{}` when absent). */
export async function readOpenClawConfig(
  run: OpenClawRunner,
): Promise<{ path: string; config: JsonObject }> {
  const path = (await run(['config', 'file'])).trim().split('\n').at(-1)?.trim() ?? '';
  if (!path) throw new CtxbusError('unavailable', 'openclaw config file printed no path');
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return { path, config: {} }; // no config yet: OpenClaw creates it
  }
  try {
    const parsed: unknown = JSON5.parse(text);
    return { path, config: objectAt(parsed) ?? {} };
  } catch (error) {
    throw new CtxbusError(
      'validation_failed',
      `${path} is not valid JSON5 (${(error as Error).message}); fix it (openclaw config validate) and run again`,
    );
  }
}

/** Installs or updates the plugin and the MCP server in OpenClaw; idempotent. */
export async function installOpenClaw(
  options: OpenClawInstallOptions,
): Promise<OpenClawInstallResult> {
  const run = options.run ?? openclawRunner(options.openclawBin, options.profile);
  const pluginDir = options.pluginDir ?? openclawPluginDir();
  const progress = options.progress ?? (() => undefined);
  if (!options.current) progress('reading the OpenClaw config');
  const { path, config } = options.current ?? (await readOpenClawConfig(run));
  const plan = planInstall(config, { url: options.url, token: options.token, pluginDir });
  const changes: string[] = [];
  if (plan.linkPlugin) {
    progress(`linking the ctxbus plugin (${pluginDir})`);
    await run(['plugins', 'install', '--link', pluginDir, '--force', '--accept-capabilities']);
    changes.push(`plugin ${PLUGIN_ID} linked from ${pluginDir}`);
  }
  if (plan.patch) {
    progress('configuring the plugin and the ctxbus MCP server');
    await run(['config', 'patch', '--stdin'], JSON.stringify(plan.patch));
    changes.push(
      `plugins.entries.${PLUGIN_ID} (enabled, hooks.allowConversationAccess, config.url/token)`,
      `mcp.servers.${MCP_SERVER_NAME} (${options.url.replace(/\/+$/, '')}/mcp)`,
    );
  }
  return { configPath: path, changes };
}

/** Removes exactly what install added; idempotent. */
export async function uninstallOpenClaw(
  options: Omit<OpenClawInstallOptions, 'url' | 'token'>,
): Promise<OpenClawInstallResult> {
  const run = options.run ?? openclawRunner(options.openclawBin, options.profile);
  const pluginDir = options.pluginDir ?? openclawPluginDir();
  const progress = options.progress ?? (() => undefined);
  progress('reading the OpenClaw config');
  const { path, config } = await readOpenClawConfig(run);
  const plan = planUninstall(config, pluginDir);
  const changes: string[] = [];
  if (plan.unlinkPlugin) {
    progress('unlinking the ctxbus plugin');
    // --keep-files: the linked directory is ctxbus's own; never let OpenClaw delete it.
    await run(['plugins', 'uninstall', PLUGIN_ID, '--force', '--keep-files']);
    changes.push(`plugin ${PLUGIN_ID} unlinked`);
  }
  const after = plan.unlinkPlugin ? (await readOpenClawConfig(run)).config : config;
  const rest = planUninstall(after, pluginDir);
  if (rest.patch) {
    progress('removing the plugin config and the ctxbus MCP server');
    await run(['config', 'patch', '--stdin'], JSON.stringify(rest.patch));
    if (objectAt(after, 'plugins', 'entries', PLUGIN_ID))
      changes.push(`plugins.entries.${PLUGIN_ID} removed`);
    if (objectAt(after, 'mcp', 'servers', MCP_SERVER_NAME))
      changes.push(`mcp.servers.${MCP_SERVER_NAME} removed`);
  }
  return { configPath: path, changes };
}

/** The hub token the installed plugin uses for `url`, if any (so a re-run can keep it). */
export function installedToken(config: JsonObject, url: string): string | undefined {
  const settings = objectAt(config, 'plugins', 'entries', PLUGIN_ID, 'config');
  const same = (a: unknown, b: string) =>
    typeof a === 'string' && a.replace(/\/+$/, '') === b.replace(/\/+$/, '');
  return settings && same(settings.url, url) && typeof settings.token === 'string'
    ? settings.token
    : undefined;
}
