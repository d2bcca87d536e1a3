import { CtxbusError } from '@ctxbus/core/light';
import { renderTimerUnits, type ServiceUnit } from '../systemd-unit.js';

// What runs `ctxbus handoff monitor --once` every few minutes, as text: a systemd user service
// and timer, a crontab block, or a launchd agent. One job per workspace, named from it, so
// uninstall removes exactly that job. Writing and loading them is handoff-install.ts.

/** What can run the monitor; `auto` picks by what the machine has. */
export const SCHEDULERS = ['auto', 'systemd', 'cron', 'launchd'] as const;
export type Scheduler = (typeof SCHEDULERS)[number];

export interface MonitorJob extends ServiceUnit {
  /** `ctxbus-handoff-monitor-<workspace name>-<hash>`: systemd unit name, cron marker. */
  name: string;
  workspace: string;
  everyMinutes: number;
  /** Where cron and launchd append the monitor's output (systemd keeps it in the journal). */
  logPath: string;
}

/** The job's name from the workspace's bus key (`handoff/<name>-<hash>`). */
export function monitorJobName(handoffKey: string): string {
  return `ctxbus-handoff-monitor-${handoffKey.replace(/^handoff\//, '')}`;
}

/** The reverse-DNS label launchd knows the job by. */
export function launchdLabel(job: MonitorJob): string {
  return `io.ctxbus.${job.name}`;
}

export function renderMonitorUnits(job: MonitorJob): { service: string; timer: string } {
  return renderTimerUnits({
    ...job,
    description: `ctxbus handoff monitor for ${job.workspace}`,
  });
}

/** A word for a crontab line: single-quoted for the shell, `%` escaped for cron. */
export function cronWord(word: string): string {
  const quoted = /^[A-Za-z0-9_@+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
  return quoted.replace(/%/g, '\\%');
}

/** The schedule field of a crontab line: every N minutes (N < 60) or every N/60 hours. */
function cronSchedule(everyMinutes: number): string {
  if (everyMinutes < 60) return `*/${everyMinutes} * * * *`;
  if (everyMinutes % 60 === 0 && everyMinutes <= 24 * 60) {
    return everyMinutes === 24 * 60 ? '0 0 * * *' : `0 */${everyMinutes / 60} * * *`;
  }
  throw new CtxbusError(
    'validation_failed',
    `cron runs every N minutes below 60, or every whole hour up to 24: --interval ${everyMinutes} is neither`,
  );
}

/** The crontab line running the monitor, its output appended to the log. */
export function renderCronLine(job: MonitorJob): string {
  const words = [
    ...job.environment.map(([name, value]) => `${name}=${cronWord(value)}`),
    ...job.execStart.map(cronWord),
  ];
  return `${cronSchedule(job.everyMinutes)} ${words.join(' ')} >> ${cronWord(job.logPath)} 2>&1`;
}

/** The marker line above the job's crontab line: what uninstall looks for. */
function cronMarker(name: string): string {
  return `# ${name} (ctxbus handoff monitor --uninstall removes this line and the next)`;
}

/** The crontab without the job (its marker and the line after it); the rest byte for byte. */
export function withoutCronJob(crontab: string, name: string): string {
  const lines = crontab.split('\n');
  const kept: string[] = [];
  for (let index = 0; index < lines.length; index++) {
    if (lines[index] === cronMarker(name)) {
      index++; // the job's line
      continue;
    }
    kept.push(lines[index] as string);
  }
  return kept.join('\n');
}

/** The crontab with the job (replacing an older copy of it), the user's lines kept. */
export function withCronJob(crontab: string, job: MonitorJob): string {
  const rest = withoutCronJob(crontab, job.name);
  const base = rest === '' || rest.endsWith('\n') ? rest : `${rest}\n`;
  return `${base}${cronMarker(job.name)}\n${renderCronLine(job)}\n`;
}

function xml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;');
}

/** A launchd agent (~/Library/LaunchAgents/<label>.plist) running the monitor every interval. */
export function renderLaunchdPlist(job: MonitorJob): string {
  const strings = (values: string[]) => values.map((value) => `    <string>${xml(value)}</string>`);
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">',
    '<plist version="1.0">',
    '<dict>',
    '  <key>Label</key>',
    `  <string>${xml(launchdLabel(job))}</string>`,
    '  <key>ProgramArguments</key>',
    '  <array>',
    ...strings(job.execStart),
    '  </array>',
    '  <key>EnvironmentVariables</key>',
    '  <dict>',
    ...job.environment.flatMap(([name, value]) => [
      `    <key>${xml(name)}</key>`,
      `    <string>${xml(value)}</string>`,
    ]),
    '  </dict>',
    '  <key>StartInterval</key>',
    `  <integer>${job.everyMinutes * 60}</integer>`,
    '  <key>RunAtLoad</key>',
    '  <true/>',
    '  <key>StandardOutPath</key>',
    `  <string>${xml(job.logPath)}</string>`,
    '  <key>StandardErrorPath</key>',
    `  <string>${xml(job.logPath)}</string>`,
    '</dict>',
    '</plist>',
    '',
  ].join('\n');
}
