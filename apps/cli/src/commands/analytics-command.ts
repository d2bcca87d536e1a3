import { CtxbusError } from '@ctxbus/core/light';
import type { Command } from 'commander';
import { printJson, printLine } from '../output.js';

// `ctxbus analytics`: context analytics (seed 000: what context is used, what's stale) for the
// token's team: what each runtime was injected, consumed and found per day, the most used
// items, the ones nobody used and the stale ones (GET /api/analytics). analytics.ts (the hub
// client) loads when it runs.

interface AnalyticsOptions {
  url?: string;
  token?: string;
  json?: boolean;
  window?: string;
  runtime?: string;
  limit?: string;
  staleDays?: string;
}

function wholeNumber(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) {
    throw new CtxbusError('validation_failed', `${flag} must be a whole number (got "${value}")`);
  }
  return Number(value);
}

export function registerAnalytics(
  program: Command,
  run: (action: () => Promise<void>) => Promise<void>,
) {
  program
    .command('analytics')
    .description(
      'which items each runtime was injected, consumed and found, per day; the most used, never used and stale ones',
    )
    .option('-w, --window <days>', 'days of use to count, ending today (UTC; 1-90)', '7')
    .option('-r, --runtime <runtime>', "only this runtime's use")
    .option('--limit <n>', 'most items in each list (1-100)', '10')
    .option('--stale-days <days>', 'days without any use after which an item is stale', '14')
    .option('--url <url>', 'hub URL (default: $CTXBUS_URL, else the hub saved by ctxbus serve)')
    .option('--token <token>', 'runtime token (default: $CTXBUS_TOKEN, else the saved one)')
    .option('--json', 'print JSON')
    .addHelpText(
      'after',
      `
Injected: the item was in a shared-context bundle the hub served that runtime (what its hooks
inject; previews do not count). Consumed: marked acted on. Searched: returned by a search.
Stale: live, current items older than --stale-days that no runtime used in that many days.
Private items show only to their own runtime's token.`,
    )
    .action((options: AnalyticsOptions) =>
      run(async () => {
        const query = {
          window: wholeNumber(options.window, '--window'),
          limit: wholeNumber(options.limit, '--limit'),
          staleDays: wholeNumber(options.staleDays, '--stale-days'),
          ...(options.runtime !== undefined && { runtime: options.runtime }),
        };
        const { analyticsLines, fetchAnalytics } = await import('./analytics.js');
        const report = await fetchAnalytics(options, query);
        if (options.json) printJson(report);
        else for (const line of analyticsLines(report)) printLine(line);
      }),
    );
}
