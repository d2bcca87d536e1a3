import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_BUTTON_IDS, StateFile } from './state-file.js';

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

  it("keeps a task's approval buttons through a flood of request items, and the digest shown", async () => {
    dir = mkdtempSync(join(tmpdir(), 'ctxbus-tg-state-'));
    const state = await StateFile.open(join(dir, 'state.json'));
    const task = 'task_00000000-0000-4000-8000-000000000000';
    state.recordButtons(task, -100, 3, 'digest-shown');
    for (let index = 0; index <= MAX_BUTTON_IDS; index++) {
      state.recordButtons(
        `00000000-0000-4000-8000-${String(index).padStart(12, '0')}`,
        -100,
        10 + index,
      );
    }
    expect(state.buttonsOf(task, -100, 3)).toEqual({
      chat: -100,
      message: 3,
      digest: 'digest-shown',
    });
    // The oldest item went; the newest stay.
    expect(state.buttonsOf('00000000-0000-4000-8000-000000000000', -100, 10)).toBeUndefined();
    expect(state.buttonsOf('00000000-0000-4000-8000-000000000001', -100, 11)).toBeDefined();
  });
});
