import { rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CtxbusError } from '@ctxbus/core/contract';
import type { HookEvent } from './hook-input.js';
import type { JsonObject } from './settings-file.js';
import { arrayAt, objectAt, readJsonFile, writeJsonFile } from './settings-file.js';

/** Our hook commands name this file, which is how install and uninstall find our entries. */
export const HOOK_SCRIPT = 'ctxbus-claude-hook.js';
export const MCP_SCRIPT = 'ctxbus-mcp.js';
export const MCP_SERVER_NAME = 'ctxbus';

export type InstallTarget = { kind: 'project'; dir: string } | { kind: 'user'; home?: string };

export interface InstallOptions {
  target: InstallTarget;
  url: string;
  token: string;
  /** Node executable for the hook and MCP commands (default: the one running now). */
  nodePath?: string;
  /** Directory holding the built hook and MCP scripts (default: this package's plugin/dist). */
  scriptsDir?: string;
}

export interface InstallResult {
  /** Files written (or, for uninstall, changed). */
  files: string[];
}

const HOOK_EVENTS: { event: HookEvent; matcher?: string; timeout: number }[] = [
  { event: 'SessionStart', matcher: 'startup|resume|clear|compact', timeout: 10 },
  { event: 'UserPromptSubmit', timeout: 10 },
  { event: 'PostToolUse', matcher: 'Edit|Write|MultiEdit|NotebookEdit', timeout: 5 },
  { event: 'Stop', timeout: 10 },
  { event: 'SessionEnd', timeout: 5 },
];

/** The plugin directory shipped with this package (hooks, MCP config, built scripts). */
export function pluginDir(): string {
  return fileURLToPath(new URL('../plugin', import.meta.url));
}

function files(target: InstallTarget): { settings: string; mcp: string } {
  if (target.kind === 'project') {
    const dir = resolve(target.dir);
    // settings.local.json is the per-user, uncommitted file: the token stays out of the repo.
    return { settings: join(dir, '.claude', 'settings.local.json'), mcp: join(dir, '.mcp.json') };
  }
  const home = target.home ?? homedir();
  return { settings: join(home, '.claude', 'settings.json'), mcp: join(home, '.claude.json') };
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
  const paths = files(options.target);
  const node = options.nodePath ?? process.execPath;
  const scripts = options.scriptsDir ?? join(pluginDir(), 'dist');

  const settings = readJsonFile(paths.settings);
  const mcpConfig = readJsonFile(paths.mcp);

  const env = objectAt(settings, 'env');
  env.CTXBUS_URL = options.url;
  env.CTXBUS_TOKEN = options.token;
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
  if (options.target.kind === 'project') {
    const enabled = arrayAt(settings, 'enabledMcpjsonServers');
    if (!enabled.includes(MCP_SERVER_NAME)) enabled.push(MCP_SERVER_NAME);
  }

  objectAt(mcpConfig, 'mcpServers')[MCP_SERVER_NAME] = {
    type: 'stdio',
    command: node,
    args: [join(scripts, MCP_SCRIPT)],
  };

  writeJsonFile(paths.settings, settings, true);
  writeJsonFile(paths.mcp, mcpConfig, options.target.kind === 'user');
  return { files: [paths.settings, paths.mcp] };
}

/** Writes the file, or deletes it when nothing is left and it is ours to delete. */
function writeOrRemove(path: string, value: JsonObject, secret: boolean, removable: boolean): void {
  if (removable && Object.keys(value).length === 0) rmSync(path, { force: true });
  else writeJsonFile(path, value, secret);
}

/** Removes exactly what installClaudeCode added (hooks, env, permission, MCP server). */
export function uninstallClaudeCode(target: InstallTarget): InstallResult {
  const paths = files(target);
  const changed: string[] = [];
  const settings = readJsonFile(paths.settings);
  let settingsChanged = removeHooks(settings);
  const env = settings.env;
  if (env !== null && typeof env === 'object' && !Array.isArray(env)) {
    for (const key of ['CTXBUS_URL', 'CTXBUS_TOKEN']) {
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
    writeOrRemove(paths.settings, settings, true, target.kind === 'project');
    changed.push(paths.settings);
  }
  const mcpConfig = readJsonFile(paths.mcp);
  const servers = mcpConfig.mcpServers;
  if (
    servers !== null &&
    typeof servers === 'object' &&
    !Array.isArray(servers) &&
    MCP_SERVER_NAME in servers
  ) {
    delete (servers as JsonObject)[MCP_SERVER_NAME];
    if (Object.keys(servers as JsonObject).length === 0) delete mcpConfig.mcpServers;
    writeOrRemove(paths.mcp, mcpConfig, target.kind === 'user', target.kind === 'project');
    changed.push(paths.mcp);
  }
  return { files: changed };
}
