import { DEFAULT_HUB_URL } from '@ctxbus/core/light';
import type { Command } from 'commander';

export function registerMcp(program: Command, run: (action: () => Promise<void>) => Promise<void>) {
  program
    .command('mcp')
    .description(
      "an MCP server on stdio for clients that start processes (Claude Code, OpenClaw): a thin client of the hub with the agent's own token (never the CLI's saved one, a person's)",
    )
    .option('--url <url>', 'hub URL (default: $CTXBUS_URL, else the hub saved by ctxbus serve)')
    .option('--token <token>', "the agent runtime's token (default: $CTXBUS_TOKEN)")
    .addHelpText(
      'after',
      `\nExample: claude mcp add ctxbus -e CTXBUS_URL=${DEFAULT_HUB_URL} -e CTXBUS_TOKEN=cbx_... -- ctxbus mcp`,
    )
    .action((options: { url?: string; token?: string }) =>
      run(async () => {
        // A URL that is no hub's (a typo, ftp://) is said now, not as "unavailable" at each call.
        const { findHubUrl } = await import('../hub-target.js');
        const url = findHubUrl(options.url);
        const { runStdioServer } = await import('@ctxbus/mcp');
        const running = await runStdioServer({
          ...(url !== null && { url }),
          ...(options.token !== undefined && { token: options.token }),
        });
        await running.closed;
      }),
    );
}
