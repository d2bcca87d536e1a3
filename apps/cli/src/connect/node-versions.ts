import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';

// Which Node.js can run a runtime that needs a newer one than some machines have (OpenClaw
// 2026.9 needs >=24.16.0 <25 || >=26.1.0; on Node 20, `npm i openclaw` leaves a placeholder).
// The range is the runtime's own package.json `engines.node`, checked here without a semver
// dependency: npm's comparators (>=, >, <=, <, =) joined by spaces, alternatives by ||.

type Version = [number, number, number];

export function parseVersion(text: string): Version | null {
  const match = /^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?/.exec(text.trim());
  if (!match) return null;
  return [Number(match[1]), Number(match[2] ?? 0), Number(match[3] ?? 0)];
}

function compare(a: Version, b: Version): number {
  for (let index = 0; index < 3; index++) {
    const difference = (a[index] as number) - (b[index] as number);
    if (difference !== 0) return difference;
  }
  return 0;
}

const COMPARATORS: Record<string, (order: number) => boolean> = {
  '>=': (order) => order >= 0,
  '>': (order) => order > 0,
  '<=': (order) => order <= 0,
  '<': (order) => order < 0,
  '=': (order) => order === 0,
};

function satisfiesAll(version: Version, comparators: string): boolean {
  return comparators
    .trim()
    .split(/\s+/)
    .filter(Boolean)
    .every((part) => {
      const match = /^(>=|<=|>|<|=)?\s*v?(\d[\d.x*]*)$/.exec(part);
      const bound = match ? parseVersion((match[2] as string).replace(/[x*]/g, '0')) : null;
      if (!match || !bound) return true; // an unknown form: do not refuse on it
      return (COMPARATORS[match[1] ?? '='] as (order: number) => boolean)(compare(version, bound));
    });
}

/** Whether `version` (e.g. `24.22.3`) is in an npm engines range such as `>=24.16.0 <25 || >=26.1.0`. */
export function satisfiesRange(version: string, range: string): boolean {
  const parsed = parseVersion(version);
  if (!parsed) return false;
  return range.split('||').some((alternative) => satisfiesAll(parsed, alternative));
}

export interface NodeInstall {
  path: string;
  version: string;
}

/** The version of the Node.js at `path`, or null when it does not run. */
export function nodeVersion(path: string): string | null {
  try {
    return execFileSync(path, ['-p', 'process.versions.node'], {
      encoding: 'utf8',
      timeout: 10_000,
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return null;
  }
}

/** The first `name` on PATH (an executable file), or null. */
export function findOnPath(name: string, path = process.env.PATH ?? ''): string | null {
  for (const dir of path.split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    if (existsSync(candidate)) return candidate;
  }
  return null;
}

/** `<root>/<version>/<bin>` for each version folder of a version manager. */
function managed(root: string, bin: string[]): string[] {
  if (!existsSync(root)) return [];
  return readdirSync(root)
    .sort()
    .reverse()
    .map((version) => join(root, version, ...bin));
}

/**
 * The Node.js installs this machine already has: the one running ctxbus, every `node` on PATH,
 * then those of nvm, fnm, volta, asdf and the usual system places. Newest first within a
 * manager; each path once.
 */
export function nodeCandidates(home = homedir()): string[] {
  const onPath = (process.env.PATH ?? '').split(delimiter).map((dir) => join(dir, 'node'));
  const paths = [
    process.execPath,
    ...onPath,
    ...managed(join(process.env.NVM_DIR ?? join(home, '.nvm'), 'versions', 'node'), [
      'bin',
      'node',
    ]),
    ...managed(join(home, '.local', 'share', 'fnm', 'node-versions'), [
      'installation',
      'bin',
      'node',
    ]),
    ...managed(join(home, '.volta', 'tools', 'image', 'node'), ['bin', 'node']),
    ...managed(join(home, '.asdf', 'installs', 'nodejs'), ['bin', 'node']),
    '/usr/local/bin/node',
    '/opt/homebrew/bin/node',
    '/usr/bin/node',
  ];
  return [...new Set(paths)].filter((path) => existsSync(path));
}

/** The first Node.js among `candidates` whose version is in `range`, or null. */
export function findSuitableNode(
  range: string,
  candidates: string[] = nodeCandidates(),
): NodeInstall | null {
  for (const path of candidates) {
    const version = path === process.execPath ? process.versions.node : nodeVersion(path);
    if (version && satisfiesRange(version, range)) return { path, version };
  }
  return null;
}
