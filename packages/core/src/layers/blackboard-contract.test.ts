import { describe, expect, it } from 'vitest';
import { storedItem } from '../items/test-items.js';
import {
  BLACKBOARD_TAG,
  blackboardEntryKey,
  blackboardEventOf,
  itemValue,
  parseBlackboardKey,
  resourceKey,
  TEXT_VALUE_TAG,
  valueContent,
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
    expect(itemValue({ content: 'plain words', relevanceTags: [] })).toBe('plain words');
  });
});

describe('entry and resource values', () => {
  it('a string is held as it is and read back a string, even one that reads as JSON', () => {
    expect(valueContent('PostgreSQL + pgvector')).toEqual({
      content: 'PostgreSQL + pgvector',
      tags: [TEXT_VALUE_TAG],
    });
    expect(valueContent({ ok: true })).toEqual({ content: '{"ok":true}', tags: [] });
    // The value's own tag is never the writer's to set.
    expect(valueContent(7, ['x', TEXT_VALUE_TAG]).tags).toEqual(['x']);
    expect(valueContent('7', ['x']).tags).toEqual([TEXT_VALUE_TAG, 'x']);
    for (const value of ['42', 'true', 'null', '{"a":1}', '"quoted"', '', { n: [1] }, 7, false]) {
      const { content, tags } = valueContent(value);
      expect(itemValue({ content, relevanceTags: tags })).toEqual(value);
    }
  });

  it('an older item, its string JSON-quoted and untagged, still reads as the string', () => {
    expect(itemValue({ content: '"Use the staging DB for tests"', relevanceTags: [] })).toBe(
      'Use the staging DB for tests',
    );
    expect(itemValue({ content: '42', relevanceTags: [] })).toBe(42);
  });
});
