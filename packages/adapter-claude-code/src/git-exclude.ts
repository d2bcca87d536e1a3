import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';

// Keeps a file out of git without touching anything the project commits: a line in the
// repository's own `info/exclude` (local to this clone, like the file it names).

/** The work tree holding `path` and its `info/exclude`; null outside a git work tree. */
function excludeFileFor(path: string): { root: string; exclude: string } | null {
  let dir = resolve(dirname(path));
  for (;;) {
    const dotGit = join(dir, '.git');
    if (existsSync(dotGit)) {
      let gitDir = dotGit;
      if (statSync(dotGit).isFile()) {
        // A worktree or submodule: `.git` names its git directory, whose `commondir` (if
        // any) is where info/exclude lives.
        const named = /^gitdir:\s*(.+)$/m.exec(readFileSync(dotGit, 'utf8'))?.[1]?.trim();
        if (!named) return null;
        gitDir = isAbsolute(named) ? named : resolve(dir, named);
        const common = join(gitDir, 'commondir');
        if (existsSync(common)) gitDir = resolve(gitDir, readFileSync(common, 'utf8').trim());
      }
      return { root: dir, exclude: join(gitDir, 'info', 'exclude') };
    }
    const parent = dirname(dir);
    if (parent === dir) return null;
    dir = parent;
  }
}

function patternFor(root: string, path: string): string {
  return `/${relative(root, resolve(path)).split(sep).join('/')}`;
}

/** Adds `path` to its repository's info/exclude; returns the exclude file when it changed. */
export function excludeFromGit(path: string): string | null {
  const found = excludeFileFor(path);
  if (!found) return null;
  const pattern = patternFor(found.root, path);
  const text = existsSync(found.exclude) ? readFileSync(found.exclude, 'utf8') : '';
  if (text.split('\n').includes(pattern)) return null;
  mkdirSync(dirname(found.exclude), { recursive: true });
  const separator = text === '' || text.endsWith('\n') ? '' : '\n';
  writeFileSync(found.exclude, `${text}${separator}${pattern}\n`);
  return found.exclude;
}

/** Takes `path`'s line out of its repository's info/exclude; returns the file if it changed. */
export function unexcludeFromGit(path: string): string | null {
  const found = excludeFileFor(path);
  if (!found || !existsSync(found.exclude)) return null;
  const pattern = patternFor(found.root, path);
  const lines = readFileSync(found.exclude, 'utf8').split('\n');
  const kept = lines.filter((line) => line !== pattern);
  if (kept.length === lines.length) return null;
  writeFileSync(found.exclude, kept.join('\n'));
  return found.exclude;
}
