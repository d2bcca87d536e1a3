import { existsSync, readdirSync, realpathSync, rmdirSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CtxbusError } from '@ctxbus/core/contract';
import { excludeFromGit, unexcludeFromGit } from './git-exclude.js';
import type { HookEvent } from './hook-input.js';
import { LIVE_ENV } from './live-start.js';
import type { JsonObject } from './settings-file.js';
import { arrayAt, objectAt, readJsonFile, writeJsonFile } from './settings-file.js';

/** Our hook commands name this file, which is how install and uninstall find our entries. */
export const HOOK_SCRIPT = 'ctxbus-claude-hook.js';
export const MCP_SCRIPT = 'ctxbus-mcp.js';
export const MCP_SERVER_NAME = 'ctxbus';

/** `home` is where Claude Code keeps its state (`~/.claude.json`); the user's by default. */
export type InstallTarget =
  | { kind: 'project'; dir: string; home?: string }
  | { kind: 'user'; home?: string };

export interface InstallOptions {
  target: InstallTarget;
  url: string;
  token: string;
  /** Node executable for the hook and MCP commands (default: the one running now). */
  nodePath?: string;
  /** Directory holding the built hook and MCP scripts (default: this package's plugin/dist). */
  scriptsDir?: string;
  /**
   * Live push (off by default): a blocking item, and an approval request for a person here,
   * reach a running session through its inbox socket (between tool calls, or as a new message
   * when idle). Installing without it turns it off again.
   */
  live?: boolean;
}

export interface InstallResult {
  /** Files written (or, for uninstall, changed). */
  files: string[];
}

const HOOK_EVENTS: { event: HookEvent; matcher?: string; timeout: number }[] = [
  { event: 'SessionStart', matcher: 'startup|resume|clear|compact', timeout: 10 },
  { event: 'UserPromptSubmit', timeout: 10 },
  // Every tool: its result is the turn context's tool snippet (seed 002); edits are also noted.
  { event: 'PostToolUse', timeout: 5 },
  { event: 'Stop', timeout: 10 },
  { event: 'SessionEnd', timeout: 5 },
];

/** The plugin directory shipped with this package (hooks, MCP config, built scripts). */
export function pluginDir(): string {
  return fileURLToPath(new URL('../plugin', import.meta.url));
}

interface Paths {
  /** Hooks, env (the token), permission. */
  settings: string;
  /** Claude Code's own state file, where local- and user-scope MCP servers live. */
  state: string;
  /** The project's key in the state file (local scope); null for the user scope. */
  project: string | null;
  /** The project's committed `.mcp.json`, where earlier versions put the MCP server. */
  legacyMcp: string | null;
}

/**
 * Where each piece goes, as `claude mcp add --scope` would put it. Project: the hooks, env and
 * token in `.claude/settings.local.json` (personal, kept out of git), the MCP server in local
 * scope (`~/.claude.json`, under the project): both hold paths of this machine, and nothing
 * goes in files a project commits. User: `~/.claude/settings.json` and `~/.claude.json`.
 */
function paths(target: InstallTarget): Paths {
  const home = target.home ?? homedir();
  const state = join(home, '.claude.json');
  if (target.kind === 'project') {
    const dir = resolve(target.dir);
    // Claude Code keys projects by their real path (a symlinked /tmp is /private/tmp).
    const project = existsSync(dir) ? realpathSync(dir) : dir;
    return {
      settings: join(dir, '.claude', 'settings.local.json'),
      state,
      project,
      legacyMcp: join(dir, '.mcp.json'),
    };
  }
  return {
    settings: join(home, '.claude', 'settings.json'),
    state,
    project: null,
    legacyMcp: null,
  };
}

/** The `mcpServers` object of the target's scope in Claude Code's state. */
function mcpServersIn(state: JsonObject, project: string | null): JsonObject {
  const scope = project === null ? state : objectAt(objectAt(state, 'projects'), project);
  return objectAt(scope, 'mcpServers');
}

function isOurServer(server: unknown): boolean {
  return JSON.stringify(server ?? null).includes(MCP_SCRIPT);
}

/**
 * Takes our server out of a project's `.mcp.json` (where earlier versions wrote it, with
 * this machine's paths, in a file projects commit), deleting the file when nothing is left.
 */
function removeLegacyMcp(path: string | null): boolean {
  if (path === null || !existsSync(path)) return false;
  const config = readJsonFile(path);
  const servers = config.mcpServers;
  if (servers === null || typeof servers !== 'object' || Array.isArray(servers)) return false;
  if (!isOurServer((servers as JsonObject)[MCP_SERVER_NAME])) return false;
  delete (servers as JsonObject)[MCP_SERVER_NAME];
  if (Object.keys(servers as JsonObject).length === 0) delete config.mcpServers;
  writeOrRemove(path, config, false, true);
  return true;
}

function quote(value: string): string {
  return `"${value.replace(/(["\\$`])/g, '\\$1')}"`;
}

function isOurs(entry: unknown): boolean {
  return JSON.stringify(entry).includes(HOOK_SCRIPT);
}

/** Removes our hook groups from every event, keeping everyone else's; drops emptied events. */
function removeHooks(settings: JsonObject): boolean {
  const hooks = settings.hooks;
  if (hooks === null || typeof hooks !== 'object' || Array.isArray(hooks)) return false;
  let changed = false;
  for (const [event, groups] of Object.entries(hooks as JsonObject)) {
    if (!Array.isArray(groups)) continue;
    const kept = groups.filter((group) => !isOurs(group));
    if (kept.length !== groups.length) changed = true;
    if (kept.length === 0) delete (hooks as JsonObject)[event];
    else (hooks as JsonObject)[event] = kept;
  }
  if (Object.keys(hooks as JsonObject).length === 0) delete settings.hooks;
  return changed;
}

function removeFromList(parent: JsonObject, key: string, value: string): boolean {
  const list = parent[key];
  if (!Array.isArray(list) || !list.includes(value)) return false;
  const kept = list.filter((entry) => entry !== value);
  if (kept.length === 0) delete parent[key];
  else parent[key] = kept;
  return true;
}

/**
 * Configures Claude Code to use ctxbus: hooks that inject the shared context and record
 * decisions, the `ctxbus` MCP server, its tools allowed, and the hub's URL and token in the
 * settings' `env` (inherited by hooks and MCP server). Merges into existing files, leaving
 * every other setting alone; running it again changes nothing.
 */
export function installClaudeCode(options: InstallOptions): InstallResult {
  if (!/^https?:\/\//.test(options.url)) {
    throw new CtxbusError(
      'validation_failed',
      `--url must be an http(s) URL (got "${options.url}")`,
    );
  }
  if (!options.token)
    throw new CtxbusError('validation_failed', 'a token is needed (--token or CTXBUS_TOKEN)');
  const where = paths(options.target);
  const node = options.nodePath ?? process.execPath;
  const scripts = options.scriptsDir ?? join(pluginDir(), 'dist');

  const settings = readJsonFile(where.settings);
  const state = readJsonFile(where.state);

  const env = objectAt(settings, 'env');
  env.CTXBUS_URL = options.url;
  env.CTXBUS_TOKEN = options.token;
  if (options.live) env[LIVE_ENV] = '1';
  else delete env[LIVE_ENV];
  removeHooks(settings);
  const hooks = objectAt(settings, 'hooks');
  for (const { event, matcher, timeout } of HOOK_EVENTS) {
    const groups = arrayAt(hooks, event);
    groups.push({
      ...(matcher && { matcher }),
      hooks: [
        {
          type: 'command',
          command: `${quote(node)} ${quote(join(scripts, HOOK_SCRIPT))}`,
          timeout,
        },
      ],
    });
  }
  const allow = arrayAt(objectAt(settings, 'permissions'), 'allow');
  if (!allow.includes(`mcp__${MCP_SERVER_NAME}`)) allow.push(`mcp__${MCP_SERVER_NAME}`);
  // Only servers from .mcp.json wait for approval; ours is in local scope now.
  removeFromList(settings, 'enabledMcpjsonServers', MCP_SERVER_NAME);

  // Its own env too, as `claude mcp add -e` stores it: `claude mcp list` starts servers
  // without the settings' env. The state file is the user's own (0600), never committed.
  mcpServersIn(state, where.project)[MCP_SERVER_NAME] = {
    type: 'stdio',
    command: node,
    args: [join(scripts, MCP_SCRIPT)],
    env: { CTXBUS_URL: options.url, CTXBUS_TOKEN: options.token },
  };

  const written = [where.settings, where.state];
  writeJsonFile(where.settings, settings, true);
  writeJsonFile(where.state, state, true);
  if (removeLegacyMcp(where.legacyMcp) && where.legacyMcp) written.push(where.legacyMcp);
  if (options.target.kind === 'project') {
    const exclude = excludeFromGit(where.settings);
    if (exclude) written.push(exclude);
  }
  return { files: written };
}

/** Writes the file, or deletes it when nothing is left and it is ours to delete. */
function writeOrRemove(path: string, value: JsonObject, secret: boolean, removable: boolean): void {
  if (removable && Object.keys(value).length === 0) rmSync(path, { force: true });
  else writeJsonFile(path, value, secret);
}

/**
 * A project entry left empty in ~/.claude.json was ours (Claude Code's own entries hold its
 * settings for the project): it goes, and `projects` with it when that is empty too.
 */
function dropEmptyProject(state: JsonObject, project: string | null): void {
  const projects = state.projects as JsonObject | undefined;
  if (project === null || !projects) return;
  const entry = projects[project];
  if (entry && typeof entry === 'object' && Object.keys(entry).length === 0) {
    delete projects[project];
  }
  if (Object.keys(projects).length === 0) delete state.projects;
}

/** Removes exactly what installClaudeCode added (hooks, env, permission, MCP server). */
export function uninstallClaudeCode(target: InstallTarget): InstallResult {
  const where = paths(target);
  const changed: string[] = [];
  const settings = readJsonFile(where.settings);
  let settingsChanged = removeHooks(settings);
  const env = settings.env;
  if (env !== null && typeof env === 'object' && !Array.isArray(env)) {
    for (const key of ['CTXBUS_URL', 'CTXBUS_TOKEN', LIVE_ENV]) {
      if (key in (env as JsonObject)) {
        delete (env as JsonObject)[key];
        settingsChanged = true;
      }
    }
    if (Object.keys(env as JsonObject).length === 0) delete settings.env;
  }
  const permissions = settings.permissions;
  if (permissions !== null && typeof permissions === 'object' && !Array.isArray(permissions)) {
    settingsChanged =
      removeFromList(permissions as JsonObject, 'allow', `mcp__${MCP_SERVER_NAME}`) ||
      settingsChanged;
    if (Object.keys(permissions as JsonObject).length === 0) delete settings.permissions;
  }
  settingsChanged =
    removeFromList(settings, 'enabledMcpjsonServers', MCP_SERVER_NAME) || settingsChanged;
  if (settingsChanged) {
    writeOrRemove(where.settings, settings, true, target.kind === 'project');
    changed.push(where.settings);
  }
  if (existsSync(where.state)) {
    const state = readJsonFile(where.state);
    const scope =
      where.project === null
        ? state
        : ((state.projects as JsonObject | undefined)?.[where.project] as JsonObject | undefined);
    const servers = scope?.mcpServers;
    if (
      scope &&
      servers !== null &&
      typeof servers === 'object' &&
      !Array.isArray(servers) &&
      MCP_SERVER_NAME in servers
    ) {
      delete (servers as JsonObject)[MCP_SERVER_NAME];
      if (Object.keys(servers as JsonObject).length === 0) delete scope.mcpServers;
      dropEmptyProject(state, where.project);
      writeOrRemove(where.state, state, true, Object.keys(state).length === 0);
      changed.push(where.state);
    }
  }
  if (removeLegacyMcp(where.legacyMcp) && where.legacyMcp) changed.push(where.legacyMcp);
  if (target.kind === 'project') {
    const exclude = unexcludeFromGit(where.settings);
    if (exclude) changed.push(exclude);
    // A .claude directory left empty was ours (install made it, or emptied it now).
    const dir = dirname(where.settings);
    if (existsSync(dir) && readdirSync(dir).length === 0) rmdirSync(dir);
  }
  return { files: changed };
}

/** What `ctxbus doctor` needs to know of an install, read from Claude Code's files. */
export interface ClaudeCodeInstall {
  /** The settings file that holds our hooks (null: not installed in this scope). */
  settings: string | null;
  url: string | null;
  token: string | null;
  /** The Node executable and hook script our hook commands name. */
  nodePath: string | null;
  hookScript: string | null;
  /** Our MCP server is registered in Claude Code's state for this scope. */
  mcpServer: boolean;
  /** Live push is on (install --live). */
  live: boolean;
}

/** Our hook command, as installClaudeCode writes it: `"<node>" "<scripts>/<HOOK_SCRIPT>"`. */
function ourHookCommand(settings: JsonObject): string | null {
  const groups = Object.values((settings.hooks ?? {}) as JsonObject).flat();
  for (const group of groups) {
    const entries = ((group ?? {}) as JsonObject).hooks;
    if (!Array.isArray(entries)) continue;
    for (const entry of entries) {
      const command = ((entry ?? {}) as JsonObject).command;
      if (typeof command === 'string' && command.includes(HOOK_SCRIPT)) return command;
    }
  }
  return null;
}

/** Reads what installClaudeCode wrote for `target`, without changing anything. */
export function inspectClaudeCode(target: InstallTarget): ClaudeCodeInstall {
  const where = paths(target);
  const settings = readJsonFile(where.settings);
  const command = ourHookCommand(settings);
  const parts = command ? /^"((?:[^"\\]|\\.)*)" "((?:[^"\\]|\\.)*)"$/.exec(command) : null;
  const unquote = (value: string | undefined) => value?.replace(/\\(["\\$`])/g, '$1') ?? null;
  const env = (settings.env ?? {}) as JsonObject;
  const state = existsSync(where.state) ? readJsonFile(where.state) : {};
  const scope =
    where.project === null
      ? state
      : ((state.projects as JsonObject | undefined)?.[where.project] as JsonObject | undefined);
  const servers = (scope?.mcpServers ?? {}) as JsonObject;
  return {
    settings: command ? where.settings : null,
    url: typeof env.CTXBUS_URL === 'string' ? env.CTXBUS_URL : null,
    token: typeof env.CTXBUS_TOKEN === 'string' ? env.CTXBUS_TOKEN : null,
    nodePath: unquote(parts?.[1]),
    hookScript: unquote(parts?.[2]),
    mcpServer: isOurServer(servers[MCP_SERVER_NAME]),
    live: env[LIVE_ENV] === '1',
  };
}

/** The files install and uninstall may change for `target` (some may not exist yet). */
export function installFiles(target: InstallTarget): string[] {
  const where = paths(target);
  return [where.settings, where.state, ...(where.legacyMcp ? [where.legacyMcp] : [])];
}
