import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { freePort, removeDir, runCli, tempDir } from '@ctxbus/test-kit';
import { afterAll, describe, expect, it } from 'vitest';

// `ctxbus connect` with no hub running (issue 28): where a systemd user manager answers, it
// starts one as a user service (the unit `ctxbus service install` writes) and waits for it.
// systemd's user manager does not run in this sandbox: the stand-in systemctl answers
// show-environment, and its `restart` starts the unit's ExecStart, with its Environment=,
// as systemd would. The hub it starts is the real one.

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) {
    const pidFile = join(dir, 'hub.pid');
    if (existsSync(pidFile)) {
      try {
        process.kill(Number(readFileSync(pidFile, 'utf8')), 'SIGTERM');
      } catch {
        // already gone
      }
    }
    removeDir(dir);
  }
});

const FAKE_SYSTEMCTL = `#!/bin/sh
echo "$(basename "$0") $*" >> "$FAKE_SYSTEMD_LOG"
[ "$FAKE_SYSTEMD" = absent ] && { echo "Failed to connect to bus: No medium found" >&2; exit 1; }
case "$(basename "$0") $*" in
  "systemctl --user restart ctxbus.service")
    unit="$HOME/.config/systemd/user/ctxbus.service"
    exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
    environment=$(sed -n 's/^Environment=//p' "$unit")
    env $environment $exec_start > "$HOME/hub.log" 2>&1 &
    echo $! > "$HOME/hub.pid" ;;
esac
exit 0
`;

/** A HOME with stand-in systemctl and loginctl, no runtime on PATH, no hub, no credentials. */
function machine(systemd: 'running' | 'absent') {
  const home = tempDir('ctxbus-connect-service-');
  dirs.push(home);
  const bin = join(home, 'bin');
  mkdirSync(bin);
  for (const tool of ['systemctl', 'loginctl']) {
    writeFileSync(join(bin, tool), FAKE_SYSTEMCTL);
    chmodSync(join(bin, tool), 0o755);
  }
  const log = join(home, 'systemd.log');
  writeFileSync(log, '');
  const configDir = join(home, '.config', 'ctxbus');
  return {
    home,
    configDir,
    calls: () => readFileSync(log, 'utf8').split('\n').filter(Boolean),
    env: {
      HOME: home,
      USER: 'tester',
      XDG_CONFIG_HOME: '',
      XDG_DATA_HOME: '',
      CTXBUS_CONFIG_DIR: configDir,
      // No Claude Code, OpenClaw or Codex here: only the stand-ins, Node and the system's tools.
      PATH: `${bin}:${dirname(process.execPath)}:/usr/bin:/bin`,
      FAKE_SYSTEMD: systemd,
      FAKE_SYSTEMD_LOG: log,
    },
  };
}

describe('ctxbus connect with no hub running', () => {
  it('starts one as a systemd user service, waits for it, then looks for runtimes', async () => {
    const box = machine('running');
    const url = `http://127.0.0.1:${await freePort()}`;
    const result = await runCli(['connect', '--url', url, '--only', 'claude-code'], {
      env: box.env,
    });
    // No Claude Code on this machine: exit 4, after the hub was started and answered.
    expect(result.code, result.stderr).toBe(4);
    const lines = result.stdout.trim().split('\n');
    expect(lines[0]).toBe(
      `no hub answers at ${url}: starting one as a systemd user service (ctxbus service install --port ${new URL(url).port})`,
    );
    expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^hub ${url}, team \\S+$`)));
    expect(result.stdout).toMatch(/Claude Code: not found/);
    expect(box.calls()).toEqual(
      expect.arrayContaining([
        'systemctl --user daemon-reload',
        'systemctl --user enable ctxbus.service',
        'systemctl --user restart ctxbus.service',
      ]),
    );
    // The unit's hub runs and saved its admin token where connect mints with it.
    const health = await fetch(`${url}/health`);
    expect(health.ok).toBe(true);
    const credentials = JSON.parse(readFileSync(join(box.configDir, 'credentials.json'), 'utf8'));
    expect(credentials.defaultHub).toBe(url);
    // Again: the hub answers, so nothing is installed or restarted.
    const before = box.calls().length;
    const again = await runCli(['connect', '--url', url, '--only', 'claude-code'], {
      env: box.env,
    });
    expect(again.code).toBe(4);
    expect(again.stdout).not.toContain('starting one');
    expect(box.calls().slice(before)).toEqual([]);
  });

  it('--dry-run says it would start one and starts nothing', async () => {
    const box = machine('running');
    const url = `http://127.0.0.1:${await freePort()}`;
    const result = await runCli(['connect', '--dry-run', '--url', url], { env: box.env });
    expect(result.stdout.split('\n')[0]).toBe(
      `no hub answers at ${url}: would start one as a systemd user service (ctxbus service install --port ${new URL(url).port})`,
    );
    expect(box.calls()).toEqual(['systemctl --user show-environment']);
    expect(existsSync(join(box.home, '.config', 'systemd', 'user', 'ctxbus.service'))).toBe(false);
  });

  it('--no-service, a remote URL or no systemd: exit 6 with how to start one, nothing written', async () => {
    const box = machine('running');
    const url = `http://127.0.0.1:${await freePort()}`;
    const refused = await runCli(['connect', '--no-service', '--url', url], { env: box.env });
    expect(refused.code).toBe(6);
    // The hub's own port, so that the command it names serves the hub asked for.
    expect(refused.stderr).toContain(
      `no hub answers at ${url}: start one with \`ctxbus serve --port ${new URL(url).port}\``,
    );
    const remote = await runCli(['connect', '--url', 'https://hub.example.invalid'], {
      env: box.env,
    });
    expect(remote.code).toBe(6);
    expect(box.calls()).toEqual([]);
    const bare = machine('absent');
    const none = await runCli(['connect', '--url', url], { env: bare.env });
    expect(none.code).toBe(6);
    expect(none.stderr).toContain(
      `no hub answers at ${url}: start one with \`ctxbus serve --port ${new URL(url).port}\``,
    );
    expect(none.stderr).toContain(
      '(no systemd user manager to start one as a service: Failed to connect to bus',
    );
    expect(existsSync(join(bare.home, '.config', 'systemd'))).toBe(false);
  });
});

describe('ctxbus disconnect while the hub does not answer', () => {
  it('undoes the rest, keeps the token on record, exits 6; the next disconnect tries again', async () => {
    const { env, configDir } = machine('absent');
    const hub = `http://127.0.0.1:${await freePort()}`;
    mkdirSync(configDir, { recursive: true });
    const statePath = join(configDir, 'connections.json');
    writeFileSync(
      statePath,
      JSON.stringify({
        version: 1,
        connections: {
          'claude-code': {
            hub,
            connectedAt: '2026-11-30T10:00:00.000Z',
            teamId: 'acme',
            tokenId: 'tok_still_live',
            savedToken: false,
            files: [],
          },
        },
      }),
    );
    for (const attempt of ['first', 'second']) {
      const result = await runCli(['disconnect'], { env });
      expect(result.code, `${attempt}: ${result.stderr}`).toBe(6);
      expect(result.stdout).toMatch(/token acme\/claude-code not revoked .*kept on record/);
      expect(result.stderr).toMatch(/acme\/claude-code still works: run ctxbus disconnect again/);
      const kept = JSON.parse(readFileSync(statePath, 'utf8'));
      expect(kept.connections['claude-code']).toMatchObject({
        tokenId: 'tok_still_live',
        files: [],
      });
    }
  });
});

describe('ctxbus connect when one runtime fails while it is being wired', () => {
  it('reports it, wires the others, and says how to undo: the failed one is on record', async () => {
    const box = machine('absent');
    const { startHubProcess } = await import('@ctxbus/test-kit');
    const hub = await startHubProcess({
      env: { CTXBUS_CONFIG_DIR: box.configDir, HOME: box.home },
    });
    try {
      const bin = join(box.home, 'bin');
      // A Claude Code that answers its version (its wiring is ctxbus's own file writes), and an
      // OpenClaw whose every command fails, as a broken install's does.
      writeFileSync(join(bin, 'claude'), '#!/bin/sh\necho "2.1.0 (Claude Code)"\n');
      writeFileSync(
        join(bin, 'openclaw'),
        '#!/bin/sh\necho "Error: Cannot find module \'/usr/lib/openclaw/dist/entry.js\'" >&2\nexit 1\n',
      );
      for (const tool of ['claude', 'openclaw']) chmodSync(join(bin, tool), 0o755);
      mkdirSync(join(box.home, '.openclaw'));
      writeFileSync(join(box.home, '.openclaw', 'openclaw.json'), '{}\n');
      const result = await runCli(['connect', '--url', hub.url, '--team', 'acme'], {
        env: box.env,
      });
      expect(result.code, result.stderr).toBe(1);
      expect(result.stdout).toContain('connected Claude Code');
      expect(result.stdout).toMatch(/OpenClaw: not connected: openclaw plugins install failed/);
      expect(result.stdout).toContain('undo with: ctxbus disconnect');
      const state = JSON.parse(readFileSync(join(box.configDir, 'connections.json'), 'utf8'));
      expect(Object.keys(state.connections).sort()).toEqual(['claude-code', 'openclaw']);
    } finally {
      await hub.stop();
    }
  });
});
