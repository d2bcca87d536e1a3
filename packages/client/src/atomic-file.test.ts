import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writeFileAtomic } from './atomic-file.js';

const dir = mkdtempSync(join(tmpdir(), 'ctxbus-atomic-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('writeFileAtomic', () => {
  it('replaces the file whole, with the mode asked whatever the umask, and leaves no temporary file', () => {
    const path = join(dir, 'state.json');
    writeFileSync(path, 'old');
    const umask = process.umask(0o077);
    try {
      writeFileAtomic(path, '{"new":true}', { mode: 0o644, durable: true });
    } finally {
      process.umask(umask);
    }
    expect(readFileSync(path, 'utf8')).toBe('{"new":true}');
    expect(statSync(path).mode & 0o777).toBe(0o644);
    writeFileAtomic(path, 'secret', { mode: 0o600 });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir).filter((name) => name.startsWith('.'))).toEqual([]);
  });

  it('with followLink, writes the file a symbolic link names and keeps the link (dotfiles)', () => {
    const dotfiles = join(dir, 'dotfiles');
    const config = join(dir, 'config');
    mkdirSync(dotfiles);
    mkdirSync(config);
    writeFileSync(join(dotfiles, 'settings.json'), '{"theme":"dark"}');
    const link = join(config, 'settings.json');
    symlinkSync(join(dotfiles, 'settings.json'), link);
    writeFileAtomic(link, '{"theme":"dark","hooks":{}}', { mode: 0o600, followLink: true });
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readFileSync(join(dotfiles, 'settings.json'), 'utf8')).toBe(
      '{"theme":"dark","hooks":{}}',
    );
    expect(readdirSync(config)).toEqual(['settings.json']);
    // A link to a file not there yet: the file is created where it points.
    const pending = join(config, 'later.json');
    symlinkSync(join(dotfiles, 'later.json'), pending);
    writeFileAtomic(pending, 'x', { followLink: true });
    expect(readFileSync(join(dotfiles, 'later.json'), 'utf8')).toBe('x');
    expect(lstatSync(pending).isSymbolicLink()).toBe(true);
    // Without it, the link is replaced by the file (the default).
    writeFileAtomic(link, 'replaced');
    expect(lstatSync(link).isSymbolicLink()).toBe(false);
  });

  it('removes its temporary file when the rename fails, and leaves what was there', () => {
    // A directory where the file should go: the temporary file is written, the rename fails.
    const taken = join(dir, 'taken');
    mkdirSync(taken);
    writeFileSync(join(taken, 'inside.txt'), 'old');
    expect(() => writeFileAtomic(taken, 'new')).toThrow(/EISDIR|ENOTEMPTY|EEXIST/);
    expect(statSync(taken).isDirectory()).toBe(true);
    expect(readFileSync(join(taken, 'inside.txt'), 'utf8')).toBe('old');
    expect(readdirSync(dir).filter((name) => name.endsWith('.tmp'))).toEqual([]);
  });
});
