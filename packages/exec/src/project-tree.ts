import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import type { Dirent } from 'node:fs';
import { lstat, readdir, readlink } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { canonicalJson } from '@ctxbus/core/light';
import type { ReadBudget } from './bounded-hash.js';
import { boundedFileHash, HashBudgetExceeded, MAX_TREE_BYTES } from './bounded-hash.js';

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

/** The most bytes of `git ls-files` output read (past it, the walk lists the tree instead). */
const MAX_LISTING_BYTES = 256 * 1024 * 1024;

/** Files read and hashed at once. */
const READS_AT_ONCE = 16;

/** `git ls-files` in `cwd` (null outside a repository, or when git fails or runs 60 s). */
function gitListing(cwd: string): Promise<string[] | null> {
  return new Promise((resolve) => {
    const child = spawn(
      'git',
      [...GIT_SAFE, 'ls-files', '-z', '--cached', '--others', '--exclude-standard'],
      {
        cwd,
        stdio: ['ignore', 'pipe', 'ignore'],
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          GIT_OPTIONAL_LOCKS: '0',
          GIT_CONFIG_NOSYSTEM: '1',
          GIT_CONFIG_GLOBAL: '/dev/null',
        },
      },
    );
    const chunks: Buffer[] = [];
    let bytes = 0;
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.stdout.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > MAX_LISTING_BYTES) child.kill('SIGKILL');
      else chunks.push(chunk);
    });
    child.once('error', () => {
      clearTimeout(timer);
      resolve(null);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      if (code !== 0 || bytes > MAX_LISTING_BYTES) return resolve(null);
      const listing = Buffer.concat(chunks).toString('utf8');
      resolve(listing.split('\0').filter((path) => path !== ''));
    });
  });
}

async function walk(cwd: string, limit: number): Promise<string[]> {
  const files: string[] = [];
  const pending = [cwd];
  while (pending.length > 0 && files.length < limit) {
    const dir = pending.pop() as string;
    let entries: Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
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

/**
 * A file's content hash, read against the tree's budget; a symlink's target text (not
 * followed); null when unreadable. Past the budget, HashBudgetExceeded (never a file left out).
 */
async function entryHash(
  path: string,
  budget: ReadBudget,
  maxBytes: number,
): Promise<string | null> {
  try {
    const stat = await lstat(path);
    if (stat.isSymbolicLink()) return `link:${await readlink(path)}`;
    if (!stat.isFile()) return null;
    return await boundedFileHash(path, budget, maxBytes, true);
  } catch (error) {
    if (error instanceof HashBudgetExceeded) throw error;
    return null;
  }
}

/**
 * SHA-256 of the working tree under `cwd`: each file git tracks or would track (untracked but
 * not ignored), by `git ls-files` when `cwd` is in a repository, else every file outside
 * `.git`, `node_modules`, `.venv` and `__pycache__`; plus the CONFIG_FILES present, ignored
 * or not. Each file counts as [path, content hash] (a symlink by its target text), sorted by
 * path. Files past MAX_TREE_FILES are left out (the hash records how many were listed); a
 * tree whose files hold more than MAX_TREE_BYTES throws HashBudgetExceeded.
 * Git and the reads run beside the event loop (a worker's other tasks renew their leases and
 * send their output meanwhile), READS_AT_ONCE files at a time.
 */
export async function projectTreeHash(
  cwd: string,
  limit = MAX_TREE_FILES,
  maxBytes = MAX_TREE_BYTES,
): Promise<string> {
  const listed = (await gitListing(cwd)) ?? (await walk(cwd, limit + 1));
  const paths = new Set(listed.slice(0, limit));
  for (const name of CONFIG_FILES) paths.add(name);
  for (const name of await safeNames(cwd))
    if (name === '.env' || name.startsWith('.env.')) paths.add(name);
  const sorted = [...paths].sort();
  const budget: ReadBudget = { left: maxBytes, what: 'the working tree' };
  const entries: [string, string][] = [];
  for (let at = 0; at < sorted.length; at += READS_AT_ONCE) {
    const batch = sorted.slice(at, at + READS_AT_ONCE);
    const hashes = await Promise.all(
      batch.map((path) => entryHash(join(cwd, ...path.split('/')), budget, maxBytes)),
    );
    batch.forEach((path, index) => {
      const hash = hashes[index];
      if (hash !== null && hash !== undefined) entries.push([path, hash]);
    });
  }
  return createHash('sha256')
    .update(canonicalJson({ files: entries, listed: listed.length }))
    .digest('hex');
}

async function safeNames(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch {
    return [];
  }
}
