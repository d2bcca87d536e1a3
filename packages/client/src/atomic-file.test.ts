import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
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
