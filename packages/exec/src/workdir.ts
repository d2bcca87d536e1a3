import { realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join, relative, sep } from 'node:path';

// The working directory is confined to configured roots by its resolved real path: `..` words
// are refused outright, symlinks are followed (realpath(3): one call, where fs.realpath lstats
// each component in JS) and the result must be a root or inside one. Checked when a request
// is validated and again immediately before spawn.

export type WorkdirCheck =
  | { ok: true; realPath: string; root: string }
  | { ok: false; code: 'workdir_escape'; reason: string };

/** `~` and `~/...` to the home directory (nothing else is expanded). */
export function expandHome(path: string, home = homedir()): string {
  if (path === '~') return home;
  if (path.startsWith('~/')) return join(home, path.slice(2));
  return path;
}

function realOrNull(path: string): string | null {
  try {
    return realpathSync.native(path);
  } catch {
    return null;
  }
}

/** The roots' real paths (`~` expanded); roots that do not exist are left out. */
export function resolveRoots(roots: readonly string[], home = homedir()): string[] {
  const resolved: string[] = [];
  for (const root of roots) {
    const expanded = expandHome(root, home);
    if (!isAbsolute(expanded)) continue;
    const real = realOrNull(expanded);
    if (real !== null) resolved.push(real);
  }
  return resolved;
}

/** Whether `path` is `root` or inside it (both real paths). */
export function within(root: string, path: string): boolean {
  if (path === root) return true;
  const inside = relative(root, path);
  return inside !== '' && !inside.startsWith(`..${sep}`) && inside !== '..' && !isAbsolute(inside);
}

/**
 * Whether `cwd` may be a command's working directory under `roots`. `cwd` must be absolute
 * (or start with `~`), contain no `..` word, exist as a directory, and resolve (symlinks
 * followed) to a root or a directory inside one (the roots resolved the same way).
 */
export function checkWorkdir(
  cwd: string,
  roots: readonly string[],
  options: { home?: string } = {},
): WorkdirCheck {
  const refuse = (reason: string): WorkdirCheck => ({ ok: false, code: 'workdir_escape', reason });
  const expanded = expandHome(cwd, options.home);
  if (!isAbsolute(expanded)) return refuse(`the working directory ${cwd} is not absolute`);
  if (expanded.split(/[\\/]/).includes('..')) {
    return refuse(`the working directory ${cwd} contains '..'`);
  }
  if (expanded.includes('\0')) return refuse('the working directory contains a NUL byte');
  const real = realOrNull(expanded);
  if (real === null) return refuse(`the working directory ${cwd} does not exist`);
  let isDirectory = false;
  try {
    isDirectory = statSync(real).isDirectory();
  } catch {
    isDirectory = false;
  }
  if (!isDirectory) return refuse(`the working directory ${cwd} is not a directory`);
  const resolvedRoots = resolveRoots(roots, options.home);
  const root = resolvedRoots.find((candidate) => within(candidate, real));
  if (root === undefined) {
    return refuse(
      resolvedRoots.length === 0
        ? `no configured root exists, so ${cwd} cannot be used`
        : `the working directory ${cwd} resolves to ${real}, outside the configured roots`,
    );
  }
  const foreign = relative(root, real)
    .split(sep)
    .find((part) => FOREIGN_DIRECTORIES.has(part));
  if (foreign !== undefined) {
    return refuse(
      `the working directory ${cwd} is inside ${foreign}, which holds others' files (a dependency's scripts, a repository's internals), not the project's`,
    );
  }
  return { ok: true, realPath: real, root };
}

/**
 * Directories under a root that a command never runs in: `npm test` there runs a dependency's
 * script, `git status` there finds a shipped bare repository whose config names a program.
 */
const FOREIGN_DIRECTORIES = new Set(['node_modules', '.git']);

/**
 * Whether a program path (argv[0] with a slash, relative to the working directory's real
 * path) resolves inside that directory. A program that does not exist is left to spawn.
 */
export function checkProgramInside(program: string, realCwd: string): WorkdirCheck {
  if (isAbsolute(program) || !program.includes('/')) {
    return { ok: true, realPath: program, root: realCwd };
  }
  // Not path.join: it would drop `lnk/..` as text, where the kernel follows lnk first.
  const asGiven = `${realCwd}/${program}`;
  const real = realOrNull(asGiven);
  if (real === null) return { ok: true, realPath: asGiven, root: realCwd };
  if (!within(realCwd, real) || real === realCwd) {
    return {
      ok: false,
      code: 'workdir_escape',
      reason: `the program ${program} resolves to ${real}, outside the working directory`,
    };
  }
  return { ok: true, realPath: real, root: realCwd };
}
