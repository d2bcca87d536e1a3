import { join } from 'node:path';
import type { ClaudeCodeInstall, InstallTarget } from '@ctxbus/adapter-claude-code';
import {
  inspectClaudeCode,
  installClaudeCode,
  installFiles,
  uninstallClaudeCode,
} from '@ctxbus/adapter-claude-code';
import { codexHomeDir, codexRunner, inspectCodex, uninstallCodex } from '@ctxbus/adapter-codex';
import type { InstalledPlugin } from '@ctxbus/adapter-openclaw';
import {
  installedToken,
  installOpenClaw,
  planInstall,
  pluginToInstallOver,
  readOpenClawConfig,
  uninstallOpenClaw,
} from '@ctxbus/adapter-openclaw';
import { codexScriptsDir, wireCodex } from '../commands/install-codex.js';
import { hubCredentials } from '../credentials.js';
import { packagedRuntimeDir } from '../runtime-files.js';
import type { Detection, OpenClawSetup } from './detect.js';
import { detectClaudeCode, detectCodex, detectOpenClaw } from './detect.js';
import { openclawPlugin, openclawRun } from './openclaw-setup.js';

// The runtimes `ctxbus connect` knows, one entry each: how to find it, what it has of ctxbus
// for a hub, and the adapter's own install and uninstall. A new runtime is one more entry in
// CONNECTORS, built on its adapter's installer (Codex was).

export interface ConnectContext {
  url: string;
  /** One line per slow step (OpenClaw's commands take seconds each). */
  progress: (line: string) => void;
}

/** What a runtime has of ctxbus for the hub, read without changing anything. */
export interface Wiring {
  /** The token it is configured with for this hub, if any. */
  token: string | null;
  /** Whether everything is in place with `token` (the adapter's plan has nothing to do). */
  wiredWith(token: string): boolean;
  /** The files connecting writes (each is restored by disconnect while unchanged since). */
  files: string[];
  /** What connecting adds, in a few words. */
  what: string;
}

export interface RuntimeConnector<Setup = unknown> {
  /** Its runtime name: the minted token's, and what --only takes. */
  runtime: string;
  label: string;
  detect(): Detection<Setup>;
  inspect(setup: Setup, context: ConnectContext): Promise<Wiring>;
  /** Wires it with `token`; the changes, one phrase each. */
  apply(setup: Setup, context: ConnectContext, wiring: Wiring, token: string): Promise<string[]>;
  /** Removes what apply added (the adapter's exact uninstall). */
  remove(setup: Setup, context: ConnectContext): Promise<string[]>;
}

const USER: InstallTarget = { kind: 'user' };

/** Where install puts Claude Code's hook and MCP scripts: the package's, or the clone's. */
function claudeScriptsDir(): string | undefined {
  const packaged = packagedRuntimeDir('claude-code');
  return packaged ? join(packaged, 'dist') : undefined;
}

function claudeWired(found: ClaudeCodeInstall, url: string, token: string): boolean {
  const scripts = claudeScriptsDir();
  return (
    found.settings !== null &&
    found.mcpServer &&
    found.url === url &&
    found.token === token &&
    found.nodePath === process.execPath &&
    (scripts === undefined || found.hookScript?.startsWith(scripts) === true)
  );
}

const claudeCode: RuntimeConnector<{ bin: string }> = {
  runtime: 'claude-code',
  label: 'Claude Code',
  detect: () => detectClaudeCode(),
  async inspect(_setup, context) {
    const found = inspectClaudeCode(USER);
    return {
      token: found.url === context.url ? found.token : null,
      wiredWith: (token) => claudeWired(found, context.url, token),
      files: installFiles(USER),
      what: 'hooks and the ctxbus MCP server, for every project (user settings)',
    };
  },
  async apply(_setup, context, _wiring, token) {
    const scriptsDir = claudeScriptsDir();
    const result = installClaudeCode({
      target: USER,
      url: context.url,
      token,
      ...(scriptsDir && { scriptsDir }),
    });
    return result.files.map((file) => `wrote ${file}`);
  },
  async remove() {
    return uninstallClaudeCode(USER).files.map((file) => `changed ${file}`);
  },
};

interface OpenClawWiring extends Wiring {
  current: Awaited<ReturnType<typeof readOpenClawConfig>>;
  /** The ctxbus plugin OpenClaw has, as inspect found it (apply does not ask again). */
  installed: InstalledPlugin | null;
}

const openclaw: RuntimeConnector<OpenClawSetup> = {
  runtime: 'openclaw',
  label: 'OpenClaw',
  detect: () => detectOpenClaw(),
  async inspect(setup, context): Promise<OpenClawWiring> {
    const run = openclawRun(setup);
    context.progress('reading the OpenClaw config');
    const current = await readOpenClawConfig(run);
    const plugin = openclawPlugin();
    const installed =
      plugin.kind === 'package' ? await pluginToInstallOver(run, current.config) : null;
    const plan = (token: string) =>
      planInstall(current.config, { url: context.url, token, plugin, installed });
    return {
      current,
      installed,
      token: installedToken(current.config, context.url) ?? null,
      wiredWith: (token) => {
        const steps = plan(token);
        return !steps.linkPlugin && !steps.installPackage && steps.patch === null;
      },
      files: [current.path],
      what: `the ctxbus plugin (${plugin.kind === 'package' ? `package ${plugin.version}` : `linked from ${plugin.dir}`}) and MCP server`,
    };
  },
  async apply(setup, context, wiring, token) {
    const result = await installOpenClaw({
      url: context.url,
      token,
      run: openclawRun(setup),
      current: (wiring as OpenClawWiring).current,
      installed: (wiring as OpenClawWiring).installed,
      plugin: openclawPlugin(),
      progress: context.progress,
    });
    return result.changes;
  },
  async remove(setup, context) {
    const result = await uninstallOpenClaw({
      run: openclawRun(setup),
      plugin: openclawPlugin(),
      progress: context.progress,
    });
    return result.changes;
  },
};

/**
 * Codex: its hooks (trusted) and the ctxbus MCP server in Codex's home, through Codex's own
 * commands; its token lives in ctxbus's credentials (connect saves it there), never in Codex's
 * files, so the wiring is whole when Codex points at the hub and the saved token is `token`.
 */
const codex: RuntimeConnector<{ bin: string }> = {
  runtime: 'codex',
  label: 'Codex',
  detect: () => detectCodex(),
  async inspect(setup, context) {
    context.progress('reading the Codex config');
    const found = await inspectCodex({ run: codexRunner(setup.bin) });
    const saved = hubCredentials(context.url).runtimes?.codex?.token ?? null;
    const scripts = codexScriptsDir();
    const home = codexHomeDir();
    return {
      token: found.url === context.url ? saved : null,
      wiredWith: (token) =>
        found.url === context.url &&
        found.hooks > 0 &&
        found.trusted === found.hooks &&
        found.mcpServer &&
        found.nodePath === process.execPath &&
        saved === token &&
        (scripts === undefined || found.hookScript?.startsWith(scripts) === true),
      files: [join(home, 'hooks.json'), join(home, 'config.toml')],
      what: 'hooks (trusted) and the ctxbus MCP server, in Codex home',
    };
  },
  async apply(setup, context) {
    const result = await wireCodex(context.url, {
      run: codexRunner(setup.bin),
      progress: context.progress,
    });
    return result.changes;
  },
  async remove(setup) {
    return (await uninstallCodex({ run: codexRunner(setup.bin) })).changes;
  },
};

/** Every runtime connect knows, in the order it wires them. */
export const CONNECTORS: readonly RuntimeConnector[] = [
  claudeCode as RuntimeConnector,
  openclaw as RuntimeConnector,
  codex as RuntimeConnector,
];
