// `./dev pack [--out DIR]`: the publishable `ctxbus` package, as an npm tarball in DIR
// (default dist-pack/ at the repository's root). The workspace packages (@ctxbus/*) are not
// published: their built code is bundled into the CLI's dist/. The npm packages in
// DEPENDENCIES stay real dependencies, at the ranges the workspace declares; every other npm
// package the code imports is bundled too (see BUNDLED_WHY), its licence in
// THIRD-PARTY-LICENSES.md. Nothing else is installed: no test runtimes, build tools or
// declarations. Beside dist/: the dashboard (dist/web) and the adapters' runtime files
// (runtimes/claude-code, runtimes/openclaw, runtimes/codex), where the CLI's install commands
// look for them. The OpenClaw plugin is its own npm package too (@ctxbus/openclaw-plugin, self-contained):
// its tarball goes in DIR, for `openclaw plugins install npm-pack:<tgz>`, and in
// runtimes/openclaw, where `ctxbus install openclaw` and `ctxbus connect` install it from.
// Needs the workspace built first (`./dev pack` does that).

import { execFileSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { isBuiltin } from 'node:module';
import { basename, dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { build } from 'tsup';

const CLI_DIR = resolve(import.meta.dirname, '..');
const ROOT = resolve(CLI_DIR, '../..');

/**
 * The npm packages installed beside ctxbus. They load files or optional modules at run time
 * (pino's transport worker, pg's optional pg-native, ws's optional bufferutil) or are small.
 */
const DEPENDENCIES = [
  '@hono/node-server',
  '@noble/hashes',
  'commander',
  'croner',
  'eventsource-parser',
  'grammy',
  'hono',
  'ipaddr.js',
  'json5',
  'ky',
  'pg',
  'pino',
  'stemmer',
  'uuid',
  'ws',
  'yaml',
];

// BUNDLED_WHY: installed, gpt-tokenizer is 30 MB (every encoding, in three module formats) of
// which ctxbus uses one encoding; zod is 8 MB (v3, v4, mini, locales, declarations); the MCP SDK
// brings express, ajv and ~40 more packages (12 MB). Bundled, they cost ~3 MB.
const KEPT = new RegExp(
  `^(?!(${DEPENDENCIES.map((name) => name.replace(/[.]/g, '\\.')).join('|')})(/|$))`,
);

type Json = Record<string, unknown>;
type Ranges = Record<string, string>;

const readJson = (path: string): Json => JSON.parse(readFileSync(path, 'utf8')) as Json;

function fail(message: string): never {
  process.stderr.write(`ctxbus pack: error: ${message}\n`);
  process.exit(1);
}

/** The `catalog:` block of pnpm-workspace.yaml (flat `name: range` lines). */
function readCatalog(): Ranges {
  const catalog: Ranges = {};
  let inside = false;
  for (const line of readFileSync(join(ROOT, 'pnpm-workspace.yaml'), 'utf8').split('\n')) {
    if (/^\S/.test(line)) inside = line.trim() === 'catalog:';
    const entry = inside && /^\s+"?([^":\s]+)"?:\s*(\S+)\s*$/.exec(line);
    if (entry) catalog[entry[1] as string] = entry[2] as string;
  }
  return catalog;
}

/** Every npm range the workspace's packages declare (catalog: resolved), by package name. */
function workspaceRanges(): Ranges {
  const catalog = readCatalog();
  const ranges: Ranges = {};
  for (const group of ['packages', 'apps']) {
    for (const name of readdirSync(join(ROOT, group))) {
      const file = join(ROOT, group, name, 'package.json');
      if (!existsSync(file)) continue;
      const manifest = readJson(file);
      for (const field of ['dependencies', 'optionalDependencies', 'peerDependencies']) {
        for (const [dep, spec] of Object.entries((manifest[field] ?? {}) as Ranges)) {
          if (spec.startsWith('workspace:')) continue;
          const range = spec === 'catalog:' ? catalog[dep] : spec;
          if (range) ranges[dep] = range;
        }
      }
    }
  }
  return ranges;
}

const packageName = (specifier: string) =>
  specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/');

interface Bundle {
  /** npm packages the bundle imports (installed as dependencies). */
  imported: string[];
  /** Directories of the npm packages bundled into it. */
  bundled: string[];
}

interface Metafile {
  inputs: Record<string, unknown>;
  outputs: Record<string, { imports: { path: string; external?: boolean }[] }>;
}

/** Bundles the CLI with the workspace packages into `dist`. */
async function bundle(dist: string): Promise<Bundle> {
  await build({
    config: false,
    silent: true,
    entry: {
      bin: join(CLI_DIR, 'src/bin.ts'),
      'serve-worker': join(CLI_DIR, 'src/serve-worker.ts'),
    },
    outDir: dist,
    tsconfig: join(CLI_DIR, 'tsconfig.json'),
    format: ['esm'],
    platform: 'node',
    target: 'node22',
    splitting: true,
    sourcemap: false,
    clean: true,
    removeNodeProtocol: false,
    // Bundled CommonJS modules may call require(); give the ESM bundle one.
    banner: {
      js: "#!/usr/bin/env node\nimport { createRequire as __ctxbusCreateRequire } from 'node:module'; const require = __ctxbusCreateRequire(import.meta.url);",
    },
    noExternal: [KEPT],
    external: DEPENDENCIES,
    metafile: true,
  });
  const metafile = readJson(join(dist, 'metafile-esm.json')) as unknown as Metafile;
  rmSync(join(dist, 'metafile-esm.json'));
  const imported = new Set<string>();
  for (const output of Object.values(metafile.outputs)) {
    for (const { path, external } of output.imports) {
      if (external && !isBuiltin(path)) imported.add(packageName(path));
    }
  }
  const bundled = new Set<string>();
  for (const input of Object.keys(metafile.inputs)) {
    const dir = /^(.*node_modules\/(?:@[^/]+\/)?[^/@.][^/]*)\//.exec(input)?.[1];
    if (dir) bundled.add(resolve(dir));
  }
  return { imported: [...imported].sort(), bundled: [...bundled].sort() };
}

function dependencies(imported: string[]): Ranges {
  const ranges = workspaceRanges();
  const dependencies: Ranges = {};
  for (const name of imported) {
    if (!DEPENDENCIES.includes(name)) fail(`the bundle imports ${name}, not in DEPENDENCIES`);
    const range = ranges[name];
    if (!range) fail(`the bundle imports ${name}, which no workspace package declares`);
    dependencies[name] = range;
  }
  return dependencies;
}

/** The name, version, licence and licence text of each bundled npm package. */
function thirdPartyLicenses(dirs: string[]): string {
  const sections = dirs.map((dir) => {
    const { name, version, license } = readJson(join(dir, 'package.json'));
    const file = readdirSync(dir).find((entry) => /^licen[cs]e(\.|$)/i.test(entry));
    if (!file) fail(`the bundled ${String(name)} has no licence file in ${dir}`);
    const text = readFileSync(join(dir, file), 'utf8').trim();
    return `## ${String(name)} ${String(version)} (${String(license)})\n\n\`\`\`text\n${text}\n\`\`\`\n`;
  });
  const unique = [...new Set(sections)];
  return `# Third-party licences\n\nnpm packages bundled into dist/ (the others are installed as dependencies).\n\n${unique.join('\n')}`;
}

/** Copies `from` to `to`, failing when `needed` (a file inside `from`) is missing. */
function copyBuilt(from: string, to: string, needed: string, what: string) {
  if (!existsSync(join(from, needed))) fail(`${what} is not built (${join(from, needed)} missing)`);
  cpSync(from, to, { recursive: true });
}

function manifest(dependencies: Ranges): Json {
  const cli = readJson(join(CLI_DIR, 'package.json'));
  return {
    name: 'ctxbus',
    version: cli.version,
    description:
      'One shared, structured, real-time context for your AI agent runtimes: the ctxbus hub, dashboard, worker and command, with the Claude Code, OpenClaw and Codex adapters.',
    keywords: ['ai', 'agents', 'context', 'claude-code', 'openclaw', 'codex', 'mcp', 'memory'],
    license: 'MIT',
    type: 'module',
    bin: { ctxbus: 'dist/bin.js' },
    files: ['dist', 'runtimes', '.claude-plugin', 'THIRD-PARTY-LICENSES.md'],
    engines: cli.engines,
    dependencies,
  };
}

/**
 * The repository's Claude Code marketplace manifest, its plugin at `runtimes/claude-code`: the
 * installed package is a marketplace too (`claude plugin marketplace add <its folder>`).
 */
function writeMarketplace(stage: string) {
  const marketplace = readJson(join(ROOT, '.claude-plugin/marketplace.json'));
  const plugins = (marketplace.plugins as Json[]).map((plugin) =>
    plugin.name === 'ctxbus' ? { ...plugin, source: './runtimes/claude-code' } : plugin,
  );
  mkdirSync(join(stage, '.claude-plugin'), { recursive: true });
  writeFileSync(
    join(stage, '.claude-plugin/marketplace.json'),
    `${JSON.stringify({ ...marketplace, plugins }, null, 2)}\n`,
  );
}

/** npm pack of `dir` into `outDir`: the tarball's path and sizes. */
function npmPack(
  dir: string,
  outDir: string,
): { tarball: string; size: number; unpackedSize: number } {
  const output = execFileSync(
    'npm',
    ['pack', '--json', '--ignore-scripts', '--pack-destination', outDir],
    { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const [packed] = JSON.parse(output) as { filename: string; size: number; unpackedSize: number }[];
  if (!packed) fail(`npm pack printed nothing for ${dir}`);
  return {
    tarball: join(outDir, packed.filename),
    size: packed.size,
    unpackedSize: packed.unpackedSize,
  };
}

/**
 * The OpenClaw plugin as an npm package: the adapter's plugin folder (manifest, bundled
 * modules; it needs no dependency, OpenClaw provides its SDK), versioned with ctxbus.
 */
function packOpenClawPlugin(outDir: string, version: unknown): string {
  const stage = join(newStage(outDir), 'openclaw-plugin');
  copyBuilt(
    join(ROOT, 'packages/adapter-openclaw/plugin'),
    stage,
    'dist/index.js',
    'the OpenClaw plugin',
  );
  const { private: _private, ...plugin } = readJson(join(stage, 'package.json'));
  writeFileSync(
    join(stage, 'package.json'),
    `${JSON.stringify({ ...plugin, version, files: ['dist', 'openclaw.plugin.json'] }, null, 2)}\n`,
  );
  cpSync(join(CLI_DIR, 'pack/openclaw-plugin-README.md'), join(stage, 'README.md'));
  cpSync(join(ROOT, 'LICENSE'), join(stage, 'LICENSE'));
  const { tarball } = npmPack(stage, outDir);
  rmSync(dirname(stage), { recursive: true, force: true });
  return tarball;
}

export interface PackResult {
  tarball: string;
  /** The OpenClaw plugin's own tarball (@ctxbus/openclaw-plugin). */
  pluginTarball: string;
  /** Bytes of the .tgz. */
  size: number;
  unpackedSize: number;
  dependencies: Ranges;
}

/**
 * A new folder of its own in `outDir` to build a package in (removed after): never a folder
 * that was there before (`--out ~` must not replace ~/ctxbus).
 */
function newStage(outDir: string): string {
  mkdirSync(outDir, { recursive: true });
  return mkdtempSync(join(outDir, '.ctxbus-pack-'));
}

export async function pack(outDir: string): Promise<PackResult> {
  const staging = newStage(outDir);
  try {
    return await packIn(join(staging, 'ctxbus'), outDir);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

async function packIn(stage: string, outDir: string): Promise<PackResult> {
  mkdirSync(stage, { recursive: true });
  const { imported, bundled } = await bundle(join(stage, 'dist'));
  const deps = dependencies(imported);
  writeFileSync(join(stage, 'THIRD-PARTY-LICENSES.md'), thirdPartyLicenses(bundled));
  copyBuilt(join(ROOT, 'apps/web/dist'), join(stage, 'dist/web'), 'index.html', 'the dashboard');
  const adapters = join(ROOT, 'packages');
  copyBuilt(
    join(adapters, 'adapter-claude-code/plugin'),
    join(stage, 'runtimes/claude-code'),
    'dist/ctxbus-claude-hook.js',
    'the Claude Code plugin',
  );
  writeMarketplace(stage);
  copyBuilt(
    join(adapters, 'adapter-codex/plugin'),
    join(stage, 'runtimes/codex'),
    'dist/ctxbus-codex-hook.js',
    'the Codex hooks',
  );
  const pluginTarball = packOpenClawPlugin(outDir, readJson(join(CLI_DIR, 'package.json')).version);
  mkdirSync(join(stage, 'runtimes/openclaw'), { recursive: true });
  cpSync(pluginTarball, join(stage, 'runtimes/openclaw', basename(pluginTarball)));
  cpSync(join(CLI_DIR, 'pack/README.md'), join(stage, 'README.md'));
  cpSync(join(ROOT, 'LICENSE'), join(stage, 'LICENSE'));
  writeFileSync(join(stage, 'package.json'), `${JSON.stringify(manifest(deps), null, 2)}\n`);
  const packed = npmPack(stage, outDir);
  return { ...packed, pluginTarball, dependencies: deps };
}

if (process.argv[1] && resolve(process.argv[1]) === import.meta.filename) {
  let values: { out?: string };
  try {
    ({ values } = parseArgs({ options: { out: { type: 'string' } } }));
  } catch (error) {
    process.stderr.write(
      `ctxbus pack: ${(error as Error).message} (usage: ./dev pack [--out DIR])\n`,
    );
    process.exit(2);
  }
  const outDir = resolve(values.out ?? join(ROOT, 'dist-pack'));
  const result = await pack(outDir);
  const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
  process.stderr.write(
    `ctxbus pack: ${result.tarball} (${mb(result.size)}, ${mb(result.unpackedSize)} unpacked); dependencies: ${Object.keys(result.dependencies).join(', ')}\nctxbus pack: ${result.pluginTarball} (the OpenClaw plugin: openclaw plugins install npm-pack:<path>)\n`,
  );
  process.stdout.write(`${result.tarball}\n`);
}
