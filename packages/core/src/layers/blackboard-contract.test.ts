import { describe, expect, it } from 'vitest';
import { storedItem } from '../items/test-items.js';
import {
  BLACKBOARD_TAG,
  blackboardEntryKey,
  blackboardEventOf,
  itemValue,
  parseBlackboardKey,
  resourceKey,
} from './blackboard-contract.js';

describe('blackboard keys', () => {
  it('round-trip a board and an entry; anything else is no blackboard key', () => {
    const key = blackboardEntryKey({ scope: 'thread', id: 'T-1' }, 'summary');
    expect(key).toBe('blackboard/thread/T-1/summary');
    expect(parseBlackboardKey(key)).toEqual({
      board: { scope: 'thread', id: 'T-1' },
      entry: 'summary',
    });
    for (const other of [null, 'project/x', 'blackboard/team/T/x', 'blackboard/space/s/a/b']) {
      expect(parseBlackboardKey(other)).toBeNull();
    }
    expect(() => blackboardEntryKey({ scope: 'space', id: 'a/b' }, 'x')).toThrow(
      expect.objectContaining({ code: 'validation_failed' }),
    );
    expect(resourceKey('research/sqlite')).toBe('resource/research/sqlite');
    expect(() => resourceKey('/bad')).toThrow(/not a resource name/);
  });

  it('blackboardEventOf: only tagged items under a blackboard key become events', () => {
    const item = storedItem({
      key: 'blackboard/space/s1/result',
      relevanceTags: [BLACKBOARD_TAG],
      content: '{"ok":true}',
    });
    expect(blackboardEventOf({ seq: 7, kind: 'superseded', item })).toEqual({
      seq: 7,
      event: 'blackboard-updated',
      change: 'context-superseded',
      board: { scope: 'space', id: 's1' },
      entry: 'result',
      item,
    });
    expect(
      blackboardEventOf({ seq: 7, kind: 'added', item: { ...item, relevanceTags: [] } }),
    ).toBeNull();
    expect(itemValue(item)).toEqual({ ok: true });
    expect(itemValue({ content: 'plain words' })).toBe('plain words');
  });
});
