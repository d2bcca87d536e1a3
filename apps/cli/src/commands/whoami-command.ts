import type { Command } from 'commander';
import { printJson, printLine } from '../output.js';

// `ctxbus whoami`: whom this machine's commands act as, for which hub: the CLI's own identity
// (a person's), the admin token, and each runtime's saved token (a worker's, the bot's), with
// what overrides them from the environment. Never a secret. whoami.ts loads when it runs.

export function registerWhoamiCommand(
  program: Command,
  run: (action: () => Promise<void>) => Promise<void>,
) {
  program
    .command('whoami')
    .description("whom the CLI, the worker and the bot act as for a hub (never a token's secret)")
    .option('--url <url>', 'hub URL (default: $CTXBUS_URL, else the hub saved by ctxbus serve)')
    .option('--json', 'print JSON')
    .action((options: { url?: string; json?: boolean }) =>
      run(async () => {
        const { identities, identityLines } = await import('./whoami.js');
        const found = identities(options.url);
        if (options.json) printJson(found);
        else for (const line of identityLines(found)) printLine(line);
      }),
    );
}
