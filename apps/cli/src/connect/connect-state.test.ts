import {
  existsSync,
  lstatSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { currentContents, putBack } from './connect-state.js';

const dir = mkdtempSync(join(tmpdir(), 'ctxbus-connect-state-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('putBack', () => {
  it('returns files a failed wiring touched to what they held: edited, created, linked', () => {
    const settings = join(dir, 'settings.json');
    const created = join(dir, 'claude.json');
    const target = join(dir, 'dotfiles-hooks.json');
    const linked = join(dir, 'hooks.json');
    writeFileSync(settings, '{"theme":"dark"}\n');
    writeFileSync(target, '{"hooks":{}}\n');
    symlinkSync(target, linked);
    const before = currentContents([settings, created, linked]);
    // The wiring's first writes, before its next one failed.
    writeFileSync(settings, '{"theme":"dark","hooks":{"ctxbus":1}}\n');
    writeFileSync(created, '{"mcpServers":{}}\n');
    writeFileSync(target, '{"hooks":{"ctxbus":1}}\n');
    expect(putBack(before)).toEqual([]);
    expect(readFileSync(settings, 'utf8')).toBe('{"theme":"dark"}\n');
    expect(existsSync(created)).toBe(false);
    expect(lstatSync(linked).isSymbolicLink()).toBe(true);
    expect(readFileSync(target, 'utf8')).toBe('{"hooks":{}}\n');
  });
});
