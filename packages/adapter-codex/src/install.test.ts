import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { removeDir, tempDir } from '@ctxbus/test-kit';
import { afterAll, describe, expect, it } from 'vitest';
import { checkCodex, codexRunner } from './codex-commands.js';
import { HOOK_SCRIPT, inspectCodex, installCodex, uninstallCodex } from './install-codex.js';

// The installer against the real Codex CLI from npm (this package's devDependency): Codex's own
// commands and app-server write its config, in a Codex home of the test's own.

const CODEX = resolve(import.meta.dirname, '../node_modules/.bin/codex');
const missing = existsSync(CODEX) ? null : `no Codex CLI at ${CODEX}: run pnpm install`;
const skip = missing !== null && process.env.CTXBUS_REQUIRE_CODEX !== '1';
const because = missing ? ` (skipped: ${missing})` : '';

const homes: string[] = [];
afterAll(() => {
  for (const home of homes) removeDir(home);
});

/** A Codex home holding a person's own hook, MCP server and setting. */
function codexHome(): string {
  const home = tempDir('ctxbus-codex-home-');
  homes.push(home);
  mkdirSync(home, { recursive: true });
  writeFileSync(
    join(home, 'config.toml'),
    'model = "gpt-5"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\nargs = ["--stdio"]\n',
  );
  writeFileSync(
    join(home, 'hooks.json'),
    JSON.stringify({
      hooks: { Stop: [{ hooks: [{ type: 'command', command: 'notify-send done' }] }] },
    }),
  );
  return home;
}

const options = (home: string) => ({
  url: 'http://127.0.0.1:7420',
  run: codexRunner(CODEX, home),
  codexHome: home,
  nodePath: '/usr/bin/node',
  scriptsDir: '/opt/ctxbus/codex',
  mcpEnv: { CTXBUS_CONFIG_DIR: '/home/me/.config/ctxbus' },
});

describe.skipIf(skip)(`installCodex with the real Codex CLI${because}`, () => {
  it('adds our hooks and server, trusts and approves them, keeps the rest; a re-run changes nothing', async () => {
    const home = codexHome();
    const first = await installCodex(options(home));
    expect(first.changes.join('; ')).toMatch(
      /hooks in .*MCP server ctxbus.*4 hooks trusted.*ctxbus tools approved/s,
    );
    const hooks = JSON.parse(readFileSync(join(home, 'hooks.json'), 'utf8'));
    expect(Object.keys(hooks.hooks).sort()).toEqual([
      'PostToolUse',
      'SessionStart',
      'Stop',
      'UserPromptSubmit',
    ]);
    expect(JSON.stringify(hooks.hooks.Stop)).toContain('notify-send done');
    expect(JSON.stringify(hooks)).toContain(HOOK_SCRIPT);
    const config = readFileSync(join(home, 'config.toml'), 'utf8');
    expect(config).toContain('[mcp_servers.docs]');
    expect(config).toContain('model = "gpt-5"');
    expect(config).toContain('default_tools_approval_mode = "approve"');
    // Codex waits 30 s (not its 10) for the ctxbus server: on a loaded machine 10 s was passed.
    expect(config).toContain('startup_timeout_sec = 60');

    expect(await inspectCodex({ run: codexRunner(CODEX, home), codexHome: home })).toEqual({
      hooksFile: join(home, 'hooks.json'),
      url: 'http://127.0.0.1:7420',
      nodePath: '/usr/bin/node',
      hookScript: '/opt/ctxbus/codex/ctxbus-codex-hook.js',
      hooks: 4,
      trusted: 4,
      mcpServer: true,
      approvals: false,
    });
    const again = await installCodex(options(home));
    expect(again.changes).toEqual([]);
    expect(readFileSync(join(home, 'config.toml'), 'utf8')).toBe(config);
  });

  it('with no Codex home, finds nothing installed and creates no home (a dry run changes nothing)', async () => {
    const parent = tempDir('ctxbus-codex-none-');
    homes.push(parent);
    const home = join(parent, '.codex');
    const found = await inspectCodex({ run: codexRunner(CODEX, home), codexHome: home });
    expect(found).toMatchObject({ hooksFile: null, hooks: 0, mcpServer: false });
    expect(existsSync(home)).toBe(false);
  });

  it('a new hub URL changes the hooks, and they are trusted again at their new hash', async () => {
    const home = codexHome();
    await installCodex(options(home));
    const moved = await installCodex({ ...options(home), url: 'http://127.0.0.1:7999' });
    expect(moved.changes.join('; ')).toContain('4 hooks trusted');
    const found = await inspectCodex({ run: codexRunner(CODEX, home), codexHome: home });
    expect(found).toMatchObject({ url: 'http://127.0.0.1:7999', hooks: 4, trusted: 4 });
  });

  it('--approvals adds the PermissionRequest hook for shell commands, trusted; a re-install without it removes it', async () => {
    const home = codexHome();
    await installCodex(options(home));
    const on = await installCodex({ ...options(home), approvals: { waitSeconds: 120 } });
    expect(on.changes.join('; ')).toMatch(/hooks in .*1 hooks trusted/s);
    const hooks = JSON.parse(readFileSync(join(home, 'hooks.json'), 'utf8'));
    expect(hooks.hooks.PermissionRequest).toEqual([
      {
        matcher: 'Bash',
        hooks: [
          {
            type: 'command',
            command: `"/usr/bin/node" "/opt/ctxbus/codex/${HOOK_SCRIPT}" --url "http://127.0.0.1:7420" --approval-wait 120`,
            timeout: 150,
            statusMessage: expect.stringContaining('asking the team'),
          },
        ],
      },
    ]);
    const run = codexRunner(CODEX, home);
    expect(await inspectCodex({ run, codexHome: home })).toMatchObject({
      url: 'http://127.0.0.1:7420',
      hooks: 5,
      trusted: 5,
      approvals: true,
    });
    expect(
      (await installCodex({ ...options(home), approvals: { waitSeconds: 120 } })).changes,
    ).toEqual([]);
    await installCodex(options(home));
    const off = JSON.parse(readFileSync(join(home, 'hooks.json'), 'utf8'));
    expect(off.hooks.PermissionRequest).toBeUndefined();
    expect(await inspectCodex({ run, codexHome: home })).toMatchObject({
      hooks: 4,
      trusted: 4,
      approvals: false,
    });
  });

  it('uninstall removes exactly ours: hooks, their trust, the server', async () => {
    const home = codexHome();
    await installCodex(options(home));
    const removed = await uninstallCodex({ run: codexRunner(CODEX, home), codexHome: home });
    expect(removed.changes.join('; ')).toMatch(/hook trust.*hooks in .*MCP server ctxbus/s);
    const config = readFileSync(join(home, 'config.toml'), 'utf8');
    expect(config).not.toContain('ctxbus');
    expect(config).not.toContain('trusted_hash');
    expect(config).toContain('[mcp_servers.docs]');
    expect(JSON.parse(readFileSync(join(home, 'hooks.json'), 'utf8'))).toEqual({
      hooks: { Stop: [{ hooks: [{ type: 'command', command: 'notify-send done' }] }] },
    });
    const twice = await uninstallCodex({ run: codexRunner(CODEX, home), codexHome: home });
    expect(twice.changes).toEqual([]);
  });

  it('refuses to replace another MCP server named ctxbus', async () => {
    const home = codexHome();
    writeFileSync(
      join(home, 'config.toml'),
      '[mcp_servers.ctxbus]\ncommand = "someone-else"\nargs = []\n',
    );
    await expect(installCodex(options(home))).rejects.toThrow(/not ctxbus's/);
  });

  it('checkCodex names a config.toml Codex cannot parse in one line, before anything is written', async () => {
    const home = codexHome();
    await expect(checkCodex(codexRunner(CODEX, home))).resolves.toBeUndefined();
    const broken = 'model = "gpt-5"\n[mcp_servers.docs\n';
    writeFileSync(join(home, 'config.toml'), broken);
    const refused = await checkCodex(codexRunner(CODEX, home)).catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: 'validation_failed' });
    const message = (refused as Error).message;
    expect(message).toMatch(
      new RegExp(
        `^Codex cannot read its configuration: ${join(home, 'config.toml')}:2:\\d+: .+; fix it, then run this again$`,
      ),
    );
    expect(message).not.toMatch(/backtrace|\n/i);
    // The installer and the inspection (connect, doctor) say the same, before touching a file.
    await expect(installCodex(options(home))).rejects.toThrow(message);
    await expect(inspectCodex({ run: codexRunner(CODEX, home), codexHome: home })).rejects.toThrow(
      message,
    );
    expect(readFileSync(join(home, 'config.toml'), 'utf8')).toBe(broken);
  });
});
