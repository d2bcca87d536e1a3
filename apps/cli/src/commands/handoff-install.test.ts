import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { removeDir, runCli, tempDir } from '@ctxbus/test-kit';
import { afterAll, describe, expect, it } from 'vitest';
import { splitSystemdCommandLine, unitEnvironment } from '../systemd-unit.js';
import { handoffKey } from './handoff.js';
import { monitorJobName } from './handoff-schedule.js';

// `ctxbus handoff monitor --install | --uninstall | --dry-run`, run as the real command with a
// temporary HOME. The crontab is the real `crontab` binary where the test may use it without
// touching the person's own: as root, it edits the crontab of `nobody` (restored after);
// elsewhere a script standing in for it keeps the crontab in a file. The systemd units are
// checked by the real `systemd-analyze verify`, the launchd plist by Python's plistlib.

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) removeDir(dir);
});
const fresh = () => {
  const dir = tempDir('ctxbus-handoff-install-');
  dirs.push(dir);
  return dir;
};

const has = (command: string, args: string[] = ['--version']) =>
  spawnSync(command, args, { encoding: 'utf8' }).error === undefined;
const isRoot = process.getuid?.() === 0;
const realCrontab = isRoot && has('crontab', ['-l']);

/** A crontab command for the test: the real binary on `nobody`'s crontab, or a stand-in. */
function crontabFor(dir: string): { command: string; read: () => string | null } {
  const command = join(dir, 'crontab');
  if (realCrontab) {
    writeFileSync(command, '#!/bin/sh\nexec crontab -u nobody "$@"\n');
    chmodSync(command, 0o755);
    return {
      command,
      read: () => {
        const listed = spawnSync('crontab', ['-u', 'nobody', '-l'], { encoding: 'utf8' });
        return listed.status === 0 ? listed.stdout : null;
      },
    };
  }
  const file = join(dir, 'crontab.txt');
  writeFileSync(
    command,
    `#!/bin/sh
# Stands in for crontab(1): -l lists, - installs stdin, -r removes.
case "$1" in
  -l) [ -f '${file}' ] && exec cat '${file}'; echo "no crontab for $USER" >&2; exit 1 ;;
  -) cat > '${file}' ;;
  -r) [ -f '${file}' ] && exec rm '${file}'; echo "no crontab for $USER" >&2; exit 1 ;;
esac
`,
  );
  chmodSync(command, 0o755);
  return { command, read: () => (existsSync(file) ? readFileSync(file, 'utf8') : null) };
}

/** A private HOME and config for one test. */
function setup() {
  const home = fresh();
  const workspace = join(home, 'my agent');
  mkdirSync(workspace);
  const config = join(home, 'config.yaml');
  writeFileSync(config, 'models: { primary: opus, secondary: codex }\n');
  const env = {
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    CONTEXT_BUS_CONFIG: config,
  };
  return { home, workspace, env, name: monitorJobName(handoffKey(workspace)) };
}

/** The blocks `--dry-run` prints, by the path in their `# <path>` header. */
function blocks(output: string): Record<string, string> {
  const found: Record<string, string> = {};
  for (const block of output.split(/^# (?=\/)/m).slice(1)) {
    const newline = block.indexOf('\n');
    found[block.slice(0, newline)] = block.slice(newline + 1).replace(/\n# then:.*\n$/, '\n');
  }
  return found;
}

describe('ctxbus handoff monitor --install', () => {
  it('--dry-run for systemd prints the service and timer and writes nothing; --print-timer is the same', async () => {
    const { home, workspace, env, name } = setup();
    const printed = await runCli(
      [
        'handoff',
        'monitor',
        '--install',
        '--dry-run',
        '--scheduler',
        'systemd',
        '--interval',
        '15',
        '--workspace',
        workspace,
      ],
      { env },
    );
    expect(printed.code, printed.stderr).toBe(0);
    const units = blocks(printed.stdout);
    const unitDir = join(home, '.config', 'systemd', 'user');
    const service = units[join(unitDir, `${name}.service`)] ?? '';
    const timer = units[join(unitDir, `${name}.timer`)] ?? '';
    expect(timer).toContain(
      `[Timer]\nOnBootSec=15min\nOnUnitActiveSec=15min\nUnit=${name}.service\n`,
    );
    expect(service).toContain('Type=oneshot\n');
    const execStart = service.split('\n').find((line) => line.startsWith('ExecStart='));
    const argv = splitSystemdCommandLine(execStart?.slice('ExecStart='.length) ?? '');
    expect(argv.slice(2)).toEqual(['handoff', 'monitor', '--once', '--workspace', workspace]);
    expect(unitEnvironment(service)).toContainEqual(['CONTEXT_BUS_CONFIG', env.CONTEXT_BUS_CONFIG]);
    // Nothing was written.
    expect(existsSync(unitDir)).toBe(false);
    // --print-timer is the same text.
    const legacy = await runCli(
      ['handoff', 'monitor', '--print-timer', '--interval', '15', '--workspace', workspace],
      { env },
    );
    expect(legacy.stdout).toBe(printed.stdout);
  });

  it.skipIf(!has('systemd-analyze'))(
    'systemd-analyze verify accepts the units (skipped without systemd-analyze)',
    async () => {
      const { workspace, env, name } = setup();
      const printed = await runCli(
        ['handoff', 'monitor', '--print-timer', '--workspace', workspace],
        { env },
      );
      const dir = fresh();
      const runtime = fresh();
      const files = Object.entries(blocks(printed.stdout)).map(([path, text]) => {
        const file = join(dir, path.split('/').at(-1) as string);
        writeFileSync(file, text);
        return file;
      });
      expect(files.map((file) => file.split('/').at(-1)).sort()).toEqual([
        `${name}.service`,
        `${name}.timer`,
      ]);
      const verified = spawnSync('systemd-analyze', ['--user', 'verify', ...files], {
        encoding: 'utf8',
        env: { ...process.env, XDG_RUNTIME_DIR: runtime },
      });
      expect(verified.stderr).toBe('');
      expect(verified.status).toBe(0);
    },
  );

  it(`cron: installs once, keeps the user's lines, and uninstall removes exactly its own (${realCrontab ? "the real crontab, on nobody's crontab" : 'a script standing in for crontab: not root, or no crontab'})`, async () => {
    const { workspace, env, name } = setup();
    const crontab = crontabFor(fresh());
    const before = crontab.read();
    const own = '# my backups\n0 3 * * * /usr/bin/true\n';
    const seed = spawnSync(crontab.command, ['-'], { input: own, encoding: 'utf8' });
    expect(seed.status, seed.stderr).toBe(0);
    const cronEnv = { ...env, CTXBUS_CRONTAB: crontab.command };
    try {
      const args = ['handoff', 'monitor', '--install', '--scheduler', 'cron'];
      const first = await runCli([...args, '--workspace', workspace, '--usage-from', 'openclaw'], {
        env: cronEnv,
      });
      expect(first.code, first.stderr).toBe(0);
      expect(first.stdout).toBe(
        `crontab: ${name} added, every 10 min (log: ${workspace}/.context-bus/monitor.log)\n`,
      );
      const again = await runCli([...args, '--interval', '5', '--workspace', workspace], {
        env: cronEnv,
      });
      expect(again.stdout).toContain(`crontab: ${name} updated, every 5 min`);
      const installed = crontab.read() ?? '';
      expect(installed.startsWith(own)).toBe(true);
      const added = installed.slice(own.length).split('\n');
      expect(added).toHaveLength(3); // the marker, the line, and the final newline
      expect(added[0]).toBe(
        `# ${name} (ctxbus handoff monitor --uninstall removes this line and the next)`,
      );
      expect(added[1]).toMatch(
        new RegExp(
          `^\\*/5 \\* \\* \\* \\* CONTEXT_BUS_CONFIG=\\S+ CTXBUS_CONFIG_DIR=\\S+ \\S+ \\S+ handoff monitor --once --workspace '${workspace}' >> '${workspace}/\\.context-bus/monitor\\.log' 2>&1$`,
        ),
      );
      // The dry run prints the same line and writes nothing.
      const dry = await runCli(
        [...args, '--dry-run', '--interval', '5', '--workspace', workspace],
        { env: cronEnv },
      );
      expect(dry.stdout).toBe(
        `# would be added to your crontab (crontab -l):\n${added[0]}\n${added[1]}\n`,
      );

      const removed = await runCli(
        ['handoff', 'monitor', '--uninstall', '--workspace', workspace],
        {
          env: cronEnv,
        },
      );
      expect(removed.code, removed.stderr).toBe(0);
      expect(removed.stdout).toBe(`crontab: ${name} removed\n`);
      expect(crontab.read()).toBe(own);
      const twice = await runCli(['handoff', 'monitor', '--uninstall', '--workspace', workspace], {
        env: cronEnv,
      });
      expect(twice.stdout).toBe(`not installed: no ${name} in systemd, cron or launchd\n`);
    } finally {
      spawnSync(crontab.command, ['-r']);
      if (before !== null) spawnSync(crontab.command, ['-'], { input: before });
    }
  });

  it('cron: an interval cron cannot express is refused before anything is written', async () => {
    const { workspace, env } = setup();
    const crontab = crontabFor(fresh());
    const refused = await runCli(
      [
        'handoff',
        'monitor',
        '--install',
        '--scheduler',
        'cron',
        '--interval',
        '90',
        '--workspace',
        workspace,
      ],
      { env: { ...env, CTXBUS_CRONTAB: crontab.command } },
    );
    expect(refused.code).toBe(2);
    expect(refused.stderr).toBe(
      'ctxbus: error: cron runs every N minutes below 60, or every whole hour up to 24: --interval 90 is neither\n',
    );
  });

  it('launchd: writes the agent plist (loaded on macOS only); uninstall removes it', async () => {
    const { home, workspace, env, name } = setup();
    const installed = await runCli(
      ['handoff', 'monitor', '--install', '--scheduler', 'launchd', '--workspace', workspace],
      { env },
    );
    expect(installed.code, installed.stderr).toBe(0);
    const plist = join(home, 'Library', 'LaunchAgents', `io.ctxbus.${name}.plist`);
    expect(installed.stdout).toContain(`wrote ${plist}\n`);
    const text = readFileSync(plist, 'utf8');
    expect(text).toContain(`<key>Label</key>\n  <string>io.ctxbus.${name}</string>`);
    expect(text).toContain('<key>StartInterval</key>\n  <integer>600</integer>');
    const removed = await runCli(['handoff', 'monitor', '--uninstall', '--workspace', workspace], {
      env,
    });
    expect(removed.stdout).toContain(`removed ${plist}\n`);
    expect(existsSync(plist)).toBe(false);
  });

  it.skipIf(!has('python3'))(
    "the plist parses with Python's plistlib to the command and environment (skipped without python3)",
    async () => {
      const { workspace, env } = setup();
      const printed = await runCli(
        [
          'handoff',
          'monitor',
          '--install',
          '--dry-run',
          '--scheduler',
          'launchd',
          '--workspace',
          workspace,
        ],
        { env },
      );
      const [text] = Object.values(blocks(printed.stdout));
      const parsed = spawnSync(
        'python3',
        [
          '-c',
          'import json, plistlib, sys; print(json.dumps(plistlib.loads(sys.stdin.buffer.read())))',
        ],
        { input: text, encoding: 'utf8' },
      );
      expect(parsed.status, parsed.stderr).toBe(0);
      const agent = JSON.parse(parsed.stdout);
      expect(agent.ProgramArguments.slice(2)).toEqual([
        'handoff',
        'monitor',
        '--once',
        '--workspace',
        workspace,
      ]);
      expect(agent.EnvironmentVariables.CONTEXT_BUS_CONFIG).toBe(env.CONTEXT_BUS_CONFIG);
      expect(agent).toMatchObject({ StartInterval: 600, RunAtLoad: true });
      expect(agent.StandardOutPath).toBe(join(workspace, '.context-bus', 'monitor.log'));
    },
  );

  it('auto picks systemd where systemctl --user answers, else cron; systemd without a manager is refused', async () => {
    const { workspace, env } = setup();
    const crontab = crontabFor(fresh());
    const cronEnv = { ...env, CTXBUS_CRONTAB: crontab.command };
    const manager = spawnSync('systemctl', ['--user', 'show-environment']).status === 0;
    const dry = await runCli(
      ['handoff', 'monitor', '--install', '--dry-run', '--workspace', workspace],
      { env: cronEnv },
    );
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toMatch(manager ? /\[Timer\]/ : /^# would be added to your crontab/);
    if (!manager) {
      const refused = await runCli(
        ['handoff', 'monitor', '--install', '--scheduler', 'systemd', '--workspace', workspace],
        { env: cronEnv },
      );
      expect(refused.code).toBe(4);
      expect(refused.stderr).toMatch(
        /^ctxbus: error: no systemd user manager here \(.*\): nothing written; use --scheduler cron\n$/,
      );
      expect(existsSync(join(env.XDG_CONFIG_HOME, 'systemd'))).toBe(false);
    }
  });
});
