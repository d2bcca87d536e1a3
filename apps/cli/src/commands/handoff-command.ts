import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { CtxbusError } from '@ctxbus/core/light';
import type { MonitorAction } from '@ctxbus/handoff';
import type { Command } from 'commander';
import { printJson, printLine } from '../output.js';
import { renderTimerUnits } from '../systemd-unit.js';
import type { CommonOptions } from './handoff.js';

// `ctxbus handoff ...`: the commands and their options; what they do (handoff.ts, and
// @ctxbus/handoff with its YAML parser) loads when one runs.

const WORKSPACE_HELP =
  "the agent's workspace, holding .context-bus/ (default: config.yaml's workspace, else the current directory)";

const CONFIG_HELP =
  'config.yaml (default: $CONTEXT_BUS_CONFIG, else ~/.config/context-bus/config.yaml; absent: the defaults)';

function list(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

function percent(value: string): number {
  const number = Number(value);
  if (!/^\d+(\.\d+)?$/.test(value) || number > 100) {
    throw new CtxbusError(
      'validation_failed',
      `--usage must be a percentage 0-100 (got "${value}")`,
    );
  }
  return number;
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

export function registerHandoff(
  program: Command,
  run: (action: () => Promise<void>) => Promise<void>,
) {
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
models (primary, secondary, tertiary), thresholds (switch_to_secondary, proactive_summary),
safety (max_handoff_age_minutes, require_handoff_ready, retry_on_incomplete,
max_wait_seconds), notifications (enabled, channel: bus | telegram). Absent: seed 003's values.

Examples:
  ctxbus handoff init
  ctxbus handoff heartbeat --model opus --usage 87 --action "Pushed the fix" --next "Review"
  ctxbus handoff switch --to codex --reason "opus at 95%"
  ctxbus handoff status
  ctxbus handoff monitor --once        # from cron or a systemd timer (--print-timer)`,
    );

  handoff
    .command('init')
    .description(
      'create .context-bus/ with a first handoff.json, and add the handoff rules to HEARTBEAT.md (never replacing either)',
    )
    .option('--model <name>', "the model expected to start (default: config.yaml's primary)")
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

  handoff
    .command('heartbeat')
    .description('record where the work stands (creates the handoff the first time)')
    .requiredOption('--model <name>', 'the model writing (opus, codex, ...)')
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
          await publish(options, config, workspace, written, 'heartbeat');
          if (options.json) return printJson(written);
          const summary =
            written.model.usage_percent !== null &&
            written.model.usage_percent >= config.thresholds.proactive_summary;
          printLine(
            `heartbeat ${written.sequence} saved (${written.model.current})${summary ? `; ${paths.summary} written (usage ${written.model.usage_percent}% >= ${config.thresholds.proactive_summary}%)` : ''}`,
          );
        }),
    );

  handoff
    .command('switch')
    .description(
      'move the agent to another model: a stale or unready handoff first gets a final heartbeat asked for and waited on; a damaged or stale one is refused unless --force; an unready one switches with a warning',
    )
    .requiredOption('--to <model>', 'the model to switch to')
    .requiredOption('--reason <text>', 'why (a limit reached, a failure, ...)')
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
          to: string;
          reason: string;
          maxAge?: number;
          wait?: number;
          force?: boolean;
        },
      ) =>
        run(async () => {
          const { publish, readUsage, resumeNote, switchModel, switchSafety, targetOf } =
            await import('./handoff.js');
          const { config, workspace, paths } = targetOf(options);
          const safety = switchSafety(config);
          const usageBefore = readUsage(paths);
          const result = await switchModel(paths, {
            to: options.to,
            reason: options.reason,
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
          await publish(options, config, workspace, result.handoff, 'switch', usageBefore);
          if (options.json) return printJson(result);
          printLine(resumeNote(result.handoff) ?? `switched to ${result.handoff.model.current}`);
        }),
    );

  handoff
    .command('monitor')
    .description(
      "seed 003's background monitor: reads the usage heartbeats report and acts at config.yaml's thresholds (proactive_summary: writes rolling-summary.md; switch_to_secondary: switches to the next model, after asking for a final heartbeat)",
    )
    .option('--once', 'one pass, then exit (for cron or a systemd timer)')
    .option(
      '--interval <minutes>',
      'minutes between passes in the loop, and for the timer (default 10)',
      intervalMinutes,
    )
    .option(
      '--print-timer',
      'print a systemd user service and timer running `monitor --once`, and how to install them',
    )
    .option('--print-cron', 'print a crontab line running `monitor --once`')
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

Every 10 minutes from cron (crontab -e):
  ctxbus handoff monitor --print-cron --workspace ~/clawd
Or a systemd user timer:
  ctxbus handoff monitor --print-timer --workspace ~/clawd`,
    )
    .action(
      (
        options: CommonOptions & {
          once?: boolean;
          interval?: number;
          printTimer?: boolean;
          printCron?: boolean;
        },
      ) =>
        run(async () => {
          const { cronWord, monitorCommand, monitorLine, monitorOnce, publish, targetOf } =
            await import('./handoff.js');
          const { config, workspace, paths } = targetOf(options);
          const every = options.interval ?? 10;
          if (options.printTimer || options.printCron) {
            const command = monitorCommand(workspace, options);
            if (options.printCron) {
              const words = [
                ...command.environment.map(([name, value]) => `${name}=${cronWord(value)}`),
                ...command.execStart.map(cronWord),
              ];
              printLine(
                `*/${every} * * * * ${words.join(' ')} >> ${cronWord(join(paths.dir, 'monitor.log'))} 2>&1`,
              );
            }
            if (options.printTimer) {
              const name = 'ctxbus-handoff-monitor';
              const units = renderTimerUnits({
                ...command,
                name,
                description: `ctxbus handoff monitor for ${workspace}`,
                everyMinutes: every,
              });
              printLine(`# ~/.config/systemd/user/${name}.service\n${units.service}`);
              printLine(`# ~/.config/systemd/user/${name}.timer\n${units.timer}`);
              printLine(
                `# then: systemctl --user daemon-reload && systemctl --user enable --now ${name}.timer`,
              );
            }
            return;
          }
          const pass = async (): Promise<MonitorAction> => {
            const action = await monitorOnce(paths, config);
            printLine(monitorLine(paths, config, action));
            if (action.action === 'switched') {
              for (const warning of action.result.warnings) {
                process.stderr.write(`ctxbus: warning: ${warning}\n`);
              }
              await publish(
                options,
                config,
                workspace,
                action.result.handoff,
                'switch',
                action.usage,
              );
            }
            return action;
          };
          if (options.once) {
            const action = await pass();
            if (action.action === 'stuck') throw new CtxbusError('conflict', action.reason);
            return;
          }
          // The loop: a pass now, then one every --interval minutes, until SIGINT or SIGTERM.
          let stop: () => void = () => {};
          const stopped = new Promise<void>((resolveStop) => {
            stop = resolveStop;
          });
          let stopping = false;
          const onSignal = () => {
            stopping = true;
            stop();
          };
          process.once('SIGINT', onSignal);
          process.once('SIGTERM', onSignal);
          try {
            while (!stopping) {
              try {
                await pass();
              } catch (error) {
                process.stderr.write(`ctxbus: monitor: ${(error as Error).message}\n`);
              }
              let timer: NodeJS.Timeout | undefined;
              await Promise.race([
                stopped,
                new Promise((resolveWait) => {
                  timer = setTimeout(resolveWait, every * 60_000);
                }),
              ]);
              clearTimeout(timer);
            }
          } finally {
            process.off('SIGINT', onSignal);
            process.off('SIGTERM', onSignal);
          }
        }),
    );
}
