import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { userInfo } from 'node:os';
import { dirname, resolve } from 'node:path';
import { createClient } from '@ctxbus/client';
import { writeFileAtomic } from '@ctxbus/client/files';
import { CtxbusError } from '@ctxbus/core/light';
import { Command, CommanderError } from 'commander';
import { configDir } from '../credentials.js';
import { findHubUrl, parseHubUrl } from '../hub-target.js';
import { printJson, printLine } from '../output.js';
import { storeTarget } from '../store-target.js';
import {
  renderServiceUnit,
  SERVICE_UNIT_NAME,
  type ServiceUnit,
  serviceUnitPath,
  unitExecStart,
  unitHubUrl,
} from '../systemd-unit.js';
import { runSystemd, type SystemdTool, unitProperties, userManager } from '../systemd-user.js';
import type { ServeOptions } from './serve.js';
import { addServeOptions, SERVE_ENVIRONMENT, SERVE_PATH_OPTIONS } from './serve-command.js';

// `ctxbus service install|status|logs|uninstall`: the hub in the background as a systemd user
// unit (~/.config/systemd/user/ctxbus.service), started at boot and kept after logout
// (linger). Without a systemd user manager (containers, WSL, no systemd), install still
// writes the unit and says how to start the hub instead; status still asks the hub itself.

const SYSTEMD_COMMANDS =
  'systemctl --user daemon-reload && systemctl --user enable --now ctxbus.service && loginctl enable-linger "$USER"';

function message(error: unknown): string {
  return CtxbusError.isInstance(error) || error instanceof Error ? error.message : String(error);
}

function firstLine(text: string | undefined): string {
  return (
    (text ?? '')
      .split('\n')
      .map((line) => line.trim())
      .find(Boolean) ?? ''
  );
}

/** A word for a POSIX shell: as is when plain, else single-quoted. */
function shellWord(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

export interface BuiltUnit {
  unit: ServiceUnit;
  /** Things to know about it (a secret left out, a password written in). */
  warnings: string[];
  /** It holds a password: written readable by its owner alone. */
  secret: boolean;
}

/**
 * The unit for `serveArgs` (any `ctxbus serve` options), checked as `serve` would check them.
 * Its command line pins the Node binary running now and the CLI's entry script, names the
 * port, host and data directory (or store) explicitly, and makes paths absolute; its
 * environment keeps the credentials directory of this user's CLI.
 */
export async function buildServiceUnit(
  serveArgs: string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<BuiltUnit> {
  const serve = addServeOptions(new Command('serve'))
    .exitOverride()
    .configureOutput({ writeErr: () => {}, writeOut: () => {} });
  try {
    serve.parse(serveArgs, { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) {
      throw new CtxbusError(
        'validation_failed',
        `serve options: ${error.message.replace(/^error: /, '')}`,
      );
    }
    throw error;
  }
  const options = serve.opts() as ServeOptions;
  const { validateServeOptions } = await import('./serve.js');
  validateServeOptions(options);
  const fromCli = (key: string) => serve.getOptionValueSource(key) === 'cli';
  const where: string[] = ['--port', options.port, '--host', options.host];
  const target = storeTarget(options, env);
  if (target.kind === 'sqlite') where.push('--data', resolve(target.dataDir));
  else where.push('--store', options.store ?? env.CTXBUS_STORE ?? '');
  const rest: string[] = [];
  for (const option of serve.options) {
    const key = option.attributeName();
    if (['port', 'host', 'data', 'store'].includes(key) || !fromCli(key) || !option.long) continue;
    const value = (options as unknown as Record<string, unknown>)[key];
    if (option.negate) {
      if (value === false) rest.push(option.long);
    } else if (!option.required && !option.optional) {
      if (value === true) rest.push(option.long);
    } else {
      rest.push(
        option.long,
        SERVE_PATH_OPTIONS.includes(key) ? resolve(String(value)) : String(value),
      );
    }
  }
  const entry = process.argv[1];
  if (!entry) throw new CtxbusError('internal', 'cannot tell which script runs the ctxbus CLI');
  const environment: Array<[string, string]> = [['CTXBUS_CONFIG_DIR', configDir(env)]];
  for (const name of SERVE_ENVIRONMENT) {
    const value = env[name];
    if (value) environment.push([name, value]);
  }
  const warnings: string[] = [];
  if (env.CTXBUS_EMBEDDINGS_KEY && options.embeddingsUrl) {
    warnings.push(
      `CTXBUS_EMBEDDINGS_KEY is set here but not written into the unit (a secret): give it to the service with \`systemctl --user edit ${SERVICE_UNIT_NAME}\` ([Service] Environment=CTXBUS_EMBEDDINGS_KEY=...)`,
    );
  }
  const secret = target.kind === 'postgres' && new URL(target.connectionString).password !== '';
  if (secret) {
    warnings.push(
      'the unit holds the --store URL with its password: it is written readable by you alone (0600)',
    );
  }
  return {
    unit: {
      execStart: [process.execPath, resolve(entry), 'serve', ...where, ...rest],
      environment,
    },
    warnings,
    secret,
  };
}

/** Runs a systemd command that must succeed, and prints what it did. */
function mustRun(tool: SystemdTool, args: string[], did: string): void {
  const result = runSystemd(tool, args);
  const command = `${tool} ${args.join(' ')}`;
  if (result.status !== 0) {
    throw new CtxbusError(
      'internal',
      `${command} failed: ${result.error ?? (firstLine(result.stderr) || `exit code ${result.status}`)}`,
    );
  }
  printLine(`${command}: ${did}`);
}

export async function install(serveArgs: string[], options: { dryRun?: boolean }): Promise<void> {
  const { unit, warnings, secret } = await buildServiceUnit(serveArgs);
  const text = renderServiceUnit(unit);
  for (const warning of warnings) process.stderr.write(`ctxbus: warning: ${warning}\n`);
  if (options.dryRun) {
    process.stdout.write(text);
    return;
  }
  const path = serviceUnitPath();
  const existed = existsSync(path);
  mkdirSync(dirname(path), { recursive: true });
  writeFileAtomic(path, text, { mode: secret ? 0o600 : 0o644 });
  printLine(`${existed ? 'updated' : 'wrote'} ${path}`);
  const manager = userManager();
  if (!manager.reachable) {
    const command = unit.execStart.map(shellWord).join(' ');
    printLine(`systemd is not running for this user (${manager.reason}), so nothing was started`);
    printLine(
      `start the hub instead (or run the same command in tmux): nohup ${command} >>"$HOME/ctxbus-hub.log" 2>&1 &`,
    );
    printLine(`on a machine with systemd, start this unit with: ${SYSTEMD_COMMANDS}`);
    throw new CtxbusError(
      'unavailable',
      'the unit is written but no hub was started (exit 6: no systemd user manager)',
    );
  }
  mustRun('systemctl', ['--user', 'daemon-reload'], 'systemd read the unit');
  mustRun('systemctl', ['--user', 'enable', SERVICE_UNIT_NAME], 'starts with your user manager');
  mustRun(
    'systemctl',
    ['--user', 'restart', SERVICE_UNIT_NAME],
    existed ? 'restarted with this unit' : 'started',
  );
  const user = process.env.USER || userInfo().username;
  const linger = runSystemd('loginctl', ['enable-linger', user]);
  if (linger.status === 0) {
    printLine(`loginctl enable-linger ${user}: it runs from boot and after you log out`);
  } else {
    process.stderr.write(
      `ctxbus: warning: loginctl enable-linger ${user} failed (${linger.error ?? (firstLine(linger.stderr) || `exit code ${linger.status}`)}): the hub stops when you log out; an administrator can run \`loginctl enable-linger ${user}\`\n`,
    );
  }
  printLine('check it: ctxbus service status; its logs: ctxbus service logs -f');
}

export interface ServiceStatus {
  unit: { path: string; installed: boolean; execStart: string[] | null };
  systemd:
    | { running: true; activeState: string; subState: string; unitFileState: string; pid: number }
    | { running: false; reason: string };
  hub:
    | { url: string; healthy: true; version: string; store: string }
    | { url: string | null; healthy: false; error: string };
}

/** The unit, what systemd says of it, and whether the hub itself answers. */
export async function serviceStatus(flagUrl?: string): Promise<ServiceStatus> {
  const path = serviceUnitPath();
  const installed = existsSync(path);
  const execStart = installed ? unitExecStart(readFileSync(path, 'utf8')) : null;
  const manager = userManager();
  let systemd: ServiceStatus['systemd'];
  if (manager.reachable) {
    const properties = unitProperties(SERVICE_UNIT_NAME);
    systemd = {
      running: true,
      activeState: properties.ActiveState ?? 'unknown',
      subState: properties.SubState ?? 'unknown',
      unitFileState: properties.UnitFileState || 'not installed',
      pid: Number(properties.MainPID ?? 0),
    };
  } else systemd = { running: false, reason: manager.reason };
  const url = flagUrl
    ? parseHubUrl(flagUrl, '--url')
    : ((execStart && unitHubUrl(execStart)) ?? findHubUrl(undefined));
  let hub: ServiceStatus['hub'];
  if (url === null) {
    hub = {
      url,
      healthy: false,
      error: 'no hub URL known (no unit with a port, no --url, CTXBUS_URL or saved hub)',
    };
  } else {
    try {
      const health = await createClient({
        url,
        token: 'none',
        retries: 0,
        timeoutMs: 5000,
      }).health();
      hub = { url, healthy: true, version: health.version, store: health.store };
    } catch (error) {
      hub = { url, healthy: false, error: message(error) };
    }
  }
  return { unit: { path, installed, execStart }, systemd, hub };
}

export async function status(options: { url?: string; json?: boolean }): Promise<void> {
  const report = await serviceStatus(options.url);
  if (options.json) printJson(report);
  else {
    printLine(
      `unit: ${report.unit.path} ${report.unit.installed ? '(installed)' : '(not installed: `ctxbus service install` writes it)'}`,
    );
    const systemd = report.systemd;
    printLine(
      systemd.running
        ? `systemd: ${systemd.activeState} (${systemd.subState}), ${systemd.unitFileState}${systemd.pid > 0 ? `, pid ${systemd.pid}` : ''}`
        : `systemd: not running for this user (${systemd.reason})`,
    );
    if (report.hub.healthy) {
      printLine(
        `hub: ${report.hub.url} answers (ctxbus ${report.hub.version}, ${report.hub.store} store)`,
      );
    }
  }
  if (!report.hub.healthy) {
    throw new CtxbusError(
      'unavailable',
      `hub: not running${report.hub.url ? ` at ${report.hub.url}` : ''} (${report.hub.error})`,
    );
  }
}

export function logs(options: { follow?: boolean; lines: string }): void {
  const lines = Number(options.lines);
  if (!Number.isInteger(lines) || lines < 0) {
    throw new CtxbusError(
      'validation_failed',
      `-n must be a number of lines (got "${options.lines}")`,
    );
  }
  const manager = userManager();
  if (!manager.reachable) {
    throw new CtxbusError(
      'unavailable',
      `no logs here: systemd is not running for this user (${manager.reason}), so there is no journal of ${SERVICE_UNIT_NAME}; a hub started by hand (\`ctxbus serve\`) logs to its own stderr`,
    );
  }
  const args = ['--user', '-u', SERVICE_UNIT_NAME, '-n', String(lines), '--no-pager'];
  const result = runSystemd('journalctl', options.follow ? [...args, '-f'] : args, {
    interactive: true,
  });
  if (result.status !== 0) {
    throw new CtxbusError(
      'internal',
      `journalctl ${args.join(' ')} failed: ${result.error ?? `exit code ${result.status}`}`,
    );
  }
}

export function uninstall(): void {
  const path = serviceUnitPath();
  const installed = existsSync(path);
  const manager = userManager();
  if (installed && manager.reachable) {
    mustRun('systemctl', ['--user', 'disable', '--now', SERVICE_UNIT_NAME], 'stopped and disabled');
  }
  if (installed) {
    rmSync(path);
    printLine(`removed ${path}`);
  } else printLine(`not installed: there is no ${path}`);
  if (manager.reachable) mustRun('systemctl', ['--user', 'daemon-reload'], 'systemd forgot it');
  else if (installed) {
    printLine(
      `systemd is not running for this user (${manager.reason}): only the file was removed; stop a hub started by hand with Ctrl-C or kill`,
    );
  }
  printLine(
    'kept: the data, the credentials, and linger (`loginctl disable-linger "$USER"` turns it off)',
  );
}
