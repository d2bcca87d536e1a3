import { mkdirSync } from 'node:fs';
import { CtxbusError } from '@ctxbus/core/light';
import type { Command } from 'commander';
import { printJson, printLine } from '../output.js';
import type { CommonOptions } from './handoff.js';
import type { MonitorOptions } from './handoff-monitor.js';
import { SCHEDULERS, type Scheduler } from './handoff-schedule.js';

// `ctxbus handoff ...`: the commands and their options; what they do (handoff.ts, and
// @ctxbus/handoff with its YAML parser) loads when one runs.

const WORKSPACE_HELP =
  "the agent's workspace, holding .context-bus/ (default: config.yaml's workspace, else the current directory)";

const CONFIG_HELP =
  'config.yaml (default: $CONTEXT_BUS_CONFIG, else ~/.config/context-bus/config.yaml; absent: the defaults)';

function list(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

function percent(value: string, flag = '--usage'): number {
  const number = Number(value);
  if (!/^\d+(\.\d+)?$/.test(value) || number > 100) {
    throw new CtxbusError(
      'validation_failed',
      `${flag} must be a percentage 0-100 (got "${value}")`,
    );
  }
  return number;
}

/** A model's name as a flag gives it: not blank (the handoff would name no model). */
function modelName(flag: string): (value: string) => string {
  return (value) => {
    if (value.trim() === '') {
      throw new CtxbusError('validation_failed', `${flag} must name a model (got a blank value)`);
    }
    return value;
  };
}

function isoTime(value: string): string {
  const time = Date.parse(value);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(value) || Number.isNaN(time)) {
    throw new CtxbusError(
      'validation_failed',
      `--resets-at must be an ISO 8601 time (got "${value}")`,
    );
  }
  return new Date(time).toISOString();
}

function scheduler(value: string): Scheduler {
  if (!(SCHEDULERS as readonly string[]).includes(value)) {
    throw new CtxbusError(
      'validation_failed',
      `--scheduler must be one of ${SCHEDULERS.join(', ')} (got "${value}")`,
    );
  }
  return value as Scheduler;
}

function usageRuntime(value: string): 'openclaw' {
  if (value !== 'openclaw') {
    throw new CtxbusError(
      'validation_failed',
      `the runtime to ask must be openclaw (got "${value}"); Claude Code reports through its status line (ctxbus handoff statusline)`,
    );
  }
  return value;
}

function whole(flag: string, unit: string, min: number) {
  return (value: string): number => {
    if (!/^\d+$/.test(value) || Number(value) < min) {
      throw new CtxbusError('validation_failed', `${flag} must be whole ${unit} (got "${value}")`);
    }
    return Number(value);
  };
}

const minutes = whole('--max-age', 'minutes', 1);

const waitSeconds = whole('--wait', 'seconds', 0);

const intervalMinutes = whole('--interval', 'minutes', 1);

type Run = (action: () => Promise<void>) => Promise<void>;

export function registerHandoff(program: Command, run: Run): void {
  const handoff = program
    .command('handoff')
    .description(
      "seed 003's model-switch handoff: an agent's state in .context-bus/ (checksummed, sequenced, atomic), so another model resumes where one stopped",
    )
    .addHelpText(
      'after',
      `
Files (in the workspace): .context-bus/handoff.json (schema v2), rolling-summary.md,
history.jsonl (append-only), .lock, heartbeat-request.json (while a switch waits for a final
heartbeat). A file changed by hand fails its checksum and is refused.

Config: ~/.config/context-bus/config.yaml ($CONTEXT_BUS_CONFIG or --config to use another):
models (primary, secondary, tertiary), thresholds (switch_to_secondary, switch_back,
proactive_summary), safety (max_handoff_age_minutes, require_handoff_ready,
retry_on_incomplete, max_wait_seconds), notifications (enabled, channel: bus | telegram). Absent: seed 003's values.

Examples:
  ctxbus handoff init
  ctxbus handoff heartbeat --model opus --usage 87 --action "Pushed the fix" --next "Review"
  ctxbus handoff switch --to codex --reason "opus at 95%"
  ctxbus handoff switch --back         # to model.previous
  ctxbus handoff status
  ctxbus handoff adopt                 # take a handoff.json seed 003's own scripts wrote
  ctxbus handoff monitor --install     # systemd timer, crontab entry or launchd agent
  ctxbus handoff statusline            # Claude Code's statusLine command: records plan usage
  ctxbus handoff usage --from openclaw # records OpenClaw's provider usage`,
    );

  initCommand(handoff, run);
  statusCommand(handoff, run);
  adoptCommand(handoff, run);
  heartbeatCommand(handoff, run);
  switchCommand(handoff, run);
  monitorCommand(handoff, run);
  statuslineCommand(handoff, run);
  usageCommand(handoff, run);
}

function initCommand(handoff: Command, run: Run): void {
  handoff
    .command('init')
    .description(
      'create .context-bus/ with a first handoff.json, and add the handoff rules to HEARTBEAT.md (never replacing either)',
    )
    .option(
      '--model <name>',
      "the model expected to start (default: config.yaml's primary)",
      modelName('--model'),
    )
    .option('--workspace <dir>', WORKSPACE_HELP)
    .option('--config <file>', CONFIG_HELP)
    .action((options: CommonOptions & { model?: string }) =>
      run(async () => {
        const { init, startHandoff, targetOf } = await import('./handoff.js');
        const { config, workspace, paths } = targetOf(options);
        const result = init(workspace);
        mkdirSync(paths.dir, { recursive: true });
        const model = options.model ?? config.models.primary;
        const started = await startHandoff(paths, model);
        const first = started
          ? `${paths.handoff} written (${model}, not started)`
          : `${paths.handoff} kept`;
        printLine(
          `${result.kind === 'openclaw' ? 'OpenClaw agent workspace' : 'project'} ${workspace}: ${paths.dir} ready; ${first}; ${result.added ? `rules added to ${result.heartbeatFile}` : `${result.heartbeatFile} already has the rules`}`,
        );
      }),
    );
}

function adoptCommand(handoff: Command, run: Run): void {
  handoff
    .command('adopt')
    .description(
      "take a handoff.json that fails only its checksum as it is (seed 003's own scripts hash bytes that are not in the file; or you edited it): the same content and timestamp (a stale file stays stale for switch), signed, one sequence on, 'adopt' in the history. Nothing changes for a file that passes its checks; one that is not a v2 handoff is refused (heartbeat --force starts over)",
    )
    .option('--workspace <dir>', WORKSPACE_HELP)
    .option('--config <file>', CONFIG_HELP)
    .option('--json', 'print the handoff as JSON')
    .action((options: CommonOptions & { json?: boolean }) =>
      run(async () => {
        const { adoptHandoff, targetOf } = await import('./handoff.js');
        const { paths } = targetOf(options);
        const { handoff, adopted } = await adoptHandoff(paths);
        if (options.json) return printJson({ adopted, handoff });
        printLine(
          adopted
            ? `adopted ${paths.handoff} as sequence ${handoff.sequence}: ${handoff.model.current} on ${handoff.task.description || 'no task'} [${handoff.task.status}]`
            : `${paths.handoff} passes its checks: nothing to adopt`,
        );
      }),
    );
}

function statusCommand(handoff: Command, run: Run): void {
  handoff
    .command('status')
    .description('the handoff: model, task, age, whether it is ready; exit 4 when there is none')
    .option('--workspace <dir>', WORKSPACE_HELP)
    .option('--config <file>', CONFIG_HELP)
    .option('--json', 'the handoff and its last history entries as JSON')
    .action((options: CommonOptions) =>
      run(async () => {
        const { describe, readHandoff, readHistory, targetOf } = await import('./handoff.js');
        const { paths } = targetOf(options);
        const current = readHandoff(paths);
        if (!current) {
          throw new CtxbusError(
            'not_found',
            `no handoff in ${paths.dir} (ctxbus handoff heartbeat)`,
          );
        }
        if (options.json)
          return printJson({ handoff: current, history: readHistory(paths).slice(-10) });
        for (const line of describe(paths, current, new Date())) printLine(line);
      }),
    );
}

function heartbeatCommand(handoff: Command, run: Run): void {
  handoff
    .command('heartbeat')
    .description('record where the work stands (creates the handoff the first time)')
    .requiredOption('--model <name>', 'the model writing (opus, codex, ...)', modelName('--model'))
    .option('--usage <percent>', "the model's usage of its limit (0-100)")
    .option('--action <text>', 'something just done (repeatable; the last five are kept)', list)
    .option('--next <text>', 'a next step (repeatable; replaces the list)', list)
    .option('--decision <text>', 'a decision (repeatable; replaces the list)', list)
    .option('--blocker <text>', 'a blocker (repeatable; replaces the list)', list)
    .option('--task <text>', 'what the agent works on')
    .option('--status <text>', 'its status (default in_progress)')
    .option('--project <dir>', 'the project it is in')
    .option('--file <path>', 'a file touched (repeatable)', list)
    .option('--not-ready', 'mark the state incomplete for another model')
    .option('--force', 'start over when the file fails its checks')
    .option('--workspace <dir>', WORKSPACE_HELP)
    .option('--config <file>', CONFIG_HELP)
    .option('--publish', 'write it to the hub as a status item (also on --url or --token)')
    .option(
      '--no-publish',
      "do not (default: publish when config.yaml's notifications are on and a hub and token are known)",
    )
    .option('--url <url>', 'hub URL (default: $CTXBUS_URL, else the saved hub)')
    .option('--token <token>', 'runtime token (default: $CTXBUS_TOKEN, else the saved one)')
    .option('--json', 'print the handoff as JSON')
    .action(
      (
        options: CommonOptions & {
          model: string;
          usage?: string;
          action?: string[];
          next?: string[];
          decision?: string[];
          blocker?: string[];
          task?: string;
          status?: string;
          project?: string;
          file?: string[];
          notReady?: boolean;
          force?: boolean;
        },
      ) =>
        run(async () => {
          const { heartbeat, publish, targetOf } = await import('./handoff.js');
          const { config, workspace, paths } = targetOf(options);
          const written = await heartbeat(
            paths,
            {
              model: options.model,
              ...(options.usage !== undefined && { usagePercent: percent(options.usage) }),
              ...(options.action && { actions: options.action }),
              ...(options.next && { nextSteps: options.next }),
              ...(options.decision && { decisions: options.decision }),
              ...(options.blocker && { blockers: options.blocker }),
              ...((options.task || options.status || options.project) && {
                task: {
                  ...(options.task && { description: options.task }),
                  ...(options.status && { status: options.status }),
                  ...(options.project && { project: options.project }),
                },
              }),
              ...(options.file && { files: options.file }),
              ready: !options.notReady,
            },
            {
              ...(options.force && { force: true }),
              summaryAtPercent: config.thresholds.proactive_summary,
            },
          );
          const summary =
            written.model.usage_percent !== null &&
            written.model.usage_percent >= config.thresholds.proactive_summary;
          // What was saved is said first: a publish that fails after it is said on its own.
          if (options.json) printJson(written);
          else {
            printLine(
              `heartbeat ${written.sequence} saved (${written.model.current})${summary ? `; ${paths.summary} written (usage ${written.model.usage_percent}% >= ${config.thresholds.proactive_summary}%)` : ''}`,
            );
          }
          await publish(options, config, workspace, written, 'heartbeat');
        }),
    );
}

function switchCommand(handoff: Command, run: Run): void {
  handoff
    .command('switch')
    .description(
      'move the agent to another model: a stale or unready handoff first gets a final heartbeat asked for and waited on; a damaged or stale one is refused unless --force; an unready one switches with a warning',
    )
    .option('--to <model>', 'the model to switch to', modelName('--to'))
    .option(
      '--back',
      "switch back to the model before this one (model.previous), as the monitor does at config.yaml's switch_back",
    )
    .option('--reason <text>', 'why (a limit reached, a failure, ...; required with --to)')
    .option(
      '--max-age <minutes>',
      "refuse a handoff older than this (default: config.yaml's safety.max_handoff_age_minutes, 5)",
      minutes,
    )
    .option(
      '--wait <seconds>',
      "how long to wait for a final heartbeat (default: safety.max_wait_seconds, 60; 0: don't ask)",
      waitSeconds,
    )
    .option('--force', 'switch anyway')
    .option('--workspace <dir>', WORKSPACE_HELP)
    .option('--config <file>', CONFIG_HELP)
    .option('--publish', 'tell the hub (also on --url or --token)')
    .option(
      '--no-publish',
      "do not (default: publish when config.yaml's notifications are on and a hub and token are known)",
    )
    .option('--url <url>', 'hub URL (default: $CTXBUS_URL, else the saved hub)')
    .option('--token <token>', 'runtime token (default: $CTXBUS_TOKEN, else the saved one)')
    .option('--json', 'print the result as JSON')
    .action(
      (
        options: CommonOptions & {
          to?: string;
          back?: boolean;
          reason?: string;
          maxAge?: number;
          wait?: number;
          force?: boolean;
        },
      ) =>
        run(async () => {
          const {
            publish,
            readHandoff,
            readUsage,
            resumeNote,
            switchModel,
            switchSafety,
            switchTarget,
            targetOf,
          } = await import('./handoff.js');
          const { config, workspace, paths } = targetOf(options);
          const { to, reason } = switchTarget(options, options.back ? readHandoff(paths) : null);
          const safety = switchSafety(config);
          const usageBefore = readUsage(paths);
          const result = await switchModel(paths, {
            to,
            reason,
            ...safety,
            ...(options.maxAge !== undefined && { maxAgeMs: options.maxAge * 60_000 }),
            ...(options.wait !== undefined && { waitMs: options.wait * 1_000 }),
            ...(options.force && { force: true }),
            onRequest: (request) =>
              process.stderr.write(
                `ctxbus: waiting up to ${options.wait ?? config.safety.max_wait_seconds} s for a final heartbeat (${paths.heartbeatRequest}, after sequence ${request.after_sequence})\n`,
              ),
          });
          for (const warning of result.warnings)
            process.stderr.write(`ctxbus: warning: ${warning}\n`);
          if (options.json) printJson(result);
          else
            printLine(resumeNote(result.handoff) ?? `switched to ${result.handoff.model.current}`);
          await publish(options, config, workspace, result.handoff, 'switch', usageBefore);
        }),
    );
}

function monitorCommand(handoff: Command, run: Run): void {
  handoff
    .command('monitor')
    .description(
      "seed 003's background monitor: reads the usage (the runtime's report, else the agent's heartbeat) and acts at config.yaml's thresholds (proactive_summary: writes rolling-summary.md; switch_to_secondary: switches to the next model, after asking for a final heartbeat; switch_back: returns to the primary once its runtime reports it that low)",
    )
    .option('--once', 'one pass, then exit (what the scheduler runs)')
    .option(
      '--interval <minutes>',
      'minutes between passes in the loop, and for the scheduler (default 10)',
      intervalMinutes,
    )
    .option(
      '--install',
      'schedule `monitor --once` for this workspace: launchd on macOS, a systemd user timer where systemctl --user works, else a crontab entry',
    )
    .option(
      '--uninstall',
      "remove this workspace's scheduled monitor (from systemd, cron and launchd)",
    )
    .option(
      '--scheduler <name>',
      `with --install: ${SCHEDULERS.join(', ')} (default auto)`,
      scheduler,
    )
    .option('--dry-run', 'with --install: print what would be written, change nothing')
    .option(
      '--usage-from <runtime>',
      'before each pass, record the usage the runtime reports: openclaw (`openclaw status --usage --json`)',
      usageRuntime,
    )
    .option(
      '--provider <id>',
      'with --usage-from openclaw: the provider whose windows count (default: the first with any)',
    )
    .option(
      '--usage-model <name>',
      "with --usage-from: the model the report is for (default: the handoff's current model)",
    )
    .option(
      '--print-timer',
      'print the systemd user service and timer (--install --dry-run --scheduler systemd)',
    )
    .option('--print-cron', 'print the crontab line (--install --dry-run --scheduler cron)')
    .option('--workspace <dir>', WORKSPACE_HELP)
    .option('--config <file>', CONFIG_HELP)
    .option('--publish', 'tell the hub about a switch (also on --url or --token)')
    .option(
      '--no-publish',
      "do not (default: publish when config.yaml's notifications are on and a hub and token are known)",
    )
    .option('--url <url>', 'hub URL (default: $CTXBUS_URL, else the saved hub)')
    .option('--token <token>', 'runtime token (default: $CTXBUS_TOKEN, else the saved one)')
    .addHelpText(
      'after',
      `
Exit codes (--once): 0 acted or nothing to do, 5 at the switch threshold with no model left,
2 a bad config.yaml or a damaged handoff. The loop logs a failed pass and goes on.
--install: 4 (not found) when the machine has no scheduler (no systemd user manager, no crontab);
name one with --scheduler to see what it would get (--dry-run).

Usage: Claude Code reports its plan's rate limits to its status line command (ctxbus handoff
statusline); --usage-from openclaw asks OpenClaw before each pass. A runtime's report since
the model became current wins over the heartbeat's --usage.

Schedule it (every 10 minutes; the crontab command is $CTXBUS_CRONTAB, else crontab):
  ctxbus handoff monitor --install --workspace ~/clawd
  ctxbus handoff monitor --install --dry-run --scheduler cron
  ctxbus handoff monitor --uninstall --workspace ~/clawd`,
    )
    .action((options: MonitorOptions) =>
      run(async () => {
        const { runMonitor } = await import('./handoff-monitor.js');
        await runMonitor(options);
      }),
    );
}

function statuslineCommand(handoff: Command, run: Run): void {
  handoff
    .command('statusline')
    .description(
      "Claude Code's status line command: reads the JSON Claude Code gives it on stdin, records the plan usage it reports (rate_limits: five_hour, seven_day) for the monitor, and prints the line to show",
    )
    .option(
      '--model <name>',
      "the config.yaml model Claude Code runs (default: config.yaml's primary)",
    )
    .option('--workspace <dir>', WORKSPACE_HELP)
    .option('--config <file>', CONFIG_HELP)
    .addHelpText(
      'after',
      `
In ~/.claude/settings.json (or a project's .claude/settings.json):
  "statusLine": { "type": "command", "command": "ctxbus handoff statusline --workspace ~/clawd" }

Claude Code reports rate_limits for plan (Pro, Max, Team) sessions only; with an API key the
line shows "no plan usage reported" and the agent's heartbeats stay the monitor's source. A
problem is shown on the line itself, never as a failure (Claude Code would blank the line).`,
    )
    .action((options: CommonOptions & { model?: string }) =>
      run(async () => {
        const { targetOf } = await import('./handoff.js');
        const { statusLine } = await import('./handoff-usage.js');
        const { config, paths } = targetOf(options);
        let stdin = '';
        for await (const chunk of process.stdin) stdin += chunk;
        printLine(await statusLine(stdin, paths, config, options.model));
      }),
    );
}

function usageCommand(handoff: Command, run: Run): void {
  handoff
    .command('usage')
    .description(
      "record a model's usage as its runtime reports it (what the monitor reads): --from openclaw asks `openclaw status --usage --json`; --percent records a number read elsewhere (Claude Code's /usage)",
    )
    .option('--from <runtime>', 'openclaw: run `openclaw status --usage --json`', usageRuntime)
    .option('--percent <percent>', 'the usage to record, 0-100 (source: manual)')
    .option('--resets-at <time>', 'with --percent: when its window resets (ISO 8601)')
    .option(
      '--provider <id>',
      'with --from openclaw: the provider whose windows count (default: the first with any)',
    )
    .option('--model <name>', "the model the report is for (default: the handoff's current model)")
    .option('--workspace <dir>', WORKSPACE_HELP)
    .option('--config <file>', CONFIG_HELP)
    .option('--json', "print every model's latest report as JSON")
    .action(
      (
        options: CommonOptions & {
          from?: 'openclaw';
          percent?: string;
          resetsAt?: string;
          provider?: string;
          model?: string;
        },
      ) =>
        run(async () => {
          const { targetOf } = await import('./handoff.js');
          const { collectOpenClawUsage, describeReport, reportModel } = await import(
            './handoff-usage.js'
          );
          const { readUsageReports, recordUsage } = await import('@ctxbus/handoff');
          const { config, paths } = targetOf(options);
          const model = reportModel(paths, config, options.model);
          if (options.from && options.percent !== undefined) {
            throw new CtxbusError('validation_failed', 'give --from or --percent, not both');
          }
          if (options.from === 'openclaw') {
            const report = await collectOpenClawUsage(paths, model, options.provider);
            if (!options.json) printLine(describeReport(model, report));
          } else if (options.percent !== undefined) {
            const resetsAt = options.resetsAt ? isoTime(options.resetsAt) : null;
            const report = await recordUsage(paths, model, {
              usage_percent: percent(options.percent, '--percent'),
              window: null,
              resets_at: resetsAt,
              source: 'manual',
              reported_at: new Date().toISOString(),
            });
            if (!options.json) printLine(describeReport(model, report));
          } else if (!options.json) {
            const reports = readUsageReports(paths);
            const names = Object.keys(reports);
            if (names.length === 0) printLine(`no runtime has reported usage in ${paths.usage}`);
            for (const name of names) printLine(describeReport(name, reports[name] ?? null));
          }
          if (options.json) printJson(readUsageReports(paths));
        }),
    );
}
