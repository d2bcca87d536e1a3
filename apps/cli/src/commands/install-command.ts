import { CtxbusError } from '@ctxbus/core/contract';
import type { Command } from 'commander';
import { printLine } from '../output.js';

interface InstallFlags {
  project?: string | boolean;
  user?: boolean;
  url?: string;
  token?: string;
  uninstall?: boolean;
}

export function registerInstall(
  program: Command,
  run: (action: () => Promise<void>) => Promise<void>,
) {
  const install = program.command('install').description('plug a runtime into ctxbus');
  install
    .command('claude-code')
    .description(
      'configure Claude Code: hooks that inject the shared context and record decisions, the ctxbus MCP server, and the hub URL and token (in settings env; never in .mcp.json)',
    )
    .option(
      '--project [dir]',
      'this project only: <dir>/.claude/settings.local.json and <dir>/.mcp.json (default: the current directory)',
    )
    .option('--user', 'every project: ~/.claude/settings.json and ~/.claude.json')
    .option('--url <url>', 'hub URL (default: $CTXBUS_URL)')
    .option('--token <token>', 'a runtime token for claude-code (default: $CTXBUS_TOKEN)')
    .option('--uninstall', 'remove exactly what install added')
    .addHelpText(
      'after',
      '\nRe-running install changes nothing; other settings, hooks and MCP servers are kept.\nManual alternative (MCP only): claude mcp add --transport http ctxbus <url>/mcp --header "Authorization: Bearer <token>"',
    )
    .action((flags: InstallFlags) =>
      run(async () => {
        if (flags.user && flags.project !== undefined) {
          throw new CtxbusError('validation_failed', 'give --project or --user, not both');
        }
        const { installClaudeCode, uninstallClaudeCode } = await import(
          '@ctxbus/adapter-claude-code'
        );
        const target = flags.user
          ? ({ kind: 'user' } as const)
          : ({
              kind: 'project',
              dir: typeof flags.project === 'string' ? flags.project : process.cwd(),
            } as const);
        if (flags.uninstall) {
          const result = uninstallClaudeCode(target);
          printLine(
            result.files.length
              ? `removed ctxbus from ${result.files.join(', ')}`
              : 'nothing to remove',
          );
          return;
        }
        const url = flags.url ?? process.env.CTXBUS_URL;
        const token = flags.token ?? process.env.CTXBUS_TOKEN;
        if (!url)
          throw new CtxbusError('validation_failed', 'no hub URL: pass --url or set CTXBUS_URL');
        if (!token)
          throw new CtxbusError('validation_failed', 'no token: pass --token or set CTXBUS_TOKEN');
        const result = installClaudeCode({ target, url, token });
        printLine(`configured Claude Code for ${url}: ${result.files.join(', ')}`);
      }),
    );
}
