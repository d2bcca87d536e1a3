import { DEFAULT_HUB_URL } from '@ctxbus/core/light';
import type { Command } from 'commander';

export function registerMcp(program: Command, run: (action: () => Promise<void>) => Promise<void>) {
  program
    .command('mcp')
    .description(
      'an MCP server on stdio for clients that start processes (Claude Code, OpenClaw): a thin client of the hub at $CTXBUS_URL with $CTXBUS_TOKEN',
    )
    .option('--url <url>', 'hub URL (default: $CTXBUS_URL)')
    .option('--token <token>', 'runtime token (default: $CTXBUS_TOKEN)')
    .addHelpText(
      'after',
      `\nExample: claude mcp add ctxbus -e CTXBUS_URL=${DEFAULT_HUB_URL} -e CTXBUS_TOKEN=cbx_... -- ctxbus mcp`,
    )
    .action((options: { url?: string; token?: string }) =>
      run(async () => {
        // A URL that is no hub's (a typo, ftp://) is said now, not as "unavailable" at each call.
        const url = options.url ?? process.env.CTXBUS_URL;
        if (url !== undefined) {
          const { parseHubUrl } = await import('../hub-target.js');
          parseHubUrl(url, options.url !== undefined ? '--url' : 'CTXBUS_URL');
        }
        const { runStdioServer } = await import('@ctxbus/mcp');
        const running = await runStdioServer({
          ...(options.url !== undefined && { url: options.url }),
          ...(options.token !== undefined && { token: options.token }),
        });
        await running.closed;
      }),
    );
}
