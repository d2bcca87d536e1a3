import { join } from 'node:path';
import type { CodexRunner } from '@ctxbus/adapter-codex';
import {
  CtxbusError,
  MAX_PERMISSION_WAIT_SECONDS,
  MIN_PERMISSION_WAIT_SECONDS,
} from '@ctxbus/core/light';
import { configDir, forgetRuntimeToken, hubCredentials, saveRuntimeToken } from '../credentials.js';
import type { InstallFlags } from './install.js';
import {
  hubUrl,
  installLabel,
  installToken,
  packagedRuntimeDir,
  revokeInstallTokens,
  tokenWorks,
} from './install.js';

// `ctxbus install codex` as a function (the command in install-command.ts, and `ctxbus connect`,
// call it): Codex's hooks and MCP server through Codex's own files and commands, its runtime
// token saved in ctxbus's credentials (0600), where the hook and the MCP server read it.

export interface CodexFlags extends InstallFlags {
  /** The codex command (default: codex on PATH). */
  codex?: string;
  /** Codex's home (default: $CODEX_HOME, else ~/.codex). */
  codexHome?: string;
  /** false: leave trusting the hooks to Codex's /hooks review. */
  trust?: boolean;
  /** Codex's permission requests to the team's people: true (the default wait) or seconds. */
  approvals?: boolean | string;
}

/** `--approvals [seconds]` as the installer takes it; undefined when not asked for. */
export function approvalsOption(
  value: CodexFlags['approvals'],
  defaultSeconds: number,
): { waitSeconds: number } | undefined {
  if (value === undefined || value === false) return undefined;
  if (value === true) return { waitSeconds: defaultSeconds };
  const seconds = Number(value);
  if (
    !Number.isInteger(seconds) ||
    seconds < MIN_PERMISSION_WAIT_SECONDS ||
    seconds > MAX_PERMISSION_WAIT_SECONDS
  ) {
    throw new CtxbusError(
      'validation_failed',
      `--approvals takes whole seconds from ${MIN_PERMISSION_WAIT_SECONDS} to ${MAX_PERMISSION_WAIT_SECONDS} (got "${value}")`,
    );
  }
  return { waitSeconds: seconds };
}

export interface CodexInstallReport {
  /** What changed, one phrase each; empty when nothing did. */
  changes: string[];
  url: string | null;
  /** `team/codex` when a token was minted. */
  minted: string | null;
}

/** The token Codex gets: --token, else the one saved for this hub if it works, else minted. */
async function codexToken(
  url: string,
  flags: CodexFlags,
): Promise<{ token: string; teamId: string; minted: string | null; saved: boolean }> {
  const saved = hubCredentials(url).runtimes?.codex;
  if (!flags.token && saved && (await tokenWorks(url, saved.token))) {
    return { ...saved, minted: null, saved: true };
  }
  const { token, minted } = await installToken(url, 'codex', flags);
  const teamId = minted?.split('/')[0] ?? flags.team ?? hubCredentials(url).teamId;
  if (!teamId) {
    throw new CtxbusError(
      'validation_failed',
      "which team is the token's? pass --team with --token",
    );
  }
  return { token, teamId, minted, saved: false };
}

/**
 * Uninstall's part on the hub: revokes the tokens install minted for Codex (with an admin
 * token; else says how) and forgets the saved one once the hub refuses it (a token the user
 * saved since, which still works, stays). What it did, for the output.
 */
async function dropCodexToken(flags: CodexFlags): Promise<string[]> {
  const url = hubUrl(flags.url);
  const revoked = await revokeInstallTokens(url, installLabel('codex'), flags);
  const done = revoked ? [revoked] : [];
  const saved = hubCredentials(url).runtimes?.codex;
  if (revoked?.startsWith('revoked ') && saved && !(await tokenWorks(url, saved.token))) {
    forgetRuntimeToken(url, 'codex');
    done.push(`Codex's token forgotten in ${join(configDir(), 'credentials.json')}`);
  }
  return done;
}

/** Installs (or with `uninstall`, removes) ctxbus in Codex. */
export async function installCodexRuntime(
  flags: CodexFlags,
  progress: (line: string) => void = () => {},
): Promise<CodexInstallReport> {
  const adapter = await import('@ctxbus/adapter-codex');
  const run = adapter.codexRunner(flags.codex, flags.codexHome);
  const home = flags.codexHome ? { codexHome: flags.codexHome } : {};
  if (flags.uninstall) {
    const result = await adapter.uninstallCodex({ run, ...home });
    return {
      changes: [...result.changes, ...(await dropCodexToken(flags))],
      url: null,
      minted: null,
    };
  }
  const approvals = approvalsOption(flags.approvals, adapter.DEFAULT_APPROVAL_WAIT_SECONDS);
  const url = hubUrl(flags.url);
  // Codex runs here and reads its config before a token is minted or saved for it: nothing is
  // left behind otherwise.
  await adapter.checkCodex(run);
  const { token, teamId, minted, saved } = await codexToken(url, flags);
  const changes: string[] = [];
  if (!saved) {
    const { path } = saveRuntimeToken(url, { token, teamId, runtime: 'codex' });
    changes.push(`Codex's token saved in ${path}`);
  }
  const result = await wireCodex(url, {
    run,
    ...home,
    ...(flags.trust === false && { trust: false }),
    ...(approvals && { approvals }),
    progress,
  });
  return { changes: [...changes, ...result.changes], url, minted };
}

/** Where install puts Codex's hook and MCP scripts: the package's, or the clone's. */
export function codexScriptsDir(): string | undefined {
  const packaged = packagedRuntimeDir('codex');
  return packaged ? join(packaged, 'dist') : undefined;
}

/**
 * The adapter's install against `url` (its token already saved in ctxbus's credentials, where
 * the hook and the MCP server read it): `install codex` and `ctxbus connect` both wire so.
 */
export async function wireCodex(
  url: string,
  options: {
    run: CodexRunner;
    codexHome?: string;
    trust?: boolean;
    /** The PermissionRequest hook to people's approvals (`--approvals`). */
    approvals?: { waitSeconds: number };
    progress: (line: string) => void;
  },
) {
  const { installCodex } = await import('@ctxbus/adapter-codex');
  const scriptsDir = codexScriptsDir();
  return installCodex({
    url,
    run: options.run,
    ...(options.codexHome && { codexHome: options.codexHome }),
    ...(scriptsDir && { scriptsDir }),
    // Codex starts MCP servers with a few variables only: the server is told where the token is.
    mcpEnv: { CTXBUS_CONFIG_DIR: configDir() },
    ...(options.trust === false && { trust: false }),
    ...(options.approvals && { approvals: options.approvals }),
    progress: options.progress,
  });
}
