import { join } from 'node:path';
import { CtxbusError } from '@ctxbus/core/light';
import type { Command } from 'commander';
import type { Cron } from 'croner';
import { printJson, printLine } from '../output.js';
import type { DirOptions } from './shared-context.js';

// `ctxbus shared-context ...`: the commands; shared-context.ts and @ctxbus/shared-context load when one runs.

const DIR_HELP = 'the shared-context directory (default: ~/.openclaw/workspace/shared-context)';

const SHARED_CONTEXT_HELP = `
The directory (seed 001): priorities.md (a curated top section), priorities.inbox.md and
feedback/inbox.jsonl (append-only), agent-outputs/<agent>/ and staging/<agent>/ (each agent
its own), roundtable/ and cross-signals/ (the curator's). The curator never deletes: merged
staging files move to staging-archive/<date>/.

Cross-signal enhancer (off by default): set CTXBUS_SHARED_CONTEXT_LLM_URL (an OpenAI-compatible
base such as http://127.0.0.1:11434/v1) and CTXBUS_SHARED_CONTEXT_LLM_MODEL (and _API_KEY,
_TIMEOUT_MS). On any failure the deterministic result stands, with a warning.

Examples:
  ctxbus shared-context init
  ctxbus shared-context curate --date 2026-02-04
  ctxbus shared-context bridge --curate-at "15 6 * * *"
  openclaw cron add --name shared-context-curator --cron "15 6 * * *" --command "ctxbus shared-context curate" --no-deliver`;

export function registerSharedContext(
  program: Command,
  run: (action: () => Promise<void>) => Promise<void>,
) {
  const group = program
    .command('shared-context')
    .description('a multi-agent shared-context directory (seed 001) and its bridge to the hub')
    .addHelpText('after', SHARED_CONTEXT_HELP);

  group
    .command('init')
    .description('create the directory, its subdirectories and templates (never overwrites)')
    .option('--dir <dir>', DIR_HELP)
    .option('--json', 'print JSON')
    .action((options: DirOptions) =>
      run(async () => {
        const { bootstrapSharedContext, pathsOf } = await import('./shared-context.js');
        const paths = pathsOf(options);
        const result = bootstrapSharedContext(paths);
        if (options.json) return printJson({ root: paths.root, ...result });
        printLine(
          result.created.length > 0
            ? `created in ${paths.root}: ${result.created.join(', ')}`
            : `${paths.root} is complete; nothing to create`,
        );
      }),
    );

  group
    .command('curate')
    .description(
      'the daily curator: merge staging and the inbox, write the roundtable and cross-signals',
    )
    .option('--dir <dir>', DIR_HELP)
    .option('--date <YYYY-MM-DD>', 'the day to curate (default: today, UTC)')
    .option('--json', 'print JSON')
    .action((options: DirOptions & { date?: string }) =>
      run(async () => {
        const { curateDaily, llmFromEnvironment, parseDateOption, pathsOf } = await import(
          './shared-context.js'
        );
        const llm = llmFromEnvironment();
        const result = await curateDaily(pathsOf(options), {
          now: parseDateOption(options.date),
          ...(llm && { llm }),
        });
        if (options.json) return printJson(result);
        printLine(
          `curated ${result.date}: ${result.stagedMerged.length} staged, ${result.inboxMerged.length} inbox entries, ${result.feedbackRolled} feedback lines rolled; wrote ${result.roundtable}, ${result.crossSignals}`,
        );
        for (const warning of result.warnings)
          process.stderr.write(`ctxbus: warning: ${warning}\n`);
      }),
    );

  group
    .command('cross-signals')
    .description('entities and topics that several agents mention within a window')
    .option('--dir <dir>', DIR_HELP)
    .option('--date <YYYY-MM-DD>', 'the window ends this day (default: now)')
    .option('--window <days>', 'window in days', '7')
    .option('--min-agents <n>', 'distinct agents a signal needs', '2')
    .option('--json', 'print the report')
    .action((options: DirOptions & { date?: string; window: string; minAgents: string }) =>
      run(async () => {
        const { detectCrossSignals, llmFromEnvironment, parseDateOption, pathsOf, positiveInt } =
          await import('./shared-context.js');
        const llm = llmFromEnvironment();
        const report = await detectCrossSignals(pathsOf(options), {
          now: parseDateOption(options.date),
          windowDays: positiveInt(options.window, '--window'),
          minAgents: positiveInt(options.minAgents, '--min-agents'),
          ...(llm && { llm }),
        });
        if (options.json) return printJson(report);
        for (const signal of report.signals) {
          printLine(`${signal.label}: ${signal.agents.join(', ')} (${signal.counts.files} files)`);
        }
        printLine(
          `${report.signals.length} signals from ${report.outputsScanned} outputs; wrote ${report.relPath}`,
        );
        for (const warning of report.warnings)
          process.stderr.write(`ctxbus: warning: ${warning}\n`);
      }),
    );

  group
    .command('weekly')
    .description("the weekly compound: what worked and what didn't, this ISO week")
    .option('--dir <dir>', DIR_HELP)
    .option('--date <YYYY-MM-DD>', 'a day of the week to compound (default: today)')
    .option('--promote', 'also write the keyed summary item to the hub (--url, --token)')
    .option('--url <url>', 'hub URL for --promote')
    .option('--token <token>', 'runtime token for --promote')
    .option('--json', 'print JSON')
    .action(
      (options: DirOptions & { date?: string; promote?: boolean; url?: string; token?: string }) =>
        run(async () => {
          const { createClient, hubUrl, parseDateOption, pathsOf, runtimeToken, weeklyCompound } =
            await import('./shared-context.js');
          const result = await weeklyCompound(pathsOf(options), {
            now: parseDateOption(options.date),
          });
          if (options.promote) {
            const url = hubUrl(options.url);
            await createClient({ url, token: runtimeToken(url, options.token) }).write(
              result.items,
            );
          }
          if (options.json) return printJson(result);
          printLine(
            `wrote ${result.relPath}${options.promote ? ` and promoted ${result.items.map((item) => item.key).join(', ')}` : ''}`,
          );
        }),
    );

  group
    .command('bridge')
    .description('keep the directory and the hub in step, both ways, until SIGINT/SIGTERM')
    .option('--dir <dir>', DIR_HELP)
    .option('--url <url>', 'hub URL (default: $CTXBUS_URL, else the hub saved by ctxbus serve)')
    .option('--token <token>', 'runtime token (default: $CTXBUS_TOKEN, else the saved one)')
    .option('--state <file>', 'the bridge state (default: <dir>/.bridge-state.json)')
    .option('--rescan <seconds>', 'full rescan interval besides the file watcher', '30')
    .option(
      '--agent-runtime <runtime>',
      "the runtime whose agents own the directory: its bus items are written as the agent they name; another runtime's only under agent-outputs/<runtime>/",
      'openclaw',
    )
    .option(
      '--curate-at <cron>',
      'also run the daily curator on this cron schedule (croner syntax)',
    )
    .option('--once', 'sync once and exit')
    .action(
      (
        options: DirOptions & {
          url?: string;
          token?: string;
          state?: string;
          rescan: string;
          agentRuntime: string;
          curateAt?: string;
          once?: boolean;
        },
      ) =>
        run(async () => {
          const {
            Cron,
            bootstrapSharedContext,
            createClient,
            createSharedContextBridge,
            curateDaily,
            hubUrl,
            llmFromEnvironment,
            pathsOf,
            pino,
            positiveInt,
            runtimeToken,
          } = await import('./shared-context.js');
          const paths = pathsOf(options);
          bootstrapSharedContext(paths);
          const url = hubUrl(options.url);
          const logger = pino(
            {
              base: { component: 'shared-context-bridge' },
              level: process.env.CTXBUS_LOG_LEVEL ?? 'info',
            },
            pino.destination(2),
          );
          const bridge = createSharedContextBridge({
            paths,
            client: createClient({ url, token: runtimeToken(url, options.token) }),
            stateFile: options.state ?? join(paths.root, '.bridge-state.json'),
            agentRuntime: options.agentRuntime,
            rescanIntervalMs: positiveInt(options.rescan, '--rescan') * 1000,
            logger,
          });
          if (options.once) {
            const report = await bridge.syncOnce();
            if (options.json) return printJson(report);
            return printLine(
              `synced: ${report.published.length} published, ${report.written.length} written, last seq ${report.lastSeq}`,
            );
          }
          let job: Cron | null = null;
          if (options.curateAt) {
            const llm = llmFromEnvironment();
            try {
              job = new Cron(options.curateAt, { protect: true, catch: true }, async () => {
                const result = await curateDaily(paths, { now: new Date(), ...(llm && { llm }) });
                logger.info(
                  { roundtable: result.roundtable, warnings: result.warnings },
                  'curated',
                );
              });
            } catch (error) {
              throw new CtxbusError(
                'validation_failed',
                `--curate-at: ${(error as Error).message}`,
              );
            }
          }
          const stopped = new Promise<void>((resolve) => {
            for (const signal of ['SIGINT', 'SIGTERM'] as const)
              process.once(signal, () => resolve());
          });
          await bridge.start();
          printLine(
            `bridge ready: ${paths.root} <-> ${url}${job ? `; curator at "${options.curateAt}" (next ${job.nextRun()?.toISOString()})` : ''}`,
          );
          await stopped;
          job?.stop();
          await bridge.stop();
        }),
    );
}
