import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  installOpenClaw,
  mcpServerEntry,
  openclawRunner,
  otherContextEngine,
  planInstall,
  planUninstall,
  readOpenClawConfig,
  uninstallOpenClaw,
} from './install-openclaw.js';

// The plans are what decides idempotence and exact uninstall; test/e2e runs them through the
// real `openclaw` command (install, twice, uninstall) and loads the plugin.

const settings = { url: 'http://127.0.0.1:4100', token: 'tok-1', pluginDir: '/opt/ctxbus/plugin' };

/** A config after install, with the user's own settings around ours. */
function installed(): Record<string, unknown> {
  return {
    agents: { defaults: { model: { primary: 'local/fake' } } },
    plugins: {
      load: { paths: ['/home/me/my-plugin', '/opt/ctxbus/plugin'] },
      slots: { memory: 'memory-core', contextEngine: 'ctxbus' },
      entries: {
        ctxbus: {
          enabled: true,
          hooks: { allowConversationAccess: true, timeoutMs: 20_000 },
          config: { url: 'http://127.0.0.1:4100', token: 'tok-1', tokenBudget: 3_000 },
        },
        other: { enabled: true },
      },
    },
    mcp: { servers: { ctxbus: mcpServerEntry('http://127.0.0.1:4100', 'tok-1'), files: {} } },
  };
}

describe('planInstall', () => {
  it('links the plugin and sets everything in an empty config', () => {
    const plan = planInstall({}, settings);
    expect(plan.linkPlugin).toBe(true);
    expect(plan.patch).toEqual({
      plugins: {
        slots: { contextEngine: 'ctxbus' },
        entries: {
          ctxbus: {
            enabled: true,
            hooks: { allowConversationAccess: true },
            config: { url: 'http://127.0.0.1:4100', token: 'tok-1', livePush: null },
          },
        },
      },
      mcp: {
        servers: {
          ctxbus: {
            url: 'http://127.0.0.1:4100/mcp',
            transport: 'streamable-http',
            headers: { Authorization: 'Bearer tok-1' },
          },
        },
      },
    });
  });

  it('changes nothing when the config already holds it, whatever else the user set', () => {
    expect(planInstall(installed(), settings)).toEqual({
      linkPlugin: false,
      installPackage: false,
      patch: null,
    });
  });

  it('a new token or URL is one patch; the user’s other plugin settings stay (merge)', () => {
    const plan = planInstall(installed(), { ...settings, token: 'tok-2' });
    expect(plan.linkPlugin).toBe(false);
    const entry = (plan.patch as { plugins: { entries: { ctxbus: { config: object } } } }).plugins
      .entries.ctxbus;
    expect(entry.config).toEqual({ url: 'http://127.0.0.1:4100', token: 'tok-2', livePush: null });
    expect(entry.config).not.toHaveProperty('tokenBudget'); // merged by OpenClaw, not replaced
  });

  it('--live turns the live push on; installing without it turns it off again', () => {
    const on = planInstall(installed(), { ...settings, live: true });
    const config = (patch: unknown) =>
      (patch as { plugins: { entries: { ctxbus: { config: object } } } }).plugins.entries.ctxbus
        .config;
    expect(config(on.patch)).toMatchObject({ livePush: true });
    const live = installed();
    Object.assign(config(live), { livePush: true });
    expect(planInstall(live, { ...settings, live: true }).patch).toBeNull();
    expect(config(planInstall(live, settings).patch)).toMatchObject({ livePush: null });
  });

  it("selects the ctxbus context engine over OpenClaw's default, never over another plugin's", () => {
    const slots = (patch: unknown) => (patch as { plugins: { slots?: object } }).plugins.slots;
    const withEngine = (contextEngine: string | undefined) => {
      const config = installed();
      const plugins = config.plugins as { slots: { contextEngine?: string } };
      if (contextEngine === undefined) delete plugins.slots.contextEngine;
      else plugins.slots.contextEngine = contextEngine;
      return config;
    };
    expect(slots(planInstall(withEngine(undefined), settings).patch)).toEqual({
      contextEngine: 'ctxbus',
    });
    expect(slots(planInstall(withEngine('legacy'), settings).patch)).toEqual({
      contextEngine: 'ctxbus',
    });
    expect(planInstall(withEngine('lossless-claw'), settings).patch).toBeNull();
    expect(otherContextEngine(withEngine('lossless-claw'))).toBe('lossless-claw');
    expect(otherContextEngine(withEngine('legacy'))).toBeNull();
  });

  it('re-enables a plugin the user disabled', () => {
    const config = installed();
    (config.plugins as { entries: { ctxbus: { enabled: boolean } } }).entries.ctxbus.enabled =
      false;
    expect(planInstall(config, settings).patch).not.toBeNull();
  });
});

describe('planUninstall', () => {
  it('removes exactly what install added', () => {
    expect(planUninstall(installed(), '/opt/ctxbus/plugin')).toEqual({
      unlinkPlugin: true,
      removePackage: false,
      patch: {
        plugins: { slots: { contextEngine: null }, entries: { ctxbus: null } },
        mcp: { servers: { ctxbus: null } },
      },
    });
  });

  it('does nothing on a config without ctxbus', () => {
    expect(planUninstall({ plugins: { entries: { other: {} } } }, '/opt/ctxbus/plugin')).toEqual({
      unlinkPlugin: false,
      removePackage: false,
      patch: null,
    });
  });
});

describe('the packed plugin', () => {
  const plugin = {
    kind: 'package',
    tarball: '/opt/ctxbus-openclaw-plugin-0.2.0.tgz',
    version: '0.2.0',
  } as const;
  const npm = (version: string) => ({ version, rootDir: '/x', installSource: 'npm' });

  it('installs the package when OpenClaw has none, another version, or a linked folder', () => {
    for (const present of [null, npm('0.1.0'), { ...npm('0.2.0'), installSource: 'path' }]) {
      const plan = planInstall(installed(), { ...settings, plugin, installed: present });
      expect(plan).toMatchObject({ linkPlugin: false, installPackage: true, patch: null });
    }
  });

  it('changes nothing when that version is installed and configured', () => {
    expect(planInstall(installed(), { ...settings, plugin, installed: npm('0.2.0') })).toEqual({
      linkPlugin: false,
      installPackage: false,
      patch: null,
    });
  });

  it('uninstall removes an npm-installed plugin, never a linked folder', () => {
    expect(planUninstall(installed(), plugin, npm('0.2.0')).removePackage).toBe(true);
    expect(planUninstall(installed(), plugin, null).removePackage).toBe(false);
    expect(planUninstall(installed(), plugin, npm('0.2.0')).unlinkPlugin).toBe(false);
  });
});

describe('the OpenClaw commands install and uninstall run', () => {
  const plugin = {
    kind: 'package',
    tarball: '/opt/ctxbus-openclaw-plugin-0.2.0.tgz',
    version: '0.2.0',
  } as const;
  let home: string;
  let configPath: string;
  beforeEach(() => {
    home = mkdtempSync(join(tmpdir(), 'ctxbus-openclaw-runs-'));
    configPath = join(home, '.openclaw', 'openclaw.json');
    mkdirSync(join(home, '.openclaw'));
    writeFileSync(configPath, '// mine\n{ agents: { defaults: {} } }\n');
  });
  afterEach(() => rmSync(home, { recursive: true, force: true }));

  /** A stand-in for OpenClaw that records each command; OpenClaw has `plugins` installed. */
  function recorder(plugins: object[] = []) {
    const calls: string[] = [];
    const run = Object.assign(
      async (args: string[]) => {
        calls.push(args.slice(0, 2).join(' '));
        return args[1] === 'list' ? JSON.stringify({ plugins }) : '';
      },
      { where: { env: { HOME: home } } },
    );
    return { run, calls };
  }

  it('on a config without ctxbus: install and one config patch, nothing asked', async () => {
    const { run, calls } = recorder();
    const result = await installOpenClaw({ url: 'http://127.0.0.1:4100', token: 't', run, plugin });
    expect(result.configPath).toBe(configPath);
    expect(calls).toEqual(['plugins install', 'config patch']);
  });

  it('with the plugin configured: asks which one OpenClaw has, then nothing when it is this one', async () => {
    writeFileSync(configPath, JSON.stringify(installed()));
    const { run, calls } = recorder([
      { id: 'ctxbus', version: '0.2.0', trust: { installSource: 'npm' } },
    ]);
    const result = await installOpenClaw({ ...settings, run, plugin });
    expect(result.changes).toEqual([]);
    expect(calls).toEqual(['plugins list']);
  });

  it('a runner that does not say where OpenClaw runs: OpenClaw is asked for its config file', async () => {
    const calls: string[] = [];
    const run = async (args: string[]) => {
      calls.push(args.slice(0, 2).join(' '));
      return args[1] === 'file' ? `${configPath}\n` : '';
    };
    expect((await readOpenClawConfig(run)).path).toBe(configPath);
    expect(calls).toEqual(['config file']);
  });

  it('uninstall reads the config once, then removes the package and the rest', async () => {
    writeFileSync(configPath, JSON.stringify(installed()));
    const { run, calls } = recorder([
      { id: 'ctxbus', version: '0.2.0', trust: { installSource: 'npm' } },
    ]);
    await uninstallOpenClaw({ run, plugin });
    expect(calls).toEqual(['plugins list', 'plugins uninstall', 'config patch']);
  });
});

describe('openclawRunner: a failed openclaw command in one line', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'ctxbus-openclaw-runner-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** An `openclaw` stand-in: a shell script with the given body. */
  function fakeOpenClaw(body: string): string {
    const bin = join(dir, 'openclaw');
    writeFileSync(bin, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
    return bin;
  }

  it('says the exit code and OpenClaw’s own error line, not its warnings', async () => {
    const bin = fakeOpenClaw(
      'echo "[sqlite/transaction] slow SQLite transaction hold elapsedMs=3963" >&2\necho "Error: plugin path not found" >&2\nexit 3',
    );
    await expect(openclawRunner(bin)(['plugins', 'install', '-l', '/x'])).rejects.toThrow(
      /^openclaw plugins install failed \(exit 3\): Error: plugin path not found$/,
    );
  });

  it('says a command that printed too much was stopped for that, not that it hung', async () => {
    const bin = fakeOpenClaw('head -c 40000000 /dev/zero\nexec sleep 30');
    await expect(openclawRunner(bin)(['plugins', 'list', '--json'])).rejects.toThrow(
      /^openclaw plugins list printed more than 32 MiB and was stopped$/,
    );
  });

  it('says a command that hangs was stopped after the bound, not that it failed with a warning', async () => {
    const bin = fakeOpenClaw(
      'echo "[sqlite/transaction] slow SQLite transaction hold" >&2\nexec sleep 30',
    );
    await expect(
      openclawRunner(bin, undefined, undefined, 300)(['plugins', 'install']),
    ).rejects.toThrow(/^openclaw plugins install did not finish in 0\.3 s and was stopped/);
  });
});
