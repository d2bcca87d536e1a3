import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { StateFile } from './state-file.js';

let dir: string;
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('StateFile', () => {
  it('starts fresh, saves atomically (no temporary left), and reads back', async () => {
    dir = mkdtempSync(join(tmpdir(), 'ctxbus-tg-state-'));
    const path = join(dir, 'nested', 'state.json');
    const state = await StateFile.open(path);
    const chat = state.chat(42, 7);
    chat.watch = ['deploy'];
    await Promise.all([state.save(), state.save()]);
    expect(readdirSync(join(dir, 'nested'))).toEqual(['state.json']);
    const again = await StateFile.open(path);
    expect(again.chat(42, 0)).toEqual({ lastSeq: 7, watch: ['deploy'], digest: [] });
  });

  it('refuses a file that is not its state, naming it', async () => {
    dir = mkdtempSync(join(tmpdir(), 'ctxbus-tg-state-'));
    const path = join(dir, 'state.json');
    writeFileSync(path, '{"version":2}');
    await expect(StateFile.open(path)).rejects.toThrow(/not a ctxbus telegram state file/);
    expect(readFileSync(path, 'utf8')).toBe('{"version":2}');
  });
});
