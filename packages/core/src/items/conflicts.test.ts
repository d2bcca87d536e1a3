import { describe, expect, it } from 'vitest';
import { conflictItemInput, conflictKey, isConflict } from './conflicts.js';
import { contextItemInputSchema, LIMITS, memoryKeySchema } from './context-item.js';
import { prepareItem } from './prepare-item.js';

const at = (iso: string, runtime: string, title: string, extra = {}) => {
  const item = prepareItem(
    { type: 'decision', title, key: 'project/db', ...extra },
    {
      teamId: 'acme',
      runtime,
    },
    { now: new Date(iso) },
  );
  const { inputHash: _, ...fields } = item;
  return { ...fields, seq: 1, supersededBy: null, consumed: false, consumedBy: [] };
};

describe('conflicts', () => {
  it('keys a conflict by its key, hashed when the prefix would pass the key limit', () => {
    expect(conflictKey('project/db')).toBe('conflict/project/db');
    const long = `a${'b'.repeat(LIMITS.keyChars - 1)}`;
    const key = conflictKey(long);
    expect(key).toMatch(/^conflict\/sha256-[0-9a-f]{64}$/);
    expect(memoryKeySchema.safeParse(key).success).toBe(true);
  });

  it('raises for two runtimes within the window only, with team values that differ', () => {
    const older = at('2026-11-28T09:00:00.000Z', 'claude-code', 'a');
    const newer = at('2026-11-28T09:10:00.000Z', 'openclaw', 'b');
    const window = 10 * 60_000;
    expect(isConflict({ winner: newer, replaced: older, via: 'key' }, window)).toBe(true);
    expect(isConflict({ winner: newer, replaced: older, via: 'key' }, window - 1)).toBe(false);
    expect(isConflict({ winner: newer, replaced: older, via: 'supersedes' }, window)).toBe(false);
    expect(isConflict({ winner: newer, replaced: older, via: 'key' }, 0)).toBe(false);
    const mine = at('2026-11-28T09:01:00.000Z', 'claude-code', 'b');
    expect(isConflict({ winner: mine, replaced: older, via: 'key' }, window)).toBe(false);
    const same = at('2026-11-28T09:01:00.000Z', 'openclaw', 'a');
    expect(isConflict({ winner: same, replaced: older, via: 'key' }, window)).toBe(false);
    const hidden = at('2026-11-28T09:01:00.000Z', 'openclaw', 'c', { visibility: 'private' });
    expect(isConflict({ winner: hidden, replaced: older, via: 'key' }, window)).toBe(false);
  });

  it('writes a conflict item any writer could send: a valid input naming both', () => {
    const older = at('2026-11-28T09:00:00.000Z', 'claude-code', 'a');
    const newer = at('2026-11-28T09:01:00.000Z', 'openclaw', 'b');
    const input = conflictItemInput({ winner: newer, replaced: older, via: 'key' });
    expect(contextItemInputSchema.safeParse(input).success).toBe(true);
    expect(input.title).toBe(
      'Conflict on project/db: claude-code and openclaw wrote different values',
    );
  });
});
