import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  HOOK_SCRIPT,
  inspectClaudeCode,
  installClaudeCode,
  MCP_SCRIPT,
  uninstallClaudeCode,
} from './install.js';

const dirs: string[] = [];
const fresh = () => {
  const dir = mkdtempSync(join(tmpdir(), 'ctxbus-install-'));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const read = (path: string) => JSON.parse(readFileSync(path, 'utf8'));
const options = {
  url: 'http://127.0.0.1:7420',
  token: 'cbx_test_token',
  nodePath: '/usr/bin/node',
  scriptsDir: '/opt/ctxbus',
};

describe('installClaudeCode --project', () => {
  it('merges hooks, env, permission and MCP server into existing settings', () => {
    const project = fresh();
    mkdirSync(join(project, '.claude'));
    const theirs = {
      env: { OTHER: '1' },
      permissions: { allow: ['Bash(npm test)'] },
      hooks: { Stop: [{ hooks: [{ type: 'command', command: 'say done' }] }] },
      model: 'opus',
    };
    writeFileSync(join(project, '.claude', 'settings.local.json'), JSON.stringify(theirs));
    writeFileSync(
      join(project, '.mcp.json'),
      JSON.stringify({ mcpServers: { github: { type: 'http', url: 'https://x' } } }),
    );

    const home = fresh();
    installClaudeCode({ ...options, target: { kind: 'project', dir: project, home } });
    const settings = read(join(project, '.claude', 'settings.local.json'));
    expect(settings.model).toBe('opus');
    expect(settings.env).toEqual({
      OTHER: '1',
      CTXBUS_URL: 'http://127.0.0.1:7420',
      CTXBUS_TOKEN: 'cbx_test_token',
    });
    expect(settings.permissions.allow).toEqual(['Bash(npm test)', 'mcp__ctxbus']);
    // The server is in local scope (no approval needed), not in .mcp.json.
    expect(settings.enabledMcpjsonServers).toBeUndefined();
    expect(settings.hooks.Stop).toHaveLength(2);
    expect(settings.hooks.Stop[0]).toEqual(theirs.hooks.Stop[0]);
    for (const event of ['SessionStart', 'UserPromptSubmit', 'PostToolUse', 'Stop', 'SessionEnd']) {
      expect(JSON.stringify(settings.hooks[event])).toContain(
        `"\\"/usr/bin/node\\" \\"/opt/ctxbus/${HOOK_SCRIPT}\\""`,
      );
    }
    expect(settings.hooks.SessionStart[0].matcher).toBe('startup|resume|clear|compact');
    expect(statSync(join(project, '.claude', 'settings.local.json')).mode & 0o777).toBe(0o600);

    // Nothing of this machine goes into .mcp.json, which projects commit: the server (with its
    // paths) is in Claude Code's local scope, under the project's real path.
    expect(read(join(project, '.mcp.json'))).toEqual({
      mcpServers: { github: { type: 'http', url: 'https://x' } },
    });
    const state = read(join(home, '.claude.json'));
    expect(state.projects[realpathSync(project)].mcpServers.ctxbus).toEqual({
      type: 'stdio',
      command: '/usr/bin/node',
      args: [`/opt/ctxbus/${MCP_SCRIPT}`],
      env: { CTXBUS_URL: 'http://127.0.0.1:7420', CTXBUS_TOKEN: 'cbx_test_token' },
    });
    // Claude Code's state file is the user's own: private, like the settings file.
    expect(statSync(join(home, '.claude.json')).mode & 0o777).toBe(0o600);
  });

  it('is idempotent, and --uninstall restores what was there', () => {
    const project = fresh();
    mkdirSync(join(project, '.claude'));
    const before = JSON.stringify({
      env: { OTHER: '1' },
      hooks: { Stop: [{ hooks: [{ type: 'command', command: 'say done' }] }] },
    });
    writeFileSync(join(project, '.claude', 'settings.local.json'), before);
    const home = fresh();
    writeFileSync(join(home, '.claude.json'), JSON.stringify({ numStartups: 1 }));
    const target = { kind: 'project' as const, dir: project, home };
    installClaudeCode({ ...options, target });
    const once = readFileSync(join(project, '.claude', 'settings.local.json'), 'utf8');
    installClaudeCode({ ...options, target });
    expect(readFileSync(join(project, '.claude', 'settings.local.json'), 'utf8')).toBe(once);

    const removed = uninstallClaudeCode(target);
    expect(removed.files).toHaveLength(2);
    expect(read(join(project, '.claude', 'settings.local.json'))).toEqual(JSON.parse(before));
    // The project's entry install made is gone too: the file is as it was.
    expect(read(join(home, '.claude.json'))).toEqual({ numStartups: 1 });
    expect(existsSync(join(project, '.mcp.json'))).toBe(false);
    expect(uninstallClaudeCode(target).files).toEqual([]);
  });

  it('keeps its token out of git and, uninstalled, leaves no empty .claude behind', () => {
    const repo = fresh();
    mkdirSync(join(repo, '.git', 'info'), { recursive: true });
    writeFileSync(join(repo, '.git', 'info', 'exclude'), '# git ls-files --exclude-from\n*.swp');
    const project = join(repo, 'app');
    mkdirSync(project);
    const target = { kind: 'project' as const, dir: project, home: fresh() };
    const installed = installClaudeCode({ ...options, target });
    expect(installed.files).toContain(join(repo, '.git', 'info', 'exclude'));
    expect(readFileSync(join(repo, '.git', 'info', 'exclude'), 'utf8')).toBe(
      '# git ls-files --exclude-from\n*.swp\n/app/.claude/settings.local.json\n',
    );
    installClaudeCode({ ...options, target });
    expect(
      readFileSync(join(repo, '.git', 'info', 'exclude'), 'utf8').match(/settings\.local/g),
    ).toHaveLength(1);
    uninstallClaudeCode(target);
    expect(readFileSync(join(repo, '.git', 'info', 'exclude'), 'utf8')).toBe(
      '# git ls-files --exclude-from\n*.swp\n',
    );
    expect(existsSync(join(project, '.claude'))).toBe(false);
  });

  it('moves the MCP server an earlier version put in .mcp.json to local scope', () => {
    const project = fresh();
    const home = fresh();
    writeFileSync(
      join(project, '.mcp.json'),
      JSON.stringify({
        mcpServers: {
          ctxbus: { type: 'stdio', command: '/usr/bin/node', args: [`/old/${MCP_SCRIPT}`] },
          github: { type: 'http', url: 'https://x' },
        },
      }),
    );
    mkdirSync(join(project, '.claude'));
    writeFileSync(
      join(project, '.claude', 'settings.local.json'),
      JSON.stringify({ enabledMcpjsonServers: ['ctxbus', 'github'] }),
    );
    installClaudeCode({ ...options, target: { kind: 'project', dir: project, home } });
    expect(read(join(project, '.mcp.json'))).toEqual({
      mcpServers: { github: { type: 'http', url: 'https://x' } },
    });
    expect(read(join(project, '.claude', 'settings.local.json')).enabledMcpjsonServers).toEqual([
      'github',
    ]);
  });

  it('refuses to touch a settings file that is not valid JSON', () => {
    const project = fresh();
    mkdirSync(join(project, '.claude'));
    writeFileSync(join(project, '.claude', 'settings.local.json'), '{ "hooks": ');
    expect(() =>
      installClaudeCode({ ...options, target: { kind: 'project', dir: project, home: fresh() } }),
    ).toThrow(/settings\.local\.json is not valid JSON .*nothing was changed/);
    expect(readFileSync(join(project, '.claude', 'settings.local.json'), 'utf8')).toBe(
      '{ "hooks": ',
    );
    expect(existsSync(join(project, '.mcp.json'))).toBe(false);
  });

  it('rejects a URL that is not http(s)', () => {
    expect(() =>
      installClaudeCode({
        ...options,
        url: 'ftp://x',
        target: { kind: 'project', dir: fresh(), home: fresh() },
      }),
    ).toThrow(/--url must be an http\(s\) URL/);
  });
});

describe('installClaudeCode --user', () => {
  it("writes ~/.claude/settings.json and the user MCP server in ~/.claude.json, keeping Claude Code's state", () => {
    const home = fresh();
    writeFileSync(
      join(home, '.claude.json'),
      JSON.stringify({ numStartups: 3, projects: { '/x': {} } }),
    );
    installClaudeCode({ ...options, target: { kind: 'user', home } });
    const state = read(join(home, '.claude.json'));
    expect(state.numStartups).toBe(3);
    expect(state.mcpServers.ctxbus.args).toEqual([`/opt/ctxbus/${MCP_SCRIPT}`]);
    expect(read(join(home, '.claude', 'settings.json')).env.CTXBUS_TOKEN).toBe('cbx_test_token');
    expect(read(join(home, '.claude', 'settings.json')).enabledMcpjsonServers).toBeUndefined();
    uninstallClaudeCode({ kind: 'user', home });
    expect(read(join(home, '.claude.json'))).toEqual({ numStartups: 3, projects: { '/x': {} } });
    expect(existsSync(join(home, '.claude', 'settings.json'))).toBe(true);
  });
});

describe('installClaudeCode, settings linked in from dotfiles', () => {
  it('writes through the links and keeps them, install and uninstall', () => {
    const home = fresh();
    const dotfiles = fresh();
    mkdirSync(join(home, '.claude'));
    writeFileSync(join(dotfiles, 'settings.json'), JSON.stringify({ theme: 'dark' }));
    writeFileSync(join(dotfiles, 'claude.json'), JSON.stringify({ numStartups: 3 }));
    symlinkSync(join(dotfiles, 'settings.json'), join(home, '.claude', 'settings.json'));
    symlinkSync(join(dotfiles, 'claude.json'), join(home, '.claude.json'));
    installClaudeCode({ ...options, target: { kind: 'user', home } });
    for (const link of [join(home, '.claude', 'settings.json'), join(home, '.claude.json')])
      expect(lstatSync(link).isSymbolicLink(), link).toBe(true);
    expect(read(join(dotfiles, 'settings.json'))).toMatchObject({
      theme: 'dark',
      env: { CTXBUS_TOKEN: 'cbx_test_token' },
    });
    expect(read(join(dotfiles, 'claude.json')).mcpServers.ctxbus).toBeDefined();
    uninstallClaudeCode({ kind: 'user', home });
    expect(lstatSync(join(home, '.claude', 'settings.json')).isSymbolicLink()).toBe(true);
    expect(read(join(dotfiles, 'claude.json'))).toEqual({ numStartups: 3 });
    expect(read(join(dotfiles, 'settings.json')).env?.CTXBUS_TOKEN).toBeUndefined();
  });
});

describe('inspectClaudeCode', () => {
  it('reads back what install wrote, and nothing once uninstalled', () => {
    const target = { kind: 'project' as const, dir: fresh(), home: fresh() };
    expect(inspectClaudeCode(target)).toEqual({
      settings: null,
      url: null,
      token: null,
      nodePath: null,
      hookScript: null,
      mcpServer: false,
      live: false,
    });
    installClaudeCode({ ...options, nodePath: '/opt/my "node"/bin/node', target });
    expect(inspectClaudeCode(target)).toEqual({
      settings: join(target.dir, '.claude', 'settings.local.json'),
      url: 'http://127.0.0.1:7420',
      token: 'cbx_test_token',
      nodePath: '/opt/my "node"/bin/node',
      hookScript: `/opt/ctxbus/${HOOK_SCRIPT}`,
      mcpServer: true,
      live: false,
    });
    uninstallClaudeCode(target);
    expect(inspectClaudeCode(target).settings).toBeNull();
    expect(inspectClaudeCode(target).mcpServer).toBe(false);
  });
});

describe('installClaudeCode --live', () => {
  it('turns live push on in the env, off again on an install without it, and uninstalls it', () => {
    const target = { kind: 'project' as const, dir: fresh(), home: fresh() };
    const settingsFile = join(target.dir, '.claude', 'settings.local.json');
    installClaudeCode({ ...options, target });
    expect(read(settingsFile).env.CTXBUS_LIVE).toBeUndefined();
    expect(inspectClaudeCode(target).live).toBe(false);
    installClaudeCode({ ...options, target, live: true });
    expect(read(settingsFile).env.CTXBUS_LIVE).toBe('1');
    expect(inspectClaudeCode(target).live).toBe(true);
    installClaudeCode({ ...options, target, live: true });
    expect(read(settingsFile).env.CTXBUS_LIVE).toBe('1');
    installClaudeCode({ ...options, target });
    expect(read(settingsFile).env.CTXBUS_LIVE).toBeUndefined();
    installClaudeCode({ ...options, target, live: true });
    uninstallClaudeCode(target);
    expect(existsSync(settingsFile)).toBe(false);
  });
});
