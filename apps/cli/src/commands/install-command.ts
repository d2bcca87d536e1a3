import { existsSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { CtxbusError } from '@ctxbus/core/light';
import type { Command } from 'commander';
import { printLine } from '../output.js';
import type { InstallFlags, OpenClawFlags } from './install.js';
import type { CodexFlags } from './install-codex.js';

// `ctxbus install`: the command and its options; what it does (install.ts) loads when it runs.

/**
 * Where `install claude-code` writes: --user, else --project's directory, which must exist
 * (uninstall may name one that is gone: its entry in ~/.claude.json still goes).
 */
function claudeCodeTarget(
  flags: InstallFlags,
): { kind: 'user' } | { kind: 'project'; dir: string } {
  if (flags.user) return { kind: 'user' };
  const dir = resolve(typeof flags.project === 'string' ? flags.project : process.cwd());
  if (!flags.uninstall && !(existsSync(dir) && statSync(dir).isDirectory())) {
    throw new CtxbusError('validation_failed', `--project ${dir}: no such directory`);
  }
  return { kind: 'project', dir };
}

export function registerInstall(
  program: Command,
  run: (action: () => Promise<void>) => Promise<void>,
) {
  const install = program.command('install').description('plug a runtime into ctxbus');
  install
    .command('claude-code')
    .description(
      'configure Claude Code: hooks that inject the shared context and record decisions, the ctxbus MCP server, and the hub URL and token (nothing in files a project commits)',
    )
    .option(
      '--project [dir]',
      'this project only: <dir>/.claude/settings.local.json (kept out of git) and the MCP server in local scope, ~/.claude.json (default: the current directory)',
    )
    .option('--user', 'every project: ~/.claude/settings.json and ~/.claude.json')
    .option('--url <url>', 'hub URL (default: $CTXBUS_URL, else the hub saved by ctxbus serve)')
    .option(
      '--token <token>',
      'a runtime token for claude-code (default: a new one minted with the admin token, else $CTXBUS_TOKEN)',
    )
    .option('--team <team>', "the new token's team (default: the team of the CLI's saved token)")
    .option(
      '--admin-token <token>',
      'admin token to mint with (default: $CTXBUS_ADMIN_TOKEN, else the one saved by ctxbus serve)',
    )
    .option(
      '--live',
      "live push (off by default): a blocking item from another runtime, and an approval request for a person here, reach a running session through Claude Code's inbox socket (between tool calls, or as a new message when idle); installing without --live turns it off",
    )
    .option('--uninstall', 'remove exactly what install added')
    .addHelpText(
      'after',
      '\nRe-running install changes nothing; other settings, hooks and MCP servers are kept.\nManual alternative (MCP only): claude mcp add --transport http ctxbus <url>/mcp --header "Authorization: Bearer <token>"',
    )
    .action((flags: InstallFlags) =>
      run(async () => {
        const {
          hubUrl,
          installLabel,
          installToken,
          packagedRuntimeDir,
          revokeInstallTokens,
          tokenWorks,
        } = await import('./install.js');
        if (flags.user && flags.project !== undefined) {
          throw new CtxbusError('validation_failed', 'give --project or --user, not both');
        }
        const { inspectClaudeCode, installClaudeCode, uninstallClaudeCode } = await import(
          '@ctxbus/adapter-claude-code'
        );
        const target = claudeCodeTarget(flags);
        const label = installLabel(
          'claude-code',
          target.kind === 'user' ? 'user' : `project ${target.dir}`,
        );
        const installed = inspectClaudeCode(target);
        if (flags.uninstall) {
          const result = uninstallClaudeCode(target);
          const hub = installed.url ?? hubUrl(flags.url);
          const revoked = await revokeInstallTokens(hub, label, flags);
          printLine(
            result.files.length
              ? `removed ctxbus from ${result.files.join(', ')}${revoked ? `; ${revoked}` : ''}`
              : `nothing to remove${revoked ? `; ${revoked}` : ''}`,
          );
          return;
        }
        const url = hubUrl(flags.url);
        // A re-run keeps the token already installed for this hub while the hub takes it.
        const kept =
          !flags.token && installed.url === url && installed.token ? installed.token : null;
        const { token, minted } =
          kept && (await tokenWorks(url, kept))
            ? { token: kept, minted: null }
            : await installToken(url, 'claude-code', flags, label);
        const packaged = packagedRuntimeDir('claude-code');
        const result = installClaudeCode({
          target,
          url,
          token,
          ...(packaged && { scriptsDir: join(packaged, 'dist') }),
          ...(flags.live && { live: true }),
        });
        printLine(
          `configured Claude Code for ${url}${minted ? ` with a new token for ${minted}` : ''}${flags.live ? ', live push on' : ''}: ${result.files.join(', ')}`,
        );
      }),
    );

  install
    .command('openclaw')
    .description(
      "plug OpenClaw in: install the ctxbus plugin (team context in every turn, decisions back to the bus, capability requests routed to a runtime that can) and register the hub's MCP server, through OpenClaw's own commands",
    )
    .option('--profile <name>', "OpenClaw's profile (its --profile: state in ~/.openclaw-<name>)")
    .option('--openclaw <path>', 'the openclaw command (default: openclaw on PATH)')
    .option('--url <url>', 'hub URL (default: $CTXBUS_URL, else the hub saved by ctxbus serve)')
    .option(
      '--token <token>',
      'a runtime token for openclaw (default: the one already installed for this hub if it still works, else a new one minted with the admin token, else $CTXBUS_TOKEN)',
    )
    .option('--team <team>', "the new token's team (default: the team of the CLI's saved token)")
    .option(
      '--admin-token <token>',
      'admin token to mint with (default: $CTXBUS_ADMIN_TOKEN, else the one saved by ctxbus serve)',
    )
    .option(
      '--live',
      "live push (off by default): a blocking item from another runtime, and an approval request for a person here, are queued for OpenClaw's active sessions as system events with a heartbeat (an idle session takes a turn at once, a busy one reads it at its next turn; a gateway restart drops what is queued); installing without --live turns it off",
    )
    .option(
      '--uninstall',
      'remove exactly what install added (the plugin, its config, the MCP server)',
    )
    .addHelpText(
      'after',
      '\nFrom the published package the plugin is installed from its packed tarball (openclaw plugins install npm-pack:...); from a clone, its plugin folder is linked. OpenClaw needs Node >= 24.16: when the node on PATH is older, install runs OpenClaw with a newer Node this machine has, or says which to install.\nRe-running install changes nothing; your other OpenClaw settings, plugins and MCP servers are kept. Each OpenClaw command takes a few seconds.\nRestart the gateway afterwards (openclaw gateway restart) if one is running.',
    )
    .action((flags: OpenClawFlags) =>
      run(async () => {
        const { hubUrl, installToken, tokenWorks } = await import('./install.js');
        const { openclawSetup } = await import('../connect/openclaw-setup.js');
        const adapter = await import('@ctxbus/adapter-openclaw');
        const progress = (line: string) => process.stderr.write(`ctxbus: ${line}\n`);
        const { run: runner, plugin } = openclawSetup(flags, progress);
        if (flags.uninstall) {
          const result = await adapter.uninstallOpenClaw({ run: runner, progress, plugin });
          printLine(
            result.changes.length
              ? `removed ctxbus from OpenClaw (${result.configPath}): ${result.changes.join('; ')}`
              : `nothing to remove (${result.configPath})`,
          );
          return;
        }
        const url = hubUrl(flags.url);
        progress('reading the OpenClaw config');
        const current = await adapter.readOpenClawConfig(runner);
        let token = flags.token;
        let minted: string | null = null;
        const kept = token ? undefined : adapter.installedToken(current.config, url);
        if (kept && (await tokenWorks(url, kept))) token = kept;
        if (!token) ({ token, minted } = await installToken(url, 'openclaw', flags));
        const result = await adapter.installOpenClaw({
          url,
          token,
          run: runner,
          current,
          progress,
          plugin,
          ...(flags.live && { live: true }),
        });
        printLine(
          result.changes.length
            ? `configured OpenClaw for ${url}${minted ? ` with a new token for ${minted}` : ''}${flags.live ? ', live push on' : ''} (${result.configPath}): ${result.changes.join('; ')}`
            : `OpenClaw already configured for ${url} (${result.configPath}); nothing changed`,
        );
      }),
    );

  install
    .command('codex')
    .description(
      "plug the Codex CLI in: hooks that inject the shared context and record decisions ($CODEX_HOME/hooks.json, trusted through Codex's app-server), and the ctxbus MCP server (codex mcp add); Codex's token is saved in ctxbus's credentials, never in Codex's files",
    )
    .option('--codex <path>', 'the codex command (default: codex on PATH)')
    .option('--codex-home <dir>', "Codex's home (default: $CODEX_HOME, else ~/.codex)")
    .option('--url <url>', 'hub URL (default: $CTXBUS_URL, else the hub saved by ctxbus serve)')
    .option(
      '--token <token>',
      'a runtime token for codex (default: the one saved for this hub if it still works, else a new one minted with the admin token, else $CTXBUS_TOKEN)',
    )
    .option('--team <team>', "the token's team (default: the team of the CLI's saved token)")
    .option(
      '--admin-token <token>',
      'admin token to mint with (default: $CTXBUS_ADMIN_TOKEN, else the one saved by ctxbus serve)',
    )
    .option('--no-trust', "leave trusting the hooks to Codex's /hooks review")
    .option(
      '--approvals [seconds]',
      "ask the team's people (ctxbus approve, Telegram, the dashboard) when Codex wants approval for a shell command, waiting this long for an answer (default 300, at most 1800); unanswered or hub down: Codex asks you itself",
    )
    .option(
      '--uninstall',
      'remove exactly what install added (hooks, their trust, the MCP server) and revoke its token (with an admin token)',
    )
    .addHelpText(
      'after',
      '\nRe-running install changes nothing; your other Codex hooks, MCP servers and settings are kept (run it without --approvals to turn approvals through the team off). Restart running Codex sessions afterwards.',
    )
    .action((flags: CodexFlags) =>
      run(async () => {
        const { installCodexRuntime } = await import('./install-codex.js');
        const progress = (line: string) => process.stderr.write(`ctxbus: ${line}\n`);
        const result = await installCodexRuntime(flags, progress);
        if (flags.uninstall) {
          printLine(
            result.changes.length
              ? `removed ctxbus from Codex: ${result.changes.join('; ')}`
              : 'nothing to remove',
          );
          return;
        }
        printLine(
          result.changes.length
            ? `configured Codex for ${result.url}${result.minted ? ` with a new token for ${result.minted}` : ''}: ${result.changes.join('; ')}`
            : `Codex already configured for ${result.url}; nothing changed`,
        );
      }),
    );
}
