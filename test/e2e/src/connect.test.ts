import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { describe, expect } from 'vitest';
import {
  BIN_DIR,
  closedPort,
  connectIt,
  countOpenClawStarts,
  removeDir,
  savedCredentials,
  tempDir,
  tokenAccepted,
  useConnectMachine,
} from './connect-world.js';

// `ctxbus connect` on a machine with the real Claude Code and OpenClaw from npm and a real
// hub (issue 28): what it shows, that a dry run writes nothing, --only, that a re-run changes
// nothing, and that disconnect gives back the person's files byte for byte and revokes the
// tokens it minted. Then what it says when a runtime cannot run here (exit codes by cause).

const machine = useConnectMachine();
const openclaw = countOpenClawStarts(machine);

type Json = Record<string, unknown>;
const readJson = (path: string) => JSON.parse(readFileSync(path, 'utf8')) as Json;

/** Claude Code's token, as install wrote it in the user settings. */
const claudeToken = () =>
  (readJson(machine.files[0] as string).env as Record<string, string>).CTXBUS_TOKEN as string;

/** The runtime tokens ctxbus's credentials hold for the hub. */
const savedRuntimes = () =>
  Object.values(savedCredentials(machine.configDir).hubs)[0]?.runtimes ?? {};

/** OpenClaw's JSON output (its own lines may come before it). */
async function openclawPlugins(): Promise<Json[]> {
  const result = await machine.openclaw.run(['plugins', 'list', '--json']);
  return (JSON.parse(result.stdout.slice(result.stdout.indexOf('{'))) as { plugins: Json[] })
    .plugins;
}

describe('ctxbus connect', () => {
  let original: Record<string, Buffer>;
  let connected: Record<string, Buffer>;
  let tokens: string[] = [];
  const statePath = () => join(machine.configDir, 'connections.json');

  connectIt('says how to start a hub when none answers (exit 6), writing nothing', async () => {
    original = machine.snapshot();
    const url = `http://127.0.0.1:${await closedPort()}`;
    const result = await machine.ctxbus(['connect', '--url', url]);
    expect(result.code, result.stderr).toBe(6);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toContain(
      `no hub answers at ${url}: start one with \`ctxbus serve --port ${new URL(url).port}\``,
    );
    expect(machine.snapshot()).toEqual(original);
  });

  connectIt('says the admin token is the one refused (exit 3), writing nothing', async () => {
    const result = await machine.ctxbus([
      'connect',
      '--only',
      'codex',
      '--admin-token',
      'cbx_not_a_token_of_this_hub_000000000000',
    ]);
    expect(result.code, result.stderr).toBe(3);
    expect(result.stderr).toContain("the hub refuses the admin token that mints codex's");
    expect(machine.snapshot()).toEqual(original);
  });

  connectIt(
    '--dry-run shows each runtime found and what it would add, writing nothing',
    async () => {
      const result = await machine.ctxbus(['connect', '--dry-run']);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toContain(`hub ${machine.hub.url}`);
      expect(result.stdout).toMatch(/Claude Code 2\.1\.\d+ \(.*claude\): will add hooks/);
      expect(result.stdout).toMatch(
        /OpenClaw 2026\.\d+\.\d+ \(.*openclaw\): will add the ctxbus plugin/,
      );
      expect(result.stdout).toMatch(/Codex 0\.\d+\.\d+ \(.*codex\): will add hooks/);
      expect(result.stdout).toContain('dry run: nothing changed');
      expect(machine.snapshot()).toEqual(original);
      expect(existsSync(statePath())).toBe(false);
      expect(Object.values(savedCredentials(machine.configDir).hubs)[0]?.runtimes).toBeUndefined();
    },
  );

  connectIt('--only takes known runtimes (exit 2 otherwise)', async () => {
    const result = await machine.ctxbus(['connect', '--only', 'claude-code,nope']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--only takes runtimes among claude-code, openclaw, codex');
  });

  connectIt('--only claude-code wires Claude Code alone, with a token of its own', async () => {
    const result = await machine.ctxbus(['connect', '--only', 'claude-code']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('connected Claude Code');
    expect(result.stdout).not.toContain('OpenClaw');
    const settings = readJson(machine.files[0] as string);
    expect(JSON.stringify(settings.hooks)).toContain('echo mine'); // the person's hook stays
    expect(JSON.stringify(settings.hooks)).toContain('ctxbus-claude-hook.js');
    expect(await tokenAccepted(machine.hub, claudeToken())).toBe(true);
    expect(readFileSync(machine.files[2] as string)).toEqual(original[machine.files[2] as string]);
  });

  connectIt('then wires OpenClaw and Codex; Claude Code is already connected', async () => {
    const result = await machine.ctxbus(['connect'], { PATH: openclaw.path });
    expect(result.code, result.stderr).toBe(0);
    // OpenClaw started only to change something: its config is read in place.
    expect(openclaw.take()).toEqual(['plugins install', 'config patch']);
    expect(result.stdout).toMatch(/Claude Code .*: already connected/);
    expect(result.stdout).toContain('connected OpenClaw');
    expect(result.stdout).toContain('connected Codex');
    const plugin = (await openclawPlugins()).find((entry) => entry.id === 'ctxbus');
    expect(plugin?.status).toBe('loaded');
    const config = machine.openclaw.readConfig() as {
      plugins: { entries: { ctxbus: { config: { url: string; token: string } } } };
    };
    const { url, token } = config.plugins.entries.ctxbus.config;
    expect(url).toBe(machine.hub.url);
    expect(token).not.toBe(claudeToken());
    expect(await tokenAccepted(machine.hub, token)).toBe(true);
    const saved = Object.values(savedCredentials(machine.configDir).hubs)[0]?.runtimes ?? {};
    expect(Object.keys(saved).sort()).toEqual(['claude-code', 'codex', 'openclaw']);
    expect(saved['claude-code']?.token).toBe(claudeToken());
    // Codex's token is in ctxbus's credentials alone, never in Codex's files.
    const codexToken = saved.codex?.token ?? '';
    expect(await tokenAccepted(machine.hub, codexToken)).toBe(true);
    expect(new Set([claudeToken(), token, codexToken]).size).toBe(3);
    expect(readFileSync(machine.files[3] as string, 'utf8')).toContain('[mcp_servers.ctxbus]');
    expect(readFileSync(machine.files[3] as string, 'utf8')).not.toContain(codexToken);
    tokens = [claudeToken(), token, codexToken];
    connected = machine.snapshot();
  });

  connectIt('a re-run changes nothing', async () => {
    const state = readFileSync(statePath());
    const result = await machine.ctxbus(['connect'], { PATH: openclaw.path });
    expect(result.code, result.stderr).toBe(0);
    expect(openclaw.take()).toEqual([]); // the linked folder and the config say it all
    expect(result.stdout.match(/already connected/g)).toHaveLength(3);
    expect(machine.snapshot()).toEqual(connected);
    expect(readFileSync(statePath())).toEqual(state);
  });

  connectIt('disconnect gives every file back byte for byte and revokes its tokens', async () => {
    // A token the person saved since connect (token create --save) is theirs: it stays saved.
    const teamId = savedRuntimes().codex?.teamId ?? '';
    const mine = await machine.ctxbus([
      'token',
      'create',
      '--team',
      teamId,
      '--runtime',
      'codex',
      '--save',
    ]);
    expect(mine.code, mine.stderr).toBe(0);
    const theirs = savedRuntimes().codex;
    expect(theirs?.token).toBe(mine.stdout.trim());
    const result = await machine.ctxbus(['disconnect'], { PATH: openclaw.path });
    expect(result.code, result.stderr).toBe(0);
    expect(openclaw.take()).toEqual(['plugins uninstall', 'config patch']);
    expect(result.stdout).toContain('disconnected Claude Code');
    expect(result.stdout).toContain('disconnected OpenClaw');
    expect(result.stdout).toContain('disconnected Codex');
    expect(machine.snapshot()).toEqual(original);
    for (const token of tokens) expect(await tokenAccepted(machine.hub, token)).toBe(false);
    expect(savedRuntimes()).toEqual({ codex: theirs });
    expect(await tokenAccepted(machine.hub, theirs?.token ?? '')).toBe(true);
    expect(existsSync(statePath())).toBe(false);
    expect((await openclawPlugins()).some((entry) => entry.id === 'ctxbus')).toBe(false);
    const again = await machine.ctxbus(['disconnect']);
    expect(again.stdout).toContain('nothing to disconnect');
  });
});

/** A `node` in a usual place older than OpenClaw needs (24.16), if this machine has one. */
function oldNode(): { dir: string; version: string } | null {
  for (const path of ['/usr/bin/node', '/usr/local/bin/node', '/bin/node']) {
    if (!existsSync(path)) continue;
    const version = execFileSync(path, ['-p', 'process.versions.node'], { encoding: 'utf8' });
    const [major = 0, minor = 0] = version.trim().split('.').map(Number);
    if (major < 24 || (major === 24 && minor < 16)) return { dir: dirname(path), version };
  }
  return null;
}

describe('a runtime that cannot run as it is', () => {
  const old = oldNode();
  const withOld = old
    ? connectIt
    : (name: string, test: () => Promise<void>) =>
        connectIt(`${name} (skipped: no Node older than 24.16 in /usr/bin, /usr/local/bin)`, test);

  withOld(
    'an old node on PATH: OpenClaw runs on a Node this machine has, said in one line',
    async () => {
      const { dir, version } = old as { dir: string; version: string };
      const path = [BIN_DIR, dir].join(delimiter);
      const result = await machine.ctxbus(['connect', '--only', 'openclaw', '--dry-run'], {
        PATH: path,
      });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toContain(
        `run with Node ${process.versions.node} (${process.execPath}): it needs >=24.16.0 <25 || >=26.1.0 and the node on PATH is ${version.trim()}`,
      );
      expect(result.stdout).toContain('will add the ctxbus plugin');
    },
  );

  connectIt('no Node fits OpenClaw: one line naming the Node to install, exit 1', async () => {
    const root = tempDir('ctxbus-connect-fake-openclaw-');
    try {
      // A detection subject: an openclaw package whose engines no Node here meets.
      const pkg = join(root, 'node_modules', 'openclaw');
      mkdirSync(join(root, 'node_modules', '.bin'), { recursive: true });
      mkdirSync(pkg);
      writeFileSync(
        join(pkg, 'package.json'),
        JSON.stringify({
          name: 'openclaw',
          version: '2026.9.6',
          bin: { openclaw: 'openclaw.mjs' },
          engines: { node: '>=99' },
        }),
      );
      writeFileSync(join(pkg, 'openclaw.mjs'), '#!/usr/bin/env node\n');
      symlinkSync('../openclaw/openclaw.mjs', join(root, 'node_modules', '.bin', 'openclaw'));
      const path = [join(root, 'node_modules', '.bin'), dirname(process.execPath)].join(delimiter);
      for (const args of [
        ['connect', '--only', 'openclaw'],
        ['install', 'openclaw'],
      ]) {
        const result = await machine.ctxbus(args, { PATH: path });
        expect(result.code, result.stderr).toBe(1);
        const lines = result.stderr.trim().split('\n');
        expect(lines.at(-1)).toMatch(
          /OpenClaw 2026\.9\.6 needs Node >=99 and the node on PATH is [\d.]+, .*install Node 24/,
        );
      }
    } finally {
      removeDir(root);
    }
  });

  connectIt(
    'a Codex config.toml Codex cannot parse: one line naming it (exit 2), the file untouched',
    async () => {
      const codexHome = tempDir('ctxbus-connect-broken-codex-');
      try {
        writeFileSync(join(codexHome, 'config.toml'), 'model = "gpt-5"\n[mcp_servers.docs\n');
        const result = await machine.ctxbus(['connect', '--only', 'codex'], {
          CODEX_HOME: codexHome,
        });
        expect(result.code, result.stderr).toBe(2);
        expect(result.stdout).toMatch(
          /Codex [\d.]+ \(.*\): cannot connect: Codex cannot read its configuration: .*config\.toml:2:\d+: [^\n]+; fix it, then run this again\n/,
        );
        expect(result.stderr.trim().split('\n').at(-1)).toMatch(
          /^ctxbus: error: Codex cannot read its configuration: .*config\.toml:2:\d+: /,
        );
        expect(readFileSync(join(codexHome, 'config.toml'), 'utf8')).toContain('[mcp_servers.docs');
      } finally {
        removeDir(codexHome);
      }
    },
  );

  connectIt("npm's 0.0.1 placeholder is named as such, exit 1 (not 6)", async () => {
    const root = tempDir('ctxbus-connect-placeholder-');
    try {
      // What `npm i -g openclaw` leaves on an old Node: the package, no command.
      mkdirSync(join(root, 'bin'));
      symlinkSync(process.execPath, join(root, 'bin', 'node'));
      const pkg = join(root, 'lib', 'node_modules', 'openclaw');
      mkdirSync(pkg, { recursive: true });
      writeFileSync(
        join(pkg, 'package.json'),
        JSON.stringify({ name: 'openclaw', version: '0.0.1', main: 'index.js' }),
      );
      for (const args of [
        ['connect', '--only', 'openclaw'],
        ['install', 'openclaw'],
      ]) {
        const result = await machine.ctxbus(args, { PATH: join(root, 'bin') });
        expect(result.code, result.stderr).toBe(1);
        expect(result.stderr).toContain(
          "openclaw 0.0.1 is npm's empty placeholder, not OpenClaw (npm installs it on a Node older than 24.16): install Node 24 (nvm install 24), then npm install -g openclaw@latest with it",
        );
      }
    } finally {
      removeDir(root);
    }
  });
});
