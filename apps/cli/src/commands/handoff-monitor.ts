import { CtxbusError } from '@ctxbus/core/light';
import type { HandoffConfig, HandoffPaths, MonitorAction } from '@ctxbus/handoff';
import { printLine } from '../output.js';
import type { CommonOptions } from './handoff.js';
import { monitorJob, monitorLine, monitorOnce, publish, targetOf } from './handoff.js';
import type { Scheduler } from './handoff-schedule.js';

// `ctxbus handoff monitor`: schedule it, run one pass, or loop (loaded when the command runs).

export interface MonitorOptions extends CommonOptions {
  once?: boolean;
  interval?: number;
  install?: boolean;
  uninstall?: boolean;
  scheduler?: Scheduler;
  dryRun?: boolean;
  usageFrom?: 'openclaw';
  provider?: string;
  usageModel?: string;
  printTimer?: boolean;
  printCron?: boolean;
}

interface Target {
  config: HandoffConfig;
  workspace: string;
  paths: HandoffPaths;
}

export async function runMonitor(options: MonitorOptions): Promise<void> {
  const target = targetOf(options);
  const every = options.interval ?? 10;
  if (options.install || options.uninstall || options.printTimer || options.printCron) {
    return schedule(options, target, every);
  }
  if (options.once) {
    const action = await pass(options, target);
    if (action.action === 'stuck') throw new CtxbusError('conflict', action.reason);
    return;
  }
  await loop(options, target, every);
}

/** --install, --uninstall, --dry-run, --print-timer, --print-cron: the scheduled `--once`. */
async function schedule(options: MonitorOptions, target: Target, every: number): Promise<void> {
  const extra = [
    ...(options.usageFrom ? ['--usage-from', options.usageFrom] : []),
    ...(options.provider ? ['--provider', options.provider] : []),
    ...(options.usageModel ? ['--usage-model', options.usageModel] : []),
  ];
  const job = monitorJob(target.workspace, target.paths, options, every, extra);
  const install = await import('./handoff-install.js');
  if (options.uninstall) return install.uninstallMonitor(job);
  const asked = options.printTimer ? 'systemd' : options.printCron ? 'cron' : options.scheduler;
  if (options.dryRun || options.printTimer || options.printCron) {
    const chosen = install.pickScheduler(asked ?? 'auto');
    return void process.stdout.write(install.describeInstall(job, chosen));
  }
  return install.installMonitor(job, asked ?? 'auto');
}

/** --usage-from openclaw: the runtime's own report, recorded before the pass reads it. */
async function collectUsage(options: MonitorOptions, { config, paths }: Target): Promise<void> {
  if (options.usageFrom !== 'openclaw') return;
  const { collectOpenClawUsage, describeReport, reportModel } = await import('./handoff-usage.js');
  const model = reportModel(paths, config, options.usageModel);
  const report = await collectOpenClawUsage(paths, model, options.provider);
  printLine(`usage: ${describeReport(model, report)}`);
}

/** One pass: the usage, the thresholds, and a switch told to the hub. */
async function pass(options: MonitorOptions, target: Target): Promise<MonitorAction> {
  const { config, workspace, paths } = target;
  try {
    await collectUsage(options, target);
  } catch (error) {
    // The agent's heartbeat is the fallback: a runtime that cannot say is no reason to stop.
    process.stderr.write(`ctxbus: warning: ${(error as Error).message}\n`);
  }
  const action = await monitorOnce(paths, config);
  printLine(monitorLine(paths, config, action));
  if (action.action === 'switched' || action.action === 'switched-back') {
    for (const warning of action.result.warnings) {
      process.stderr.write(`ctxbus: warning: ${warning}\n`);
    }
    const usage = action.action === 'switched' ? action.usage : null;
    await publish(options, config, workspace, action.result.handoff, 'switch', usage);
  }
  return action;
}

/** The loop: a pass now, then one every --interval minutes, until SIGINT or SIGTERM. */
async function loop(options: MonitorOptions, target: Target, every: number): Promise<void> {
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    while (!stop.signal.aborted) {
      try {
        await pass(options, target);
      } catch (error) {
        process.stderr.write(`ctxbus: monitor: ${(error as Error).message}\n`);
      }
      await waitOrStop(every * 60_000, stop.signal);
    }
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

function waitOrStop(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
