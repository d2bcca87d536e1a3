import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { CLI, freePort, removeDir, runCli, tempDir, waitFor, waitUntil } from '@ctxbus/test-kit';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { unitEnvironment, unitExecStart } from '../systemd-unit.js';

// `ctxbus service` run as the real command. This machine may have no systemd user manager
// (containers, CI), and a test must never install a real service for the person running it:
// `systemctl`, `journalctl` and `loginctl` are stand-ins on PATH that log how they were called
// and answer as a machine without systemd (FAKE_SYSTEMD=absent) or with it (=running) would.
// The stand-ins check the commands ctxbus sends, not what a real systemd does with them; the
// unit file itself is checked by systemd's own `systemd-analyze verify`, and its ExecStart is
// run for real.

const dirs: string[] = [];
const children: ChildProcess[] = [];

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});
afterAll(() => {
  for (const dir of dirs) removeDir(dir);
});

const FAKE_TOOL = `#!/bin/sh
echo "$(basename "$0") $*" >> "$FAKE_SYSTEMD_LOG"
if [ "$FAKE_SYSTEMD" = absent ]; then
  echo "Failed to connect to bus: No medium found" >&2
  exit 1
fi
case "$(basename "$0") $*" in
  "systemctl --user show "*)
    printf 'LoadState=loaded\\nActiveState=active\\nSubState=running\\nUnitFileState=enabled\\nMainPID=4242\\n' ;;
  "journalctl "*) echo "fake journal: hub listening" ;;
  "loginctl "*)
    if [ -n "$FAKE_LINGER_FAILS" ]; then echo "Could not enable linger: Access denied" >&2; exit 1; fi ;;
esac
exit 0
`;

interface Sandbox {
  home: string;
  env: NodeJS.ProcessEnv;
  unitPath: string;
  configDir: string;
  /** The systemd commands the stand-ins received, one line each. */
  calls(): string[];
}

/** A HOME, a credentials directory and stand-in systemd tools, all temporary. */
function sandbox(systemd: 'absent' | 'running', extra: NodeJS.ProcessEnv = {}): Sandbox {
  const home = tempDir('ctxbus-service-home-');
  dirs.push(home);
  const bin = join(home, 'fake-bin');
  mkdirSync(bin);
  for (const tool of ['systemctl', 'journalctl', 'loginctl']) {
    writeFileSync(join(bin, tool), FAKE_TOOL);
    chmodSync(join(bin, tool), 0o755);
  }
  const log = join(home, 'systemd-calls.log');
  writeFileSync(log, '');
  const configDir = join(home, 'config "dir" $HOME %h');
  return {
    home,
    configDir,
    unitPath: join(home, '.config', 'systemd', 'user', 'ctxbus.service'),
    env: {
      HOME: home,
      XDG_CONFIG_HOME: '',
      XDG_DATA_HOME: '',
      USER: 'tester',
      CTXBUS_CONFIG_DIR: configDir,
      PATH: `${bin}:${process.env.PATH}`,
      FAKE_SYSTEMD: systemd,
      FAKE_SYSTEMD_LOG: log,
      ...extra,
    },
    calls: () => readFileSync(log, 'utf8').split('\n').filter(Boolean),
  };
}

async function answers(url: string): Promise<boolean> {
  try {
    return (await fetch(`${url}/health`)).ok;
  } catch {
    return false;
  }
}

const analyzer = spawnSync('systemd-analyze', ['--version'], { encoding: 'utf8' });
const canVerify = analyzer.status === 0;

// Each test runs several CLI processes (each a Node start): room for a loaded machine.
describe('ctxbus service', () => {
  it('has --help with an example for each command', async () => {
    const helps = new Map<string, string>();
    for (const command of ['install', 'status', 'logs', 'uninstall']) {
      const help = await runCli(['service', command, '--help']);
      expect(help.code).toBe(0);
      expect(help.stdout).toMatch(/Examples?:\n {2}ctxbus service /);
      helps.set(command, help.stdout);
    }
    expect(helps.get('install')).toContain('Restart=on-failure');
    expect(helps.get('install')).toMatch(/6 written, but systemd is not running/);
  });

  it('--dry-run prints the unit, writes nothing, and refuses options serve would refuse', async () => {
    const box = sandbox('absent');
    const dry = await runCli(['service', 'install', '--port', '7499', '--dry-run'], {
      env: box.env,
    });
    expect(dry.code, dry.stderr).toBe(0);
    const argv = unitExecStart(dry.stdout);
    expect(argv).toEqual([
      process.execPath,
      CLI,
      'serve',
      '--port',
      '7499',
      '--host',
      '127.0.0.1',
      '--data',
      join(box.home, '.local', 'share', 'ctxbus'),
    ]);
    expect(unitEnvironment(dry.stdout)).toEqual([['CTXBUS_CONFIG_DIR', box.configDir]]);
    expect(existsSync(box.unitPath)).toBe(false);
    expect(box.calls()).toEqual([]);

    // The serve defaults set in the environment go into the unit, the embeddings key does not.
    const store = 'postgres://ctxbus:hunter2@db.internal:5432/ctxbus';
    const team = await runCli(['service', 'install', '--dry-run', '--store', store], {
      env: {
        ...box.env,
        CTXBUS_RETAIN: 'status=30d',
        CTXBUS_EMBEDDINGS_URL: 'https://embeddings.example/v1',
        CTXBUS_EMBEDDINGS_MODEL: 'small',
        CTXBUS_EMBEDDINGS_KEY: 'sk-not-in-the-unit',
      },
    });
    expect(team.code, team.stderr).toBe(0);
    expect(unitExecStart(team.stdout)).toEqual([
      process.execPath,
      CLI,
      'serve',
      '--port',
      '7420',
      '--host',
      '127.0.0.1',
      '--store',
      store,
    ]);
    expect(unitEnvironment(team.stdout)).toEqual([
      ['CTXBUS_CONFIG_DIR', box.configDir],
      ['CTXBUS_RETAIN', 'status=30d'],
      ['CTXBUS_EMBEDDINGS_URL', 'https://embeddings.example/v1'],
      ['CTXBUS_EMBEDDINGS_MODEL', 'small'],
    ]);
    expect(team.stdout).not.toContain('sk-not-in-the-unit');
    expect(team.stderr).toContain(
      'CTXBUS_EMBEDDINGS_KEY is set here but not written into the unit',
    );
    expect(team.stderr).toContain('the unit holds the --store URL with its password');

    const written = await runCli(['service', 'install', '--store', store], { env: box.env });
    expect(written.code).toBe(6);
    expect(statSync(box.unitPath).mode & 0o777).toBe(0o600);
    rmSync(box.unitPath);

    const bad = await runCli(['service', 'install', '--port', '99999'], { env: box.env });
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim()).toBe('ctxbus: error: --port must be 0-65535 (got "99999")');
    const unknown = await runCli(['service', 'install', '--frobnicate'], { env: box.env });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown option '--frobnicate'");
    expect(existsSync(box.unitPath)).toBe(false);
  });

  it('without systemd: writes the unit, says in one line each how to start the hub, exits 6', async () => {
    const box = sandbox('absent');
    const result = await runCli(['service', 'install', '--retain', 'status=30d'], {
      env: box.env,
    });
    expect(result.code).toBe(6);
    const lines = result.stdout.trim().split('\n');
    expect(lines).toEqual([
      `wrote ${box.unitPath}`,
      'systemd is not running for this user (Failed to connect to bus: No medium found), so nothing was started',
      expect.stringMatching(
        /^start the hub instead .*: nohup .* serve --port 7420 .*--retain status=30d >>"\$HOME\/ctxbus-hub.log" 2>&1 &$/,
      ),
      'on a machine with systemd, start this unit with: systemctl --user daemon-reload && systemctl --user enable --now ctxbus.service && loginctl enable-linger "$USER"',
    ]);
    expect(result.stderr.trim()).toBe(
      'ctxbus: error: the unit is written but no hub was started (exit 6: no systemd user manager)',
    );
    expect(box.calls()).toEqual(['systemctl --user show-environment']);
    expect(statSync(box.unitPath).mode & 0o777).toBe(0o644);

    const logs = await runCli(['service', 'logs'], { env: box.env });
    expect(logs.code).toBe(6);
    expect(logs.stderr).toMatch(/no logs here: systemd is not running for this user/);

    const doctor = await runCli(['doctor', '--project', box.home], { env: box.env });
    expect(doctor.stdout).toContain(
      `warn  background service: ${box.unitPath} is installed, but systemd is not running for this user`,
    );

    const removed = await runCli(['service', 'uninstall'], { env: box.env });
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stdout).toContain(`removed ${box.unitPath}`);
    expect(removed.stdout).toMatch(
      /systemd is not running for this user .*only the file was removed/,
    );
    expect(existsSync(box.unitPath)).toBe(false);
    expect(box.calls().filter((call) => !call.endsWith('show-environment'))).toEqual([]);

    const nothing = await runCli(['service', 'status'], { env: box.env });
    expect(nothing.code).toBe(6);
    expect(nothing.stdout).toContain('(not installed: `ctxbus service install` writes it)');
    expect(nothing.stderr).toMatch(/^ctxbus: error: hub: not running \(no hub URL known/);
  });

  const machineHasUserManager =
    spawnSync('systemctl', ['--user', 'show-environment'], { stdio: 'ignore' }).status === 0;
  it.skipIf(machineHasUserManager)(
    machineHasUserManager
      ? 'the real systemctl of a machine without systemd (skipped: this machine runs a systemd user manager, and the test must not install a real service)'
      : 'the real systemctl of this machine (no user manager) leads to the same message',
    async () => {
      const box = sandbox('absent');
      const env = { ...box.env, PATH: process.env.PATH };
      const result = await runCli(['service', 'install'], { env });
      expect(result.code).toBe(6);
      expect(result.stdout).toMatch(
        /^systemd is not running for this user \(.+\), so nothing was started$/m,
      );
      expect(existsSync(box.unitPath)).toBe(true);
    },
  );

  it('the unit starts a working hub: its ExecStart, run as written, serves /health; status follows it', async () => {
    const box = sandbox('absent');
    // Paths with spaces, quotes, `$` and `%` where systemd has to read them back (the
    // executable's path may hold spaces but no quotes: systemd refuses those).
    const nodeDir = join(box.home, 'node 24 bin');
    mkdirSync(nodeDir);
    const node = join(nodeDir, 'node');
    try {
      linkSync(process.execPath, node);
    } catch {
      copyFileSync(process.execPath, node);
      chmodSync(node, 0o755);
    }
    const cliDir = join(box.home, "ctx bus's cli");
    symlinkSync(dirname(CLI), cliDir);
    const dataDir = join(box.home, 'data dir $USER 100%');
    const port = await freePort();
    const installed = spawnSync(
      node,
      [join(cliDir, 'bin.js'), 'service', 'install', '--port', String(port), '--data', dataDir],
      { env: { ...process.env, ...box.env }, encoding: 'utf8' },
    );
    expect(installed.status, installed.stderr).toBe(6);

    const text = readFileSync(box.unitPath, 'utf8');
    const argv = unitExecStart(text) ?? [];
    expect(argv.slice(0, 2)).toEqual([node, join(cliDir, 'bin.js')]);
    expect(argv).toContain(dataDir);
    if (canVerify) {
      // systemd's own reading of the unit: syntax, and that the quoted ExecStart binary exists.
      const runtimeDir = join(box.home, 'run');
      mkdirSync(runtimeDir, { mode: 0o700 });
      const verified = spawnSync('systemd-analyze', ['verify', '--user', box.unitPath], {
        env: { ...process.env, HOME: box.home, XDG_RUNTIME_DIR: runtimeDir },
        encoding: 'utf8',
      });
      expect({ code: verified.status, stderr: verified.stderr }).toEqual({ code: 0, stderr: '' });
    }

    // As systemd would start it: that argv, the unit's environment, a PATH without this Node.
    const [command = '', ...args] = argv;
    const hub = spawn(command, args, {
      env: { HOME: box.home, PATH: '/usr/bin:/bin', ...Object.fromEntries(unitEnvironment(text)) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(hub);
    let stderr = '';
    hub.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => hub.once('exit', resolve));
    const url = `http://127.0.0.1:${port}`;
    await waitUntil(async () => {
      if (hub.exitCode !== null) throw new Error(`the unit's hub exited: ${stderr}`);
      return answers(url);
    }, `the hub started by the unit's ExecStart to answer ${url}/health`);
    // Environment= reached it: it saved its admin token where this user's CLI looks.
    const credentials = JSON.parse(readFileSync(join(box.configDir, 'credentials.json'), 'utf8'));
    expect(credentials.defaultHub).toBe(url);
    expect(existsSync(join(dataDir, 'ctxbus.db'))).toBe(true);

    const healthy = await runCli(['service', 'status'], { env: box.env });
    expect(healthy.code, healthy.stderr).toBe(0);
    expect(healthy.stdout.trim().split('\n')).toEqual([
      `unit: ${box.unitPath} (installed)`,
      'systemd: not running for this user (Failed to connect to bus: No medium found)',
      expect.stringMatching(new RegExp(`^hub: ${url} answers \\(ctxbus .+, sqlite store\\)$`)),
    ]);
    const json = await runCli(['service', 'status', '--json'], { env: box.env });
    expect(JSON.parse(json.stdout)).toMatchObject({
      unit: { installed: true, execStart: argv },
      systemd: { running: false },
      hub: { url, healthy: true },
    });

    hub.kill('SIGTERM');
    expect(await waitFor(exited, 'the hub to stop on SIGTERM, as systemd stops it')).toBe(0);
    const down = await runCli(['service', 'status'], { env: box.env });
    expect(down.code).toBe(6);
    expect(down.stderr).toMatch(new RegExp(`^ctxbus: error: hub: not running at ${url} \\(`));
  });

  it.skipIf(!canVerify)(
    canVerify
      ? 'systemd-analyze verify --user notices a broken unit (the check above can fail)'
      : 'systemd-analyze verify --user (skipped: systemd-analyze is not installed here; the structural tests of the unit remain)',
    () => {
      const box = sandbox('absent');
      const unitDir = dirname(box.unitPath);
      mkdirSync(unitDir, { recursive: true });
      // A path with a space, unquoted: systemd reads the command as "/tmp/no".
      writeFileSync(box.unitPath, '[Service]\nExecStart=/tmp/no such/node x\n');
      const runtimeDir = join(box.home, 'run');
      mkdirSync(runtimeDir, { mode: 0o700 });
      const verified = spawnSync('systemd-analyze', ['verify', '--user', box.unitPath], {
        env: { ...process.env, HOME: box.home, XDG_RUNTIME_DIR: runtimeDir },
        encoding: 'utf8',
      });
      expect(verified.stderr).toMatch(/Command \/tmp\/no is not executable/);
    },
  );

  it('with systemd: reloads, enables, restarts, lingers; status, logs and uninstall ask systemd', async () => {
    const box = sandbox('running');
    const result = await runCli(['service', 'install', '--port', '7498'], { env: box.env });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout.trim().split('\n')).toEqual([
      `wrote ${box.unitPath}`,
      'systemctl --user daemon-reload: systemd read the unit',
      'systemctl --user enable ctxbus.service: starts with your user manager',
      'systemctl --user restart ctxbus.service: started',
      'loginctl enable-linger tester: it runs from boot and after you log out',
      'check it: ctxbus service status; its logs: ctxbus service logs -f',
    ]);
    expect(box.calls()).toEqual([
      'systemctl --user show-environment',
      'systemctl --user daemon-reload',
      'systemctl --user enable ctxbus.service',
      'systemctl --user restart ctxbus.service',
      'loginctl enable-linger tester',
    ]);

    const again = await runCli(['service', 'install', '--port', '7497'], {
      env: { ...box.env, FAKE_LINGER_FAILS: '1' },
    });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain(`updated ${box.unitPath}`);
    expect(again.stdout).toContain(
      'systemctl --user restart ctxbus.service: restarted with this unit',
    );
    expect(again.stderr).toMatch(
      /^ctxbus: warning: loginctl enable-linger tester failed \(Could not enable linger: Access denied\): the hub stops when you log out/,
    );

    const status = await runCli(['service', 'status'], { env: box.env });
    expect(status.code).toBe(6); // systemd says it runs, but nothing answers on 7497 here
    expect(status.stdout).toContain('systemd: active (running), enabled, pid 4242');
    expect(status.stderr).toContain('hub: not running at http://127.0.0.1:7497');

    const logs = await runCli(['service', 'logs', '-f', '-n', '5'], { env: box.env });
    expect(logs.code, logs.stderr).toBe(0);
    expect(logs.stdout).toContain('fake journal: hub listening');
    expect(box.calls()).toContain('journalctl --user -u ctxbus.service -n 5 --no-pager -f');

    const doctor = await runCli(['doctor', '--project', box.home], { env: box.env });
    expect(doctor.stdout).toContain('ok    background service: enabled, active (running)');

    const before = box.calls().length;
    const removed = await runCli(['service', 'uninstall'], { env: box.env });
    expect(removed.code, removed.stderr).toBe(0);
    expect(box.calls().slice(before)).toEqual([
      'systemctl --user show-environment',
      'systemctl --user disable --now ctxbus.service',
      'systemctl --user daemon-reload',
    ]);
    expect(existsSync(box.unitPath)).toBe(false);
  });

  it('serve under systemd keeps a saved admin token out of the journal', async () => {
    const box = sandbox('absent');
    const out = join(box.home, 'journal.txt');
    const fd = openSync(out, 'w');
    const { dev, ino } = statSync(out);
    const hub = spawn(
      process.execPath,
      [CLI, 'serve', '--port', '0', '--data', join(box.home, 'data')],
      {
        env: { ...process.env, ...box.env, JOURNAL_STREAM: `${dev}:${ino}` },
        stdio: ['ignore', fd, 'pipe'],
      },
    );
    children.push(hub);
    const exited = new Promise<number | null>((resolve) => hub.once('exit', resolve));
    await waitUntil(
      () => readFileSync(out, 'utf8').includes('saved in'),
      'the hub to say where it saved its admin token',
    );
    const printed = readFileSync(out, 'utf8');
    const saved = JSON.parse(readFileSync(join(box.configDir, 'credentials.json'), 'utf8'));
    const [entry] = Object.values(saved.hubs) as Array<{ adminToken: string }>;
    expect(entry?.adminToken).toMatch(/^cbx_/);
    expect(printed).not.toContain(entry?.adminToken);
    expect(printed).toContain('admin token: not printed here (this output goes to the journal)');
    hub.kill('SIGTERM');
    expect(await waitFor(exited, 'the hub to stop')).toBe(0);
  });
});
