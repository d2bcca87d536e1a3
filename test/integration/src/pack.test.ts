// The published package, as a person installs it (issue 28): `./dev pack`'s tarball, installed
// with npm into an empty prefix on a clean HOME (npm's warm cache allowed), then run from there:
// the hub serves, a minted token writes an item the installed CLI reads back, Claude Code's
// hooks are wired to files inside the package, and an old Node gets one clear line.

import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { removeDir, tempDir, waitUntil } from '@ctxbus/test-kit';
import type { InstalledHub } from '@ctxbus/test-kit/packed-cli';
import {
  cleanHomeEnv,
  diskUsage,
  installedBin,
  installedManifest,
  installedPackage,
  installTarball,
  packTarball,
  runProgram,
  startInstalledHub,
} from '@ctxbus/test-kit/packed-cli';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = tempDir('ctxbus-pack-');
const home = join(root, 'home');
const prefix = join(root, 'prefix');
let hub: InstalledHub | undefined;

/** A folder of the user's where the package is packed (`./dev pack --out ~`): left as it was. */
const usersOwn = join(root, 'out', 'ctxbus');

beforeAll(async () => {
  mkdirSync(home);
  mkdirSync(usersOwn, { recursive: true });
  writeFileSync(join(usersOwn, 'notes.txt'), 'mine');
  const tarball = await packTarball(join(root, 'out'));
  await installTarball(tarball, prefix, home);
});

afterAll(async () => {
  await hub?.stop();
  removeDir(root);
});

const ctxbus = (args: string[], cwd = home) =>
  runProgram(process.execPath, [installedBin(prefix), ...args], { env: cleanHomeEnv(home), cwd });

/** A `node` on PATH (or a usual place) older than 22.13, if this machine has one. */
function oldNode(): { path: string; version: string } | undefined {
  const candidates = [
    ...(process.env.PATH ?? '').split(delimiter).map((dir) => join(dir, 'node')),
    '/usr/bin/node',
    '/usr/local/bin/node',
  ];
  for (const path of new Set(candidates)) {
    if (!existsSync(path)) continue;
    const version = execFileSync(path, ['-p', 'process.versions.node'], { encoding: 'utf8' });
    const [major = 0, minor = 0] = version.trim().split('.').map(Number);
    if (major < 22 || (major === 22 && minor < 13)) return { path, version: version.trim() };
  }
  return undefined;
}

describe('the packed ctxbus package', () => {
  it('packs beside what the folder held, leaves it as it was and no staging behind', () => {
    expect(readFileSync(join(usersOwn, 'notes.txt'), 'utf8')).toBe('mine');
    expect(readdirSync(join(root, 'out')).filter((name) => !name.endsWith('.tgz'))).toEqual([
      'ctxbus',
    ]);
  });

  it('installs with npm dependencies only, carrying the dashboard, the worker and the runtime files', () => {
    const manifest = installedManifest(prefix);
    expect(manifest.name).toBe('ctxbus');
    expect(manifest.bin).toEqual({ ctxbus: 'dist/bin.js' });
    expect(manifest.devDependencies).toBeUndefined();
    const dependencies = {
      ...(manifest.dependencies as Record<string, string>),
      ...(manifest.optionalDependencies as Record<string, string> | undefined),
      ...(manifest.peerDependencies as Record<string, string> | undefined),
    };
    for (const [name, range] of Object.entries(dependencies)) {
      expect(name).not.toMatch(/^@ctxbus\//);
      expect(range).not.toMatch(/^(workspace|catalog):/);
    }
    expect(existsSync(join(prefix, 'node_modules', '@ctxbus'))).toBe(false);
    const pkg = installedPackage(prefix);
    for (const file of [
      'README.md',
      'LICENSE',
      'THIRD-PARTY-LICENSES.md',
      'dist/serve-worker.js',
      'dist/web/index.html',
      'runtimes/claude-code/dist/ctxbus-claude-hook.js',
      'runtimes/claude-code/dist/ctxbus-mcp.js',
      'runtimes/claude-code/hooks/hooks.json',
      // A Claude Code marketplace (claude plugin marketplace add <this folder>).
      '.claude-plugin/marketplace.json',
      'runtimes/codex/dist/ctxbus-codex-hook.js',
      'runtimes/codex/dist/ctxbus-codex-mcp.js',
      // The OpenClaw plugin as its own package (openclaw plugins install npm-pack:<it>).
      `runtimes/openclaw/ctxbus-openclaw-plugin-${String(installedManifest(prefix).version)}.tgz`,
    ]) {
      expect(existsSync(join(pkg, file)), file).toBe(true);
    }
    const marketplace = JSON.parse(
      readFileSync(join(pkg, '.claude-plugin/marketplace.json'), 'utf8'),
    ) as { plugins: { name: string; source: string }[] };
    expect(marketplace.plugins).toContainEqual(
      expect.objectContaining({ name: 'ctxbus', source: './runtimes/claude-code' }),
    );
    const bytes = diskUsage(join(prefix, 'node_modules'));
    process.stdout.write(
      `packed ctxbus: installed size (du) ${(bytes / 1024 / 1024).toFixed(1)} MB\n`,
    );
    expect(bytes).toBeGreaterThan(0);
  });

  it('answers --version with the package version', async () => {
    const result = await ctxbus(['--version']);
    expect(result).toMatchObject({ code: 0, stdout: `${installedManifest(prefix).version}\n` });
  });

  it('serves on a clean HOME: /health, a minted token, an item written and read back, the dashboard, Claude Code wired to the package, a clean stop', async () => {
    hub = await startInstalledHub(prefix, home);
    const url = hub.url;
    expect(String(hub.info.dataDir).startsWith(home)).toBe(true);
    await waitUntil(
      async () => (await fetch(`${url}/health`).catch(() => null))?.status === 200,
      'the installed hub to answer /health',
    );

    const token = await ctxbus(['token', 'create', '--team', 'acme', '--runtime', 'cli', '--save']);
    expect(token.code, token.stderr).toBe(0);
    const written = await ctxbus([
      'write',
      '--type',
      'decision',
      '--title',
      'Ship ctxbus as one npm package',
      '--content',
      'Installed from the tarball.',
    ]);
    expect(written.code, written.stderr).toBe(0);
    const read = await ctxbus(['read', '--json']);
    expect(read.code, read.stderr).toBe(0);
    const { items } = JSON.parse(read.stdout) as { items: { title: string }[] };
    expect(items).toEqual([
      expect.objectContaining({
        title: 'Ship ctxbus as one npm package',
        source: expect.objectContaining({ runtime: 'cli' }),
      }),
    ]);

    const page = await fetch(url);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<html');

    const project = join(root, 'project');
    mkdirSync(project);
    const install = await ctxbus(['install', 'claude-code', '--project', project]);
    expect(install.code, install.stderr).toBe(0);
    const settings = readFileSync(join(project, '.claude', 'settings.local.json'), 'utf8');
    const hook = join(installedPackage(prefix), 'runtimes/claude-code/dist/ctxbus-claude-hook.js');
    expect(settings).toContain(JSON.stringify(hook).slice(1, -1));

    expect(await hub.stop(), hub.stderr()).toBe(0);
  });

  const old = oldNode();
  it.skipIf(!old)(
    `on a Node older than 22.13, says what it needs in one line and exits 1${old ? '' : ' (skipped: no node older than 22.13 on PATH, /usr/bin or /usr/local/bin)'}`,
    async () => {
      const result = await runProgram(old?.path ?? '', [installedBin(prefix), 'serve'], {
        env: cleanHomeEnv(home),
      });
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      const lines = result.stderr.split('\n').filter(Boolean);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(
        `needs Node.js 22.13 or later, and this is Node.js v${old?.version}`,
      );
      expect(lines[0]).toContain('install Node.js 24');
    },
  );
});
