import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { canonicalJson } from '@ctxbus/core/light';

// What a project command reads that its approver cannot see: the working tree. `npm test`
// names package.json, but runs the test files, and npm reads `.npmrc` (`script-shell`) and
// the like: an approval is bound to all of it, so that a change after the approval voids it.

/**
 * Files a project tool reads for its configuration, hashed even when git ignores them (an
 * ignored `.npmrc` or `.env` still changes what runs).
 */
const CONFIG_FILES = [
  '.npmrc',
  '.yarnrc',
  '.yarnrc.yml',
  '.pnpmfile.cjs',
  'bunfig.toml',
  '.envrc',
  'Makefile',
  'makefile',
  'GNUmakefile',
  'pyproject.toml',
  'setup.cfg',
  'tox.ini',
  'pytest.ini',
  'conftest.py',
  // Git's own config runs programs (core.fsmonitor, aliases, hooks' path) for the git commands
  // an approved command may run.
  '.git/config',
];

/** The most files a tree hash reads (past it, the hash covers the first ones and says so). */
export const MAX_TREE_FILES = 50_000;

/** Directories a walk outside git never enters (git's own, dependency caches). */
const SKIPPED_DIRECTORIES = new Set(['.git', 'node_modules', '.venv', '__pycache__']);

/**
 * The repository's config is the project's, which a sandboxed command may have written: git
 * runs no program of it here (core.fsmonitor would run one as the worker's user, outside the
 * sandbox, when the listing refreshes the index), and reads no user or system config.
 */
const GIT_SAFE = ['-c', 'core.fsmonitor=false', '-c', 'core.untrackedCache=false'];

function gitListing(cwd: string): string[] | null {
  const listed = spawnSync(
    'git',
    [...GIT_SAFE, 'ls-files', '-z', '--cached', '--others', '--exclude-standard'],
    {
      cwd,
      encoding: 'buffer',
      maxBuffer: 256 * 1024 * 1024,
      timeout: 60_000,
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        GIT_OPTIONAL_LOCKS: '0',
        GIT_CONFIG_NOSYSTEM: '1',
        GIT_CONFIG_GLOBAL: '/dev/null',
      },
    },
  );
  if (listed.status !== 0 || listed.error) return null;
  return listed.stdout
    .toString('utf8')
    .split('\0')
    .filter((path) => path !== '');
}

function walk(cwd: string, limit: number): string[] {
  const files: string[] = [];
  const pending = [cwd];
  while (pending.length > 0 && files.length < limit) {
    const dir = pending.pop() as string;
    let entries: import('node:fs').Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const entry of entries) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (!SKIPPED_DIRECTORIES.has(entry.name)) pending.push(path);
      } else {
        files.push(relative(cwd, path).split(sep).join('/'));
      }
    }
  }
  return files;
}

/** A file's content hash; a symlink's target text (not followed); null when unreadable. */
function entryHash(path: string): string | null {
  try {
    const stat = lstatSync(path);
    if (stat.isSymbolicLink()) return `link:${readlinkSync(path)}`;
    if (!stat.isFile()) return null;
    return createHash('sha256').update(readFileSync(path)).digest('hex');
  } catch {
    return null;
  }
}

/**
 * SHA-256 of the working tree under `cwd`: each file git tracks or would track (untracked but
 * not ignored), by `git ls-files` when `cwd` is in a repository, else every file outside
 * `.git`, `node_modules`, `.venv` and `__pycache__`; plus the CONFIG_FILES present, ignored
 * or not. Each file counts as [path, content hash] (a symlink by its target text), sorted by
 * path. Files past MAX_TREE_FILES are left out (the hash records how many were listed).
 */
export function projectTreeHash(cwd: string, limit = MAX_TREE_FILES): string {
  const listed = gitListing(cwd) ?? walk(cwd, limit + 1);
  const paths = new Set(listed.slice(0, limit));
  for (const name of CONFIG_FILES) paths.add(name);
  for (const name of safeNames(cwd))
    if (name === '.env' || name.startsWith('.env.')) paths.add(name);
  const entries: [string, string][] = [];
  for (const path of [...paths].sort()) {
    const hash = entryHash(join(cwd, ...path.split('/')));
    if (hash !== null) entries.push([path, hash]);
  }
  return createHash('sha256')
    .update(canonicalJson({ files: entries, listed: listed.length }))
    .digest('hex');
}

function safeNames(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
