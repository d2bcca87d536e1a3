import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { writeFileAtomic } from '@ctxbus/client/files';
import { CtxbusError } from '@ctxbus/core/light';
import { printLine } from '../output.js';
import { runSystemd, userManager } from '../systemd-user.js';
import {
  launchdLabel,
  type MonitorJob,
  renderLaunchdPlist,
  renderMonitorUnits,
  type Scheduler,
  withCronJob,
  withoutCronJob,
} from './handoff-schedule.js';

// `ctxbus handoff monitor --install | --uninstall`: the monitor scheduled by what the machine
// has. launchd on macOS; a systemd user timer where `systemctl --user` answers; else a crontab
// entry (`crontab -l` / `crontab -`). Uninstall removes the workspace's job from all three.

/** The crontab command: `$CTXBUS_CRONTAB` (another path, a wrapper), else `crontab` on PATH. */
function crontabCommand(env: NodeJS.ProcessEnv): string {
  return env.CTXBUS_CRONTAB || 'crontab';
}

function systemdDir(env: NodeJS.ProcessEnv): string {
  return join(env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'systemd', 'user');
}

function launchAgentPath(job: MonitorJob): string {
  return join(homedir(), 'Library', 'LaunchAgents', `${launchdLabel(job)}.plist`);
}

function firstLine(text: string): string {
  return (
    text
      .split('\n')
      .map((line) => line.trim())
      .find(Boolean) ?? ''
  );
}

/** Runs the crontab command; null when it is not installed. */
function crontab(
  env: NodeJS.ProcessEnv,
  args: string[],
  input?: string,
): { status: number; stdout: string; stderr: string } | null {
  const result = spawnSync(crontabCommand(env), args, {
    encoding: 'utf8',
    input: input ?? '',
    timeout: 60_000,
  });
  if ((result.error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT') return null;
  if (result.error) throw new CtxbusError('internal', `crontab ${args.join(' ')}: ${result.error}`);
  return { status: result.status ?? 1, stdout: result.stdout, stderr: result.stderr };
}

/** The user's crontab; '' when they have none; null when there is no crontab command. */
function readCrontab(env: NodeJS.ProcessEnv): string | null {
  const listed = crontab(env, ['-l']);
  if (listed === null) return null;
  if (listed.status === 0) return listed.stdout;
  if (/no crontab/i.test(listed.stderr)) return '';
  throw new CtxbusError(
    'internal',
    `crontab -l failed: ${firstLine(listed.stderr) || `exit code ${listed.status}`}`,
  );
}

function writeCrontab(env: NodeJS.ProcessEnv, text: string): void {
  // An empty crontab is removed rather than installed empty: uninstall leaves none behind.
  const result = text.trim() === '' ? crontab(env, ['-r']) : crontab(env, ['-'], text);
  if (result === null) throw new CtxbusError('not_found', 'crontab is not installed');
  if (result.status !== 0 && !(text.trim() === '' && /no crontab/i.test(result.stderr))) {
    throw new CtxbusError(
      'internal',
      `crontab refused the entry: ${firstLine(result.stderr) || `exit code ${result.status}`}`,
    );
  }
}

/** The scheduler `auto` means here: launchd on macOS, systemd when it answers, else cron. */
export function pickScheduler(
  asked: Scheduler,
  env: NodeJS.ProcessEnv = process.env,
): Exclude<Scheduler, 'auto'> {
  if (asked !== 'auto') return asked;
  if (process.platform === 'darwin') return 'launchd';
  if (userManager().reachable) return 'systemd';
  if (readCrontab(env) !== null) return 'cron';
  throw new CtxbusError(
    'not_found',
    'no scheduler here: no systemd user manager and no crontab command (install cron, or run `ctxbus handoff monitor` in tmux; --dry-run --scheduler systemd|cron|launchd shows what each would get)',
  );
}

function mustSystemctl(args: string[]): void {
  const result = runSystemd('systemctl', ['--user', ...args]);
  if (result.status !== 0) {
    throw new CtxbusError(
      'internal',
      `systemctl --user ${args.join(' ')} failed: ${result.error ?? (firstLine(result.stderr) || `exit code ${result.status}`)}`,
    );
  }
}

function installSystemd(job: MonitorJob, env: NodeJS.ProcessEnv): void {
  const manager = userManager();
  if (!manager.reachable) {
    throw new CtxbusError(
      'not_found',
      `no systemd user manager here (${manager.reason}): nothing written; use --scheduler cron`,
    );
  }
  const units = renderMonitorUnits(job);
  const dir = systemdDir(env);
  mkdirSync(dir, { recursive: true });
  writeFileAtomic(join(dir, `${job.name}.service`), units.service);
  writeFileAtomic(join(dir, `${job.name}.timer`), units.timer);
  printLine(`wrote ${join(dir, `${job.name}.service`)} and ${job.name}.timer`);
  mustSystemctl(['daemon-reload']);
  mustSystemctl(['enable', '--now', `${job.name}.timer`]);
  printLine(
    `systemctl --user enable --now ${job.name}.timer: runs every ${job.everyMinutes} min (logs: journalctl --user -u ${job.name}.service)`,
  );
}

function installCron(job: MonitorJob, env: NodeJS.ProcessEnv): void {
  const current = readCrontab(env);
  if (current === null) throw new CtxbusError('not_found', 'crontab is not installed');
  mkdirSync(dirname(job.logPath), { recursive: true });
  writeCrontab(env, withCronJob(current, job));
  printLine(
    `crontab: ${job.name} ${current.includes(`# ${job.name} `) ? 'updated' : 'added'}, every ${job.everyMinutes} min (log: ${job.logPath})`,
  );
}

function launchctl(args: string[]): { status: number | null; stderr: string } {
  const result = spawnSync('launchctl', args, { encoding: 'utf8', timeout: 60_000 });
  return { status: result.status, stderr: result.stderr ?? '' };
}

function installLaunchd(job: MonitorJob): void {
  const path = launchAgentPath(job);
  mkdirSync(dirname(path), { recursive: true });
  writeFileAtomic(path, renderLaunchdPlist(job));
  printLine(`wrote ${path}`);
  if (process.platform !== 'darwin') {
    printLine('not macOS: launchd will load it on a Mac (launchctl bootstrap gui/$UID <plist>)');
    return;
  }
  const domain = `gui/${process.getuid?.() ?? ''}`;
  launchctl(['bootout', `${domain}/${launchdLabel(job)}`]); // an older copy, if loaded
  const loaded = launchctl(['bootstrap', domain, path]);
  if (loaded.status !== 0) {
    throw new CtxbusError(
      'internal',
      `launchctl bootstrap ${domain} ${path} failed: ${firstLine(loaded.stderr) || `exit code ${loaded.status}`}`,
    );
  }
  printLine(`launchctl bootstrap ${domain}: runs every ${job.everyMinutes} min`);
}

/** What `--dry-run` prints: the files or lines the scheduler would get, and where. */
export function describeInstall(job: MonitorJob, scheduler: Exclude<Scheduler, 'auto'>): string {
  const env = process.env;
  if (scheduler === 'systemd') {
    const units = renderMonitorUnits(job);
    const dir = systemdDir(env);
    return `# ${join(dir, `${job.name}.service`)}\n${units.service}\n# ${join(dir, `${job.name}.timer`)}\n${units.timer}\n# then: systemctl --user daemon-reload && systemctl --user enable --now ${job.name}.timer\n`;
  }
  if (scheduler === 'cron') {
    return `# would be added to your crontab (crontab -l):\n${withCronJob('', job)}`;
  }
  return `# ${launchAgentPath(job)}\n${renderLaunchdPlist(job)}`;
}

export function installMonitor(job: MonitorJob, asked: Scheduler): void {
  const env = process.env;
  const scheduler = pickScheduler(asked, env);
  if (scheduler === 'systemd') installSystemd(job, env);
  else if (scheduler === 'cron') installCron(job, env);
  else installLaunchd(job);
}

/** Removes the workspace's job from every scheduler that has it; says what it removed. */
export function uninstallMonitor(job: MonitorJob): void {
  const env = process.env;
  let removed = 0;
  const dir = systemdDir(env);
  const unitFiles = [`${job.name}.timer`, `${job.name}.service`].map((file) => join(dir, file));
  if (unitFiles.some((file) => existsSync(file))) {
    if (userManager().reachable) {
      runSystemd('systemctl', ['--user', 'disable', '--now', `${job.name}.timer`]);
    }
    for (const file of unitFiles) rmSync(file, { force: true });
    if (userManager().reachable) runSystemd('systemctl', ['--user', 'daemon-reload']);
    printLine(`removed ${unitFiles.join(' and ')}`);
    removed++;
  }
  const current = readCrontab(env);
  if (current !== null) {
    const next = withoutCronJob(current, job.name);
    if (next !== current) {
      writeCrontab(env, next);
      printLine(`crontab: ${job.name} removed`);
      removed++;
    }
  }
  const plist = launchAgentPath(job);
  if (existsSync(plist)) {
    if (process.platform === 'darwin') {
      launchctl(['bootout', `gui/${process.getuid?.() ?? ''}/${launchdLabel(job)}`]);
    }
    rmSync(plist);
    printLine(`removed ${plist}`);
    removed++;
  }
  if (removed === 0) printLine(`not installed: no ${job.name} in systemd, cron or launchd`);
}
