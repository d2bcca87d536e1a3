import { describe, expect, it } from 'vitest';
import { asFlags, terminalSafe } from './output.js';

describe('asFlags: the hub names request fields, the person typed flags', () => {
  it.each([
    ['query.minUrgency: Invalid option', '--min-urgency: Invalid option'],
    [
      'query.window: Too big: expected number to be <=90',
      '--window: Too big: expected number to be <=90',
    ],
    ['body.items[0].type: Invalid option', '--type: Invalid option'],
    ['body.relevanceTags[0]: a tag has no spaces', '--tags[0]: a tag has no spaces'],
    ['params.id: Invalid UUID', '<id>: Invalid UUID'],
    ['no field here: nothing changes', 'no field here: nothing changes'],
  ])('%s -> %s', (given, shown) => {
    expect(asFlags(given)).toBe(shown);
  });
});

describe('terminalSafe', () => {
  it('shows control characters and bidi overrides as escapes, keeps newlines, tabs and text', () => {
    expect(terminalSafe('a\u001b[2Jb\u0007\tc\nd\u202ee\u0085')).toBe(
      'a\\x1b[2Jb\\x07\tc\nd\\u202ee\\x85',
    );
    expect(terminalSafe('plain — ünïcode ✓')).toBe('plain — ünïcode ✓');
  });
});
