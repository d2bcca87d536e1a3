import { type ExecFileException, execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { CtxbusError } from '@ctxbus/core/contract';
import JSON5 from 'json5';
import { z } from 'zod';
import { knownConfigPath } from './config-path.js';
import { CONTEXT_ENGINE_ID } from './context-engine.js';
import { PLUGIN_ID } from './plugin-config.js';

// `ctxbus install openclaw`: everything goes through OpenClaw's own commands (`plugins
// install`, `config patch`, `plugins uninstall`), so OpenClaw validates and writes its config
// the way it always does; ctxbus only reads the file to change nothing that is already right.
// From a clone the plugin folder is linked (rebuilding updates it); from the published package
// the packed plugin (an npm tarball) is installed as OpenClaw installs any npm plugin.
// Each start of OpenClaw costs seconds, so none is made whose answer is already known: the
// config file is read where OpenClaw's documented rules put it (config-path.ts), and OpenClaw
// is asked which ctxbus plugin it has only when its config shows one.

/** The MCP server name ctxbus registers in OpenClaw (`mcp.servers.ctxbus`). */
export const MCP_SERVER_NAME = 'ctxbus';

/** The OpenClaw plugin shipped with this package (package.json, manifest, bundled module). */
export function openclawPluginDir(): string {
  return fileURLToPath(new URL('../plugin', import.meta.url));
}

export type JsonObject = { [key: string]: unknown };

/** Runs one `openclaw` command; resolves with its stdout, rejects with a one-line reason. */
export interface OpenClawRunner {
  (args: string[], input?: string): Promise<string>;
  /**
   * The environment and --profile OpenClaw runs with, which say where its config is; without
   * them, OpenClaw is asked (`openclaw config file`).
   */
  readonly where?: { env: NodeJS.ProcessEnv; profile?: string | undefined };
}

/** The lines of OpenClaw's stderr that say what went wrong (its own `openclaw:` or error lines first). */
function failureDetail(stderr: string): string {
  const lines = stderr
    .trim()
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  const telling = lines.filter((line) => /^(openclaw:|error|Error)/i.test(line));
  return (telling.length > 0 ? telling : lines).slice(-3).join(' | ');
}

/**
 * How long one `openclaw` command may run. `plugins install` takes 10-25 s of CPU; on a loaded
 * machine that is minutes of wall time, so the bound only catches a command that hangs.
 */
export const OPENCLAW_COMMAND_TIMEOUT_MS = 600_000;

/** The most output of one `openclaw` command kept (its JSON answers are far smaller). */
const OUTPUT_LIMIT_BYTES = 32 * 1024 * 1024;

/** Why an `openclaw` command failed, in one line: its exit code or the signal, and its stderr. */
function commandFailure(
  args: string[],
  error: ExecFileException,
  stderr: string,
  timeoutMs: number,
) {
  const command = `openclaw ${args.slice(0, 2).join(' ')}`;
  if ((error.code as unknown) === 'ERR_CHILD_PROCESS_STDIO_MAXBUFFER') {
    return `${command} printed more than ${OUTPUT_LIMIT_BYTES / 1024 / 1024} MiB and was stopped`;
  }
  if (error.killed) {
    return `${command} did not finish in ${timeoutMs / 1000} s and was stopped (is OpenClaw waiting on the network or a lock?)`;
  }
  const how = error.signal ? `was killed by ${error.signal}` : `failed (exit ${error.code})`;
  const detail = failureDetail(stderr);
  return detail ? `${command} ${how}: ${detail}` : `${command} ${how}`;
}

export function openclawRunner(
  bin = 'openclaw',
  profile?: string,
  node?: string,
  timeoutMs = OPENCLAW_COMMAND_TIMEOUT_MS,
): OpenClawRunner {
  const prefix = profile ? ['--profile', profile] : [];
  const [file, head] = node ? [node, [bin]] : [bin, []];
  const run = (args: string[], input?: string) =>
    new Promise<string>((resolve, reject) => {
      const child = execFile(
        file,
        [...head, ...prefix, ...args],
        { timeout: timeoutMs, maxBuffer: OUTPUT_LIMIT_BYTES, env: process.env },
        (error, stdout, stderr) => {
          if (!error) return resolve(stdout);
          const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
          reject(
            missing
              ? new CtxbusError(
                  'not_found',
                  `cannot run ${file}: not found (install OpenClaw, or pass --openclaw <path>)`,
                )
              : // OpenClaw itself failed: a failure (exit 1), not an unreachable hub (6).
                new CtxbusError('internal', commandFailure(args, error, `${stderr}`, timeoutMs), {
                  retryable: false,
                }),
          );
        },
      );
      if (input !== undefined) child.stdin?.end(input);
      else child.stdin?.end();
    });
  return Object.assign(run, { where: { env: process.env, profile } });
}

/** Where the ctxbus plugin comes from: a folder linked in place, or a packed npm tarball. */
export type OpenClawPluginSource =
  | { kind: 'link'; dir: string }
  | { kind: 'package'; tarball: string; version: string };

/** The ctxbus plugin as OpenClaw lists it (`openclaw plugins list --json`). */
export interface InstalledPlugin {
  version: string | null;
  rootDir: string | null;
  /** How OpenClaw installed it (`npm` for a package or tarball), when it recorded that. */
  installSource: string | null;
}

const pluginListSchema = z.object({
  plugins: z.array(
    z.looseObject({
      id: z.string(),
      version: z.string().optional(),
      rootDir: z.string().optional(),
      trust: z.looseObject({ installSource: z.string().optional() }).optional(),
    }),
  ),
});

/**
 * The ctxbus plugin OpenClaw knows of, or null (`openclaw plugins list --json`). For deciding
 * whether to install it, use pluginToInstallOver (it asks only when the answer matters).
 */
export async function installedPlugin(run: OpenClawRunner): Promise<InstalledPlugin | null> {
  const output = await run(['plugins', 'list', '--json']);
  const start = output.indexOf('{');
  let parsed: unknown;
  try {
    parsed = JSON.parse(output.slice(start));
  } catch {
    throw new CtxbusError('internal', 'openclaw plugins list --json printed no JSON', {
      retryable: false,
    });
  }
  const list = pluginListSchema.safeParse(parsed);
  if (!list.success) {
    throw new CtxbusError('internal', 'openclaw plugins list --json: unexpected output', {
      retryable: false,
    });
  }
  const plugin = list.data.plugins.find((entry) => entry.id === PLUGIN_ID);
  return plugin
    ? {
        version: plugin.version ?? null,
        rootDir: plugin.rootDir ?? null,
        installSource: plugin.trust?.installSource ?? null,
      }
    : null;
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
  /** Link the plugin folder (`openclaw plugins install --link`). */
  linkPlugin: boolean;
  /** Install the packed plugin (`openclaw plugins install npm-pack:<tarball>`). */
  installPackage: boolean;
  /** What `openclaw config patch` must merge in; null when the config already holds it. */
  patch: JsonObject | null;
}

export interface OpenClawInstallSettings {
  url: string;
  token: string;
  /** A folder to link (the clone's plugin/); `plugin` wins when both are given. */
  pluginDir?: string;
  plugin?: OpenClawPluginSource;
  /** The ctxbus plugin OpenClaw already has (installedPlugin), for a package source. */
  installed?: InstalledPlugin | null;
  /** Live push on (`--live`); without it an earlier install's live push is turned off. */
  live?: boolean;
}

/** The plugin source of install and uninstall options: `plugin`, else `pluginDir` linked. */
export function pluginSource(options: {
  plugin?: OpenClawPluginSource;
  pluginDir?: string;
}): OpenClawPluginSource {
  return options.plugin ?? { kind: 'link', dir: options.pluginDir ?? openclawPluginDir() };
}

/** The MCP server entry: the hub's Streamable HTTP endpoint with the runtime token. */
export function mcpServerEntry(url: string, token: string): JsonObject {
  return {
    url: `${url.replace(/\/+$/, '')}/mcp`,
    transport: 'streamable-http',
    headers: { Authorization: `Bearer ${token}` },
  };
}

function isLinked(config: JsonObject, dir: string): boolean {
  const paths = objectAt(config, 'plugins', 'load')?.paths;
  return Array.isArray(paths) && paths.includes(dir);
}

/**
 * The ctxbus plugin OpenClaw has, for deciding whether to install the package: asked only when
 * the config has `plugins.entries.ctxbus`, which OpenClaw's install always writes. Without it,
 * null: the package is installed either way (with --force, so over a copy whose entry was
 * removed by hand too, giving the same result), and one start of OpenClaw is saved.
 */
export async function pluginToInstallOver(
  run: OpenClawRunner,
  config: JsonObject,
): Promise<InstalledPlugin | null> {
  return objectAt(config, 'plugins', 'entries', PLUGIN_ID) ? installedPlugin(run) : null;
}

/** A package install of this version that OpenClaw recorded as an npm install. */
function holdsPackage(installed: InstalledPlugin | null | undefined, version: string): boolean {
  return installed?.installSource === 'npm' && installed.version === version;
}

/**
 * What install must change in a config (the parsed openclaw.json, `{}` when there is none): the
 * plugin linked (or its package installed) and enabled with conversation access for its hooks,
 * its hub URL and token (other settings of the user's kept), and the hub's MCP server.
 * Nothing, when all of it is there.
 */
export function planInstall(config: JsonObject, settings: OpenClawInstallSettings): InstallPlan {
  const source = pluginSource(settings);
  const engine = objectAt(config, 'plugins', 'slots')?.contextEngine;
  const patch: JsonObject = {
    plugins: {
      // The ctxbus context engine keeps gateway turns a prefix of the next (context-engine.ts);
      // a context engine of another plugin the user chose stays selected.
      ...(selectableEngine(engine) && { slots: { contextEngine: CONTEXT_ENGINE_ID } }),
      entries: {
        [PLUGIN_ID]: {
          enabled: true,
          hooks: { allowConversationAccess: true },
          // livePush null: a merge patch removes it (install without --live turns it off).
          config: {
            url: settings.url,
            token: settings.token,
            livePush: settings.live ? true : null,
          },
        },
      },
    },
    mcp: { servers: { [MCP_SERVER_NAME]: mcpServerEntry(settings.url, settings.token) } },
  };
  return {
    linkPlugin: source.kind === 'link' && !isLinked(config, source.dir),
    installPackage: source.kind === 'package' && !holdsPackage(settings.installed, source.version),
    patch: holds(config, patch) ? null : patch,
  };
}

/** Whether install selects the ctxbus context engine: none or OpenClaw's default is selected. */
function selectableEngine(engine: unknown): boolean {
  return (
    engine === undefined || engine === null || engine === 'legacy' || engine === CONTEXT_ENGINE_ID
  );
}

/** The context engine another plugin provides, which install leaves selected; else null. */
export function otherContextEngine(config: JsonObject): string | null {
  const engine = objectAt(config, 'plugins', 'slots')?.contextEngine;
  return selectableEngine(engine) ? null : String(engine);
}

export interface UninstallPlan {
  /** Remove the plugin's install record and load path (`openclaw plugins uninstall`). */
  unlinkPlugin: boolean;
  /** Remove the installed package (`openclaw plugins uninstall`, its files too). */
  removePackage: boolean;
  patch: JsonObject | null;
}

/** What uninstall must remove: exactly what install added, nothing else. */
export function planUninstall(
  config: JsonObject,
  source: OpenClawPluginSource | string,
  installed?: InstalledPlugin | null,
): UninstallPlan {
  const plugin: OpenClawPluginSource =
    typeof source === 'string' ? { kind: 'link', dir: source } : source;
  const entry = objectAt(config, 'plugins', 'entries', PLUGIN_ID);
  const server = objectAt(config, 'mcp', 'servers', MCP_SERVER_NAME);
  const engine = objectAt(config, 'plugins', 'slots')?.contextEngine === CONTEXT_ENGINE_ID;
  const patch: JsonObject = {
    ...((entry || engine) && {
      plugins: {
        // Back to OpenClaw's default engine (a merge patch's null removes the key).
        ...(engine && { slots: { contextEngine: null } }),
        ...(entry && { entries: { [PLUGIN_ID]: null } }),
      },
    }),
    ...(server && { mcp: { servers: { [MCP_SERVER_NAME]: null } } }),
  };
  return {
    unlinkPlugin: plugin.kind === 'link' && isLinked(config, plugin.dir),
    removePackage: plugin.kind === 'package' && installed?.installSource === 'npm',
    patch: Object.keys(patch).length > 0 ? patch : null,
  };
}

export interface OpenClawInstallOptions {
  url: string;
  token: string;
  /** The config already read (readOpenClawConfig), to skip reading it again. */
  current?: { path: string; config: JsonObject };
  /** The ctxbus plugin OpenClaw has, already asked (pluginToInstallOver), to skip asking again. */
  installed?: InstalledPlugin | null;
  /** The `openclaw` command (default: `openclaw` on PATH). */
  openclawBin?: string;
  /** OpenClaw's --profile: another state directory (~/.openclaw-<profile>). */
  profile?: string;
  /** A plugin folder to link (default: this package's plugin/); `plugin` wins. */
  pluginDir?: string;
  /** Where the plugin comes from: a folder to link, or a packed tarball to install. */
  plugin?: OpenClawPluginSource;
  /** Runs OpenClaw (default: `openclawRunner(openclawBin, profile)`). */
  run?: OpenClawRunner;
  /** One line per step, as it starts (OpenClaw's commands take seconds each). */
  progress?: (line: string) => void;
  /** Live push into active sessions (plugin config `livePush`); off when not given. */
  live?: boolean;
}

export interface OpenClawInstallResult {
  /** OpenClaw's config file. */
  configPath: string;
  /** What changed; empty when nothing had to. */
  changes: string[];
}

/**
 * OpenClaw's config file and its content (`{}` when absent): where OpenClaw's documented rules
 * put it for the runner's environment (knownConfigPath), else where `openclaw config file` says.
 */
export async function readOpenClawConfig(
  run: OpenClawRunner,
): Promise<{ path: string; config: JsonObject }> {
  const known = run.where ? knownConfigPath(run.where.env, run.where.profile) : null;
  return readConfigAt(known ?? (await askConfigPath(run)));
}

/** The config file OpenClaw uses (`openclaw config file`). */
async function askConfigPath(run: OpenClawRunner): Promise<string> {
  const path = (await run(['config', 'file'])).trim().split('\n').at(-1)?.trim() ?? '';
  if (!path) throw new CtxbusError('unavailable', 'openclaw config file printed no path');
  return path;
}

/** The config file at `path`, parsed as OpenClaw does (JSON5); `{}` when there is none yet. */
function readConfigAt(path: string): { path: string; config: JsonObject } {
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
  const plugin = pluginSource(options);
  const progress = options.progress ?? (() => undefined);
  if (!options.current) progress('reading the OpenClaw config');
  const { path, config } = options.current ?? (await readOpenClawConfig(run));
  const installed =
    plugin.kind !== 'package'
      ? null
      : options.installed !== undefined
        ? options.installed
        : await pluginToInstallOver(run, config);
  const plan = planInstall(config, {
    url: options.url,
    token: options.token,
    plugin,
    installed,
    ...(options.live && { live: true }),
  });
  const other = otherContextEngine(config);
  if (other)
    progress(
      `plugins.slots.contextEngine is ${other}, another plugin's: left selected, so turns through the gateway do not keep the provider's prompt cache (see the adapter's README, Prompt cache)`,
    );
  const changes: string[] = [];
  if (plan.linkPlugin && plugin.kind === 'link') {
    progress(`linking the ctxbus plugin (${plugin.dir})`);
    await run(['plugins', 'install', '--link', plugin.dir, '--force', '--accept-capabilities']);
    changes.push(`plugin ${PLUGIN_ID} linked from ${plugin.dir}`);
  }
  if (plan.installPackage && plugin.kind === 'package') {
    progress(`installing the ctxbus plugin ${plugin.version} (${plugin.tarball})`);
    // --force: confirms a source outside ClawHub (OpenClaw asks otherwise) and replaces an
    // older ctxbus plugin.
    await run([
      'plugins',
      'install',
      `npm-pack:${plugin.tarball}`,
      '--force',
      '--accept-capabilities',
    ]);
    changes.push(`plugin ${PLUGIN_ID} ${plugin.version} installed from ${plugin.tarball}`);
  }
  if (plan.patch) {
    progress('configuring the plugin and the ctxbus MCP server');
    await run(['config', 'patch', '--stdin'], JSON.stringify(plan.patch));
    changes.push(
      `plugins.entries.${PLUGIN_ID} (enabled, hooks.allowConversationAccess, config.url/token, live push ${options.live ? 'on' : 'off'})`,
      ...(objectAt(plan.patch, 'plugins', 'slots')
        ? [`plugins.slots.contextEngine ${CONTEXT_ENGINE_ID} (gateway turns keep the prompt cache)`]
        : []),
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
  const plugin = pluginSource(options);
  const progress = options.progress ?? (() => undefined);
  progress('reading the OpenClaw config');
  const { path, config } = await readOpenClawConfig(run);
  const installed = plugin.kind === 'package' ? await installedPlugin(run) : null;
  const plan = planUninstall(config, plugin, installed);
  const changes: string[] = [];
  if (plan.unlinkPlugin) {
    progress('unlinking the ctxbus plugin');
    // --keep-files: the linked directory is ctxbus's own; never let OpenClaw delete it.
    await run(['plugins', 'uninstall', PLUGIN_ID, '--force', '--keep-files']);
    changes.push(`plugin ${PLUGIN_ID} unlinked`);
  }
  if (plan.removePackage) {
    progress('removing the ctxbus plugin');
    // Its files are OpenClaw's copy of the package: they go with it.
    await run(['plugins', 'uninstall', PLUGIN_ID, '--force']);
    changes.push(`plugin ${PLUGIN_ID} removed`);
  }
  const removed = plan.unlinkPlugin || plan.removePackage;
  const after = removed ? readConfigAt(path).config : config;
  const rest = planUninstall(after, plugin, null);
  if (rest.patch) {
    progress('removing the plugin config and the ctxbus MCP server');
    await run(['config', 'patch', '--stdin'], JSON.stringify(rest.patch));
    if (objectAt(after, 'plugins', 'entries', PLUGIN_ID))
      changes.push(`plugins.entries.${PLUGIN_ID} removed`);
    if (objectAt(rest.patch, 'plugins', 'slots'))
      changes.push('plugins.slots.contextEngine back to legacy');
    if (objectAt(after, 'mcp', 'servers', MCP_SERVER_NAME))
      changes.push(`mcp.servers.${MCP_SERVER_NAME} removed`);
  }
  return { configPath: path, changes };
}

/**
 * Where the installed plugin points (its hub URL and token), read from OpenClaw's config file
 * at `path` without starting OpenClaw; null when the plugin has no settings there (or there is
 * no such file).
 */
export function installedHub(path: string): { url: string; token: string } | null {
  const settings = objectAt(readConfigAt(path).config, 'plugins', 'entries', PLUGIN_ID, 'config');
  return settings && typeof settings.url === 'string' && typeof settings.token === 'string'
    ? { url: settings.url, token: settings.token }
    : null;
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
