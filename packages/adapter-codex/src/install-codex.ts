import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeFileAtomic } from '@ctxbus/client/files';
import { CtxbusError } from '@ctxbus/core/contract';
import type { CodexAppServer, CodexRunner } from './codex-commands.js';
import { checkCodex, runOrFail } from './codex-commands.js';
import type { CodexHookEvent } from './hook-input.js';
import { PERMISSION_TOOL } from './permission.js';

// `ctxbus install codex`: the hooks in Codex's user hooks file ($CODEX_HOME/hooks.json), the
// MCP server through `codex mcp add`, and the hooks trusted through Codex's app-server (the
// calls its /hooks review makes). Everything goes in Codex's user home, never in a project's
// .codex/ (which projects commit): the commands name this machine's Node and scripts and the
// hub's URL; the token stays in ctxbus's own credentials (see hub-target.ts).

/** Our hook and MCP commands name these files: that is how install and uninstall find ours. */
export const HOOK_SCRIPT = 'ctxbus-codex-hook.js';
export const MCP_SCRIPT = 'ctxbus-codex-mcp.js';
export const MCP_SERVER_NAME = 'ctxbus';

const HOOK_EVENTS: { event: CodexHookEvent; matcher?: string; timeout: number }[] = [
  { event: 'SessionStart', matcher: 'startup|resume|clear', timeout: 10 },
  { event: 'UserPromptSubmit', timeout: 10 },
  { event: 'PostToolUse', timeout: 5 },
  { event: 'Stop', timeout: 10 },
];

export interface CodexInstallOptions {
  url: string;
  /** Codex's commands (`codexRunner`), with the Codex home they act on. */
  run: CodexRunner;
  /** Codex's home (default: $CODEX_HOME, else ~/.codex); the runner's must be the same. */
  codexHome?: string;
  /** Node executable for the hook and MCP commands (default: the one running now). */
  nodePath?: string;
  /** Directory holding the built hook and MCP scripts (default: this package's plugin/dist). */
  scriptsDir?: string;
  /**
   * Environment of the MCP server (`codex mcp add --env`): Codex starts MCP servers with a few
   * variables only, so the installer pins where ctxbus's credentials are (no secret: a path).
   */
  mcpEnv?: Record<string, string>;
  /** Trust ctxbus's hooks in Codex (default true; false leaves it to Codex's /hooks review). */
  trust?: boolean;
  /**
   * Route Codex's permission requests for shell commands to the team's people (the
   * PermissionRequest hook, `waitSeconds` for them to answer); absent: Codex asks its own user
   * as without ctxbus (and a re-install without it removes the hook).
   */
  approvals?: { waitSeconds: number };
  progress?: (line: string) => void;
}

export interface CodexInstallResult {
  /** What changed, one phrase each; empty when nothing did. */
  changes: string[];
  hooksFile: string;
}

export type JsonObject = Record<string, unknown>;

/** The plugin directory shipped with this package (the built hook and MCP scripts). */
export function pluginDir(): string {
  return fileURLToPath(new URL('../plugin', import.meta.url));
}

/** Codex's home: `codexHome`, else $CODEX_HOME, else ~/.codex. */
export function codexHomeDir(codexHome?: string): string {
  return resolve(codexHome ?? (process.env.CODEX_HOME || join(homedir(), '.codex')));
}

function readJsonFile(path: string): JsonObject {
  if (!existsSync(path)) return {};
  const text = readFileSync(path, 'utf8');
  if (text.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new CtxbusError(
      'validation_failed',
      `${path} is not valid JSON (${(error as Error).message}); fix it first, nothing was changed`,
    );
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new CtxbusError('validation_failed', `${path} does not hold a JSON object`);
  }
  return value as JsonObject;
}

const isObject = (value: unknown): value is JsonObject =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

function quote(value: string): string {
  return `"${value.replace(/(["\\$`])/g, '\\$1')}"`;
}

const isOurs = (entry: unknown) => JSON.stringify(entry ?? null).includes(HOOK_SCRIPT);

/** Removes our hook groups from every event, keeping everyone else's; drops emptied events. */
function removeHooks(file: JsonObject): void {
  const hooks = file.hooks;
  if (!isObject(hooks)) return;
  for (const [event, groups] of Object.entries(hooks)) {
    if (!Array.isArray(groups)) continue;
    const kept = groups.filter((group) => !isOurs(group));
    if (kept.length === 0) delete hooks[event];
    else hooks[event] = kept;
  }
  if (Object.keys(hooks).length === 0) delete file.hooks;
}

/** What the person sees in Codex while the PermissionRequest hook waits for the team. */
const APPROVAL_STATUS =
  'ctxbus: asking the team to approve this command (ctxbus approve, Telegram or the dashboard)';

/** What Codex may wait past the hook's own wait before it kills it (no decision then). */
const APPROVAL_TIMEOUT_SLACK_SECONDS = 30;

/** Our hook groups, by event: the four context hooks, and the approvals hook when asked. */
function ourHookGroups(command: string, approvals: CodexInstallOptions['approvals']) {
  const groups: { event: string; group: JsonObject }[] = HOOK_EVENTS.map(
    ({ event, matcher, timeout }) => ({
      event,
      group: { ...(matcher && { matcher }), hooks: [{ type: 'command', command, timeout }] },
    }),
  );
  if (approvals) {
    const wait = approvals.waitSeconds;
    groups.push({
      event: 'PermissionRequest',
      group: {
        matcher: PERMISSION_TOOL,
        hooks: [
          {
            type: 'command',
            command: `${command} --approval-wait ${wait}`,
            timeout: wait + APPROVAL_TIMEOUT_SLACK_SECONDS,
            statusMessage: APPROVAL_STATUS,
          },
        ],
      },
    });
  }
  return groups;
}

/** The hooks file with ours (for `command`) in place of any earlier ones. */
function withOurHooks(
  file: JsonObject,
  command: string,
  approvals: CodexInstallOptions['approvals'],
): JsonObject {
  const next = structuredClone(file);
  removeHooks(next);
  if (!isObject(next.hooks)) next.hooks = {};
  const hooks = next.hooks as JsonObject;
  for (const { event, group } of ourHookGroups(command, approvals)) {
    const groups = Array.isArray(hooks[event]) ? (hooks[event] as unknown[]) : [];
    groups.push(group);
    hooks[event] = groups;
  }
  return next;
}

const serialize = (value: JsonObject) => `${JSON.stringify(value, null, 2)}\n`;

/** Writes the hooks file when its content changes; true when it did. */
function writeHooksFile(path: string, before: string | null, value: JsonObject): boolean {
  const text = serialize(value);
  if (text === before) return false;
  mkdirSync(dirname(path), { recursive: true });
  writeFileAtomic(path, text, { mode: 0o644, followLink: true });
  return true;
}

interface McpServerEntry {
  transport?: {
    type?: string;
    command?: string;
    args?: string[];
    env?: Record<string, string> | null;
  };
}

/** `codex mcp get ctxbus --json`, or null when Codex has no server of that name. */
async function currentMcpServer(run: CodexRunner): Promise<McpServerEntry | null> {
  const result = await run.run(['mcp', 'get', MCP_SERVER_NAME, '--json']);
  if (result.code !== 0) return null;
  try {
    return JSON.parse(result.stdout) as McpServerEntry;
  } catch {
    return null;
  }
}

const isOurServer = (server: McpServerEntry | null) =>
  JSON.stringify(server?.transport ?? null).includes(MCP_SCRIPT);

/** Registers the MCP server unless Codex already has exactly it; a phrase when it changed. */
async function ensureMcpServer(
  run: CodexRunner,
  node: string,
  args: string[],
  env: Record<string, string>,
) {
  const current = await currentMcpServer(run);
  const sorted = (value: Record<string, string>) => JSON.stringify(Object.entries(value).sort());
  const same =
    current?.transport?.type === 'stdio' &&
    current.transport.command === node &&
    JSON.stringify(current.transport.args ?? []) === JSON.stringify(args) &&
    sorted(current.transport.env ?? {}) === sorted(env);
  if (same) return null;
  if (current && !isOurServer(current)) {
    throw new CtxbusError(
      'conflict',
      `Codex already has an MCP server named ${MCP_SERVER_NAME} that is not ctxbus's; remove it first (codex mcp remove ${MCP_SERVER_NAME})`,
    );
  }
  if (current) await runOrFail(run, ['mcp', 'remove', MCP_SERVER_NAME]);
  const envArgs = Object.entries(env).flatMap(([key, value]) => ['--env', `${key}=${value}`]);
  await runOrFail(run, ['mcp', 'add', MCP_SERVER_NAME, ...envArgs, '--', node, ...args]);
  return `MCP server ${MCP_SERVER_NAME} (codex mcp add)`;
}

interface HookEntry {
  key: string;
  /** Codex's name for the event (camelCase: `permissionRequest`). */
  eventName?: string;
  command?: string;
  currentHash: string;
  trustStatus: 'managed' | 'untrusted' | 'trusted' | 'modified';
}

/** Our hooks as Codex lists them (`hooks/list`), with their trust. */
async function ourHooks(server: CodexAppServer, home: string): Promise<HookEntry[]> {
  const listed = await server.call<{ data: { hooks: HookEntry[] }[] }>('hooks/list', {
    cwds: [home],
  });
  return listed.data.flatMap((entry) => entry.hooks).filter((hook) => isOurs(hook.command));
}

/** Runs `use` on a `codex app-server` started for it, and stops the server. */
async function withAppServer<Result>(
  run: CodexRunner,
  use: (server: CodexAppServer) => Promise<Result>,
): Promise<Result> {
  const server = await run.appServer();
  try {
    return await use(server);
  } finally {
    server.close();
  }
}

/** The `hooks.state` table of Codex's user config, from `config/read`. */
async function hookStates(server: CodexAppServer): Promise<JsonObject> {
  const read = await server.call<{ config: { hooks?: { state?: unknown } } }>('config/read', {});
  const state = read.config.hooks?.state;
  return isObject(state) ? state : {};
}

/**
 * Trusts our hooks at their current hash (what Codex's /hooks review writes), forgetting the
 * trust of ours that no longer exist; a phrase when anything changed.
 */
async function trustHooks(server: CodexAppServer, home: string, before: readonly string[]) {
  const hooks = await ourHooks(server, home);
  const states = await hookStates(server);
  const current = new Set(hooks.map((hook) => hook.key));
  const stale = before.filter((key) => !current.has(key) && key in states);
  const untrusted = hooks.filter((hook) => hook.trustStatus !== 'trusted');
  if (untrusted.length === 0 && stale.length === 0) return null;
  const next = structuredClone(states);
  for (const key of stale) delete next[key];
  for (const hook of untrusted) {
    next[hook.key] = {
      ...(isObject(next[hook.key]) ? (next[hook.key] as JsonObject) : {}),
      trusted_hash: hook.currentHash,
    };
  }
  await writeHookStates(server, next);
  return `${untrusted.length} hooks trusted (codex app-server)`;
}

/**
 * How long Codex waits for our MCP server to start (its default, 10 s, was passed on a loaded
 * machine: Codex then ran the turn without the ctxbus tools, and the request's prefix changed;
 * 30 s was passed at load 20 on 2 cores). Only a server that hangs makes Codex wait this long.
 */
const MCP_STARTUP_TIMEOUT_SEC = 60;

/**
 * Our MCP server's settings in Codex's config: its tools approved (Codex asks before each MCP
 * tool call unless they are; ctxbus's write only to the bus, and a task that runs a command
 * waits for a person's approval on the hub, as Claude Code's install allows `mcp__ctxbus`), and
 * a startup timeout of MCP_STARTUP_TIMEOUT_SEC. True when it changed.
 */
async function approveTools(server: CodexAppServer): Promise<boolean> {
  const read = await server.call<{ config: { mcp_servers?: Record<string, JsonObject> } }>(
    'config/read',
    {},
  );
  const ours = read.config.mcp_servers?.[MCP_SERVER_NAME];
  const wanted: [string, unknown][] = [
    ['default_tools_approval_mode', 'approve'],
    ['startup_timeout_sec', MCP_STARTUP_TIMEOUT_SEC],
  ];
  const edits = wanted
    .filter(([key, value]) => ours?.[key] !== value)
    .map(([key, value]) => ({
      keyPath: `mcp_servers.${MCP_SERVER_NAME}.${key}`,
      value,
      mergeStrategy: 'upsert',
    }));
  if (edits.length === 0) return false;
  await server.call('config/batchWrite', { edits });
  return true;
}

async function writeHookStates(server: CodexAppServer, states: JsonObject): Promise<void> {
  await server.call('config/batchWrite', {
    edits: [
      {
        keyPath: 'hooks.state',
        value: Object.keys(states).length === 0 ? null : states,
        mergeStrategy: 'replace',
      },
    ],
  });
}

/**
 * Plugs Codex into ctxbus: ctxbus's hooks in `$CODEX_HOME/hooks.json` (session start, prompt,
 * tool result, turn end), the ctxbus MCP server (`codex mcp add`), and, unless `trust` is
 * false, the hooks trusted in Codex's config. Keeps every other hook, server and setting;
 * running it again changes nothing.
 */
export async function installCodex(options: CodexInstallOptions): Promise<CodexInstallResult> {
  if (!/^https?:\/\//.test(options.url)) {
    throw new CtxbusError(
      'validation_failed',
      `--url must be an http(s) URL (got "${options.url}")`,
    );
  }
  const home = codexHomeDir(options.codexHome);
  const node = options.nodePath ?? process.execPath;
  const scripts = options.scriptsDir ?? join(pluginDir(), 'dist');
  const hooksFile = join(home, 'hooks.json');
  const progress = options.progress ?? (() => {});
  const changes: string[] = [];

  await checkCodex(options.run);
  progress('reading Codex hooks');
  // Our hooks' keys before the change, to forget the trust of any that move or go.
  const before = (await withAppServer(options.run, (server) => ourHooks(server, home))).map(
    (hook) => hook.key,
  );
  const text = existsSync(hooksFile) ? readFileSync(hooksFile, 'utf8') : null;
  const command = `${quote(node)} ${quote(join(scripts, HOOK_SCRIPT))} --url ${quote(options.url)}`;
  if (
    writeHooksFile(
      hooksFile,
      text,
      withOurHooks(readJsonFile(hooksFile), command, options.approvals),
    )
  ) {
    changes.push(`hooks in ${hooksFile}`);
  }
  progress('registering the MCP server');
  const mcp = await ensureMcpServer(
    options.run,
    node,
    [join(scripts, MCP_SCRIPT), '--url', options.url],
    options.mcpEnv ?? {},
  );
  if (mcp) changes.push(mcp);
  // A fresh app-server reads the files as they are now.
  await withAppServer(options.run, async (server) => {
    if (options.trust !== false) {
      progress('trusting the hooks');
      const trusted = await trustHooks(server, home, before);
      if (trusted) changes.push(trusted);
    }
    if (await approveTools(server)) changes.push(`${MCP_SERVER_NAME} tools approved`);
  });
  return { changes, hooksFile };
}

/** Removes exactly what installCodex added: our hooks, their trust, the MCP server. */
export async function uninstallCodex(options: {
  run: CodexRunner;
  codexHome?: string;
}): Promise<CodexInstallResult> {
  const home = codexHomeDir(options.codexHome);
  const hooksFile = join(home, 'hooks.json');
  const changes: string[] = [];
  await withAppServer(options.run, async (server) => {
    const keys = (await ourHooks(server, home)).map((hook) => hook.key);
    const states = await hookStates(server);
    const kept = Object.fromEntries(Object.entries(states).filter(([key]) => !keys.includes(key)));
    if (Object.keys(kept).length === Object.keys(states).length) return;
    await writeHookStates(server, kept);
    changes.push('hook trust');
  });
  if (existsSync(hooksFile)) {
    const text = readFileSync(hooksFile, 'utf8');
    const file = readJsonFile(hooksFile);
    removeHooks(file);
    if (Object.keys(file).length === 0) {
      rmSync(hooksFile);
      changes.push(`${hooksFile} (removed: nothing else was in it)`);
    } else if (writeHooksFile(hooksFile, text, file)) changes.push(`hooks in ${hooksFile}`);
  }
  if (isOurServer(await currentMcpServer(options.run))) {
    await runOrFail(options.run, ['mcp', 'remove', MCP_SERVER_NAME]);
    changes.push(`MCP server ${MCP_SERVER_NAME}`);
  }
  return { changes, hooksFile };
}

/** What `ctxbus doctor` needs to know of a Codex install, read through Codex's own tools. */
export interface CodexInstall {
  /** The hooks file holding our hooks, or null when they are not installed. */
  hooksFile: string | null;
  /** The hub our hook command names. */
  url: string | null;
  nodePath: string | null;
  hookScript: string | null;
  /** How many of our hooks Codex lists, and how many of them it trusts. */
  hooks: number;
  trusted: number;
  mcpServer: boolean;
  /** Whether Codex's permission requests go to the team's people (the PermissionRequest hook). */
  approvals: boolean;
}

/** Reads what installCodex wrote, without changing anything. */
const NOTHING_INSTALLED: CodexInstall = {
  hooksFile: null,
  url: null,
  nodePath: null,
  hookScript: null,
  hooks: 0,
  trusted: 0,
  mcpServer: false,
  approvals: false,
};

export async function inspectCodex(options: {
  run: CodexRunner;
  codexHome?: string;
}): Promise<CodexInstall> {
  const home = codexHomeDir(options.codexHome);
  // No Codex home: nothing of ours (or anyone's) is configured, and starting Codex to ask
  // would create one (its app-server writes its databases there), in a dry run too.
  if (!existsSync(home)) return NOTHING_INSTALLED;
  await checkCodex(options.run);
  const hooksFile = join(home, 'hooks.json');
  const hooks = await withAppServer(options.run, (server) => ourHooks(server, home));
  const command = hooks[0]?.command ?? null;
  const parts = command
    ? /^"((?:[^"\\]|\\.)*)" "((?:[^"\\]|\\.)*)" --url "((?:[^"\\]|\\.)*)"(?: --approval-wait \d+)?$/.exec(
        command,
      )
    : null;
  const unquote = (value: string | undefined) => value?.replace(/\\(["\\$`])/g, '$1') ?? null;
  return {
    hooksFile: command ? hooksFile : null,
    url: unquote(parts?.[3]),
    nodePath: unquote(parts?.[1]),
    hookScript: unquote(parts?.[2]),
    hooks: hooks.length,
    trusted: hooks.filter((hook) => hook.trustStatus === 'trusted').length,
    mcpServer: isOurServer(await currentMcpServer(options.run)),
    approvals: hooks.some((hook) => hook.eventName === 'permissionRequest'),
  };
}
