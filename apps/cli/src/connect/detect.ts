import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { z } from 'zod';
import { findOnPath, findSuitableNode, nodeVersion, satisfiesRange } from './node-versions.js';

// Finding a runtime on this machine and whether it can run here: its command, its version,
// and for a Node program the Node to run it with. Never throws: what is wrong is one line
// saying what to do.

export type Detection<Setup> =
  | { status: 'missing'; hint: string }
  | { status: 'unusable'; reason: string }
  | { status: 'ready'; version: string; command: string; note: string | null; setup: Setup };

const manifestSchema = z.looseObject({
  name: z.string().optional(),
  version: z.string().optional(),
  bin: z.union([z.string(), z.record(z.string(), z.string())]).optional(),
  engines: z.looseObject({ node: z.string().optional() }).optional(),
});
type Manifest = z.infer<typeof manifestSchema>;

function readManifest(dir: string): Manifest | null {
  try {
    const parsed = manifestSchema.safeParse(
      JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')),
    );
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** The npm package `name` a command belongs to: up from its real path, else beside a shim. */
export function packageDirOf(bin: string, name: string): string | null {
  const candidates: string[] = [];
  try {
    let dir = dirname(realpathSync(bin));
    for (let depth = 0; depth < 4; depth++, dir = dirname(dir)) candidates.push(dir);
  } catch {
    // a dangling link: only the shim's neighbours
  }
  const binDir = dirname(bin);
  candidates.push(join(binDir, '..', name), join(binDir, '..', 'lib', 'node_modules', name));
  return candidates.find((dir) => readManifest(dir)?.name === name) ?? null;
}

function binPath(manifest: Manifest, name: string): string | null {
  if (typeof manifest.bin === 'string') return manifest.bin;
  return manifest.bin?.[name] ?? null;
}

const OPENCLAW_INSTALL = 'npm install -g openclaw@latest';

export interface OpenClawSetup {
  /** The `openclaw` command, or its launcher script when `node` is set. */
  bin: string;
  node?: string;
}

/** npm's empty `openclaw@0.0.1` (what `npm i openclaw` can leave on an old Node), if installed. */
function placeholderReason(manifest: Manifest | null): string | null {
  if (!manifest || (manifest.version !== '0.0.1' && binPath(manifest, 'openclaw') !== null)) {
    return null;
  }
  return `openclaw ${manifest.version ?? '?'} is npm's empty placeholder, not OpenClaw (npm installs it on a Node older than 24.16): install Node 24 (nvm install 24), then ${OPENCLAW_INSTALL} with it`;
}

/** An `openclaw` package in the global node_modules of a node on PATH (it may have no command). */
function globalOpenClaw(): string | null {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir || !existsSync(join(dir, 'node'))) continue;
    const found = join(dir, '..', 'lib', 'node_modules', 'openclaw');
    if (readManifest(found)) return found;
  }
  return null;
}

/**
 * OpenClaw: the `openclaw` command (`explicit`, else on PATH), its version, and a Node in its
 * `engines` range: the `node` on PATH when it fits, else one this machine already has (run as
 * `<node> <launcher>`), else a reason naming the Node to install.
 */
export function detectOpenClaw(explicit?: string): Detection<OpenClawSetup> {
  const bin = explicit ?? findOnPath('openclaw');
  if (!bin) {
    const placeholder = placeholderReason(readManifest(globalOpenClaw() ?? '/nonexistent'));
    if (placeholder) return { status: 'unusable', reason: placeholder };
    return { status: 'missing', hint: `${OPENCLAW_INSTALL} (needs Node 24.16 or later)` };
  }
  const dir = packageDirOf(bin, 'openclaw');
  const manifest = dir ? readManifest(dir) : null;
  const placeholder = placeholderReason(manifest);
  if (placeholder) return { status: 'unusable', reason: placeholder };
  const version = manifest?.version ?? 'unknown version';
  const range = manifest?.engines?.node;
  const launcher = dir && manifest ? binPath(manifest, 'openclaw') : null;
  if (!range || !dir || !launcher) {
    return { status: 'ready', version, command: bin, note: null, setup: { bin } };
  }
  const pathNode = findOnPath('node');
  const pathVersion = pathNode ? nodeVersion(pathNode) : null;
  if (pathVersion && satisfiesRange(pathVersion, range)) {
    return { status: 'ready', version, command: bin, note: null, setup: { bin } };
  }
  const onPath = pathVersion ? `the node on PATH is ${pathVersion}` : 'no node on PATH';
  const suitable = findSuitableNode(range);
  if (!suitable) {
    return {
      status: 'unusable',
      reason: `OpenClaw ${version} needs Node ${range} and ${onPath}, with no other Node on this machine that fits: install Node 24 (nvm install 24, or https://nodejs.org) and run again`,
    };
  }
  return {
    status: 'ready',
    version,
    command: bin,
    note: `run with Node ${suitable.version} (${suitable.path}): it needs ${range} and ${onPath}`,
    setup: { bin: join(dir, launcher), node: suitable.path },
  };
}

/** Claude Code: `claude` on PATH or where its installers put it, and `claude --version`. */
export function detectClaudeCode(home = homedir()): Detection<{ bin: string }> {
  const bin = [
    findOnPath('claude'),
    join(home, '.local', 'bin', 'claude'),
    join(home, '.claude', 'local', 'claude'),
  ].find((path): path is string => path !== null && existsSync(path));
  if (!bin) {
    return {
      status: 'missing',
      hint: 'npm install -g @anthropic-ai/claude-code (or https://claude.com/claude-code)',
    };
  }
  const found = versionOf(bin, 'reinstall Claude Code (npm install -g @anthropic-ai/claude-code)');
  if ('reason' in found) return { status: 'unusable', reason: found.reason };
  return { status: 'ready', version: found.version, command: bin, note: null, setup: { bin } };
}

/** A command's `--version`, or the one line saying why it failed and what to do. */
function versionOf(bin: string, reinstall: string): { version: string } | { reason: string } {
  try {
    const output = execFileSync(bin, ['--version'], {
      encoding: 'utf8',
      timeout: 15_000,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return { version: /\d+\.\d+\.\d+/.exec(output)?.[0] ?? output.trim() };
  } catch (error) {
    const stderr = `${(error as { stderr?: string }).stderr ?? ''}`.trim().split('\n')[0];
    return {
      reason: `${bin} --version failed (${stderr || (error as Error).message}): ${reinstall} and run again`,
    };
  }
}

/** Codex: `codex` on PATH and `codex --version`. */
export function detectCodex(): Detection<{ bin: string }> {
  const bin = findOnPath('codex');
  if (!bin) return { status: 'missing', hint: 'npm install -g @openai/codex' };
  const found = versionOf(bin, 'reinstall Codex (npm install -g @openai/codex)');
  if ('reason' in found) return { status: 'unusable', reason: found.reason };
  return { status: 'ready', version: found.version, command: bin, note: null, setup: { bin } };
}
