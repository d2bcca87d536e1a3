import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from './test-support.js';
import { checkProgramInside, checkWorkdir, expandHome } from './workdir.js';

describe('checkWorkdir', () => {
  it('accepts a root and a directory inside it, by real path', () => {
    const root = tempDir();
    mkdirSync(join(root, 'project', 'sub'), { recursive: true });
    expect(checkWorkdir(root, [root])).toMatchObject({ ok: true, realPath: root, root });
    expect(checkWorkdir(join(root, 'project', 'sub'), [root])).toMatchObject({
      ok: true,
      realPath: join(root, 'project', 'sub'),
    });
  });

  it("refuses a directory inside node_modules or .git below the root: others' files", () => {
    const root = tempDir();
    const inside = [
      join(root, 'app', 'node_modules', 'dep'),
      join(root, 'app', 'node_modules', 'evil', 'vendor', 'repo'),
      join(root, 'app', '.git'),
      join(root, 'app', '.git', 'hooks'),
    ];
    for (const directory of inside) {
      mkdirSync(directory, { recursive: true });
      const check = checkWorkdir(directory, [root]);
      expect(check, directory).toMatchObject({ ok: false, code: 'workdir_escape' });
      expect(check.ok ? '' : check.reason).toMatch(/is inside (node_modules|\.git), which holds/);
    }
    // The project itself, and a directory that only looks alike, are fine; so is a root that
    // lies in such a directory (the user chose it).
    mkdirSync(join(root, 'app', 'node_modules_docs'), { recursive: true });
    expect(checkWorkdir(join(root, 'app'), [root]).ok).toBe(true);
    expect(checkWorkdir(join(root, 'app', 'node_modules_docs'), [root]).ok).toBe(true);
    const dependency = join(root, 'app', 'node_modules', 'dep');
    expect(checkWorkdir(dependency, [dependency]).ok).toBe(true);
  });

  it('resolves roots by real path too (a root given through a symlink)', () => {
    const real = tempDir();
    const links = tempDir();
    symlinkSync(real, join(links, 'root-link'));
    mkdirSync(join(real, 'project'));
    expect(checkWorkdir(join(real, 'project'), [join(links, 'root-link')])).toMatchObject({
      ok: true,
      root: real,
    });
  });

  it('expands ~ in roots and requests to the home directory', () => {
    const home = tempDir();
    mkdirSync(join(home, 'projects', 'app'), { recursive: true });
    expect(expandHome('~/projects', home)).toBe(join(home, 'projects'));
    expect(checkWorkdir('~/projects/app', ['~/projects'], { home })).toMatchObject({
      ok: true,
      realPath: join(home, 'projects', 'app'),
    });
  });

  it('refuses .., a symlink that escapes, a sibling with the root as prefix, files, missing and relative paths', () => {
    const base = tempDir();
    const root = join(base, 'root');
    mkdirSync(join(root, 'inside'), { recursive: true });
    mkdirSync(join(base, 'root-sibling'));
    mkdirSync(join(base, 'outside'));
    symlinkSync(join(base, 'outside'), join(root, 'escape'));
    writeFileSync(join(root, 'file'), 'x');
    const refused = (cwd: string) => checkWorkdir(cwd, [root]);
    expect(refused(`${root}/inside/../inside`)).toMatchObject({
      ok: false,
      code: 'workdir_escape',
      reason: expect.stringContaining("'..'"),
    });
    expect(refused(`${root}/../outside`)).toMatchObject({ ok: false, code: 'workdir_escape' });
    expect(refused(join(root, 'escape'))).toMatchObject({
      ok: false,
      reason: expect.stringContaining('outside the configured roots'),
    });
    expect(refused(join(base, 'root-sibling'))).toMatchObject({ ok: false });
    expect(refused(join(base, 'outside'))).toMatchObject({ ok: false });
    expect(refused(join(root, 'file'))).toMatchObject({
      ok: false,
      reason: expect.stringContaining('not a directory'),
    });
    expect(refused(join(root, 'missing'))).toMatchObject({ ok: false });
    expect(refused('relative/dir')).toMatchObject({ ok: false });
    expect(checkWorkdir(join(root, 'inside'), [join(base, 'no-such-root')])).toMatchObject({
      ok: false,
      reason: expect.stringContaining('no configured root exists'),
    });
  });

  it('refuses a program path that resolves outside the working directory', () => {
    const base = tempDir();
    mkdirSync(join(base, 'work', 'bin'), { recursive: true });
    writeFileSync(join(base, 'evil.sh'), '#!/bin/sh\n');
    writeFileSync(join(base, 'work', 'bin', 'ok.sh'), '#!/bin/sh\n');
    symlinkSync(join(base, 'evil.sh'), join(base, 'work', 'bin', 'link.sh'));
    const work = join(base, 'work');
    expect(checkProgramInside('./bin/ok.sh', work)).toMatchObject({ ok: true });
    expect(checkProgramInside('./bin/link.sh', work)).toMatchObject({
      ok: false,
      code: 'workdir_escape',
    });
    expect(checkProgramInside('npm', work)).toMatchObject({ ok: true });
  });

  it('follows a symlink before `..`, as the kernel does: lnk/../x is x beside the link target', () => {
    const base = tempDir();
    mkdirSync(join(base, 'work'), { recursive: true });
    mkdirSync(join(base, 'outside', 'sub'), { recursive: true });
    writeFileSync(join(base, 'outside', 'evil.sh'), '#!/bin/sh\necho outside\n');
    symlinkSync(join(base, 'outside', 'sub'), join(base, 'work', 'lnk'));
    // As text, ./lnk/../evil.sh is ./evil.sh, inside (and missing); the kernel runs outside/evil.sh.
    expect(checkProgramInside('./lnk/../evil.sh', join(base, 'work'))).toMatchObject({
      ok: false,
      code: 'workdir_escape',
      reason: expect.stringContaining(join(base, 'outside', 'evil.sh')),
    });
  });
});
