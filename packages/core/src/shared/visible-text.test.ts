import { describe, expect, it } from 'vitest';
import { shownJson, visibleText } from './visible-text.js';

// What a person reads before deciding: nothing hidden, reordered, or passing for something else.

describe('visibleText', () => {
  it('escapes controls, format characters, line separators and blank fillers; keeps the rest', () => {
    expect(visibleText('a\u202eb\u2066c\u200bd\u2028e\u3164f\x1bg')).toBe(
      'a\\u202eb\\u2066c\\u200bd\\u2028e\\u3164f\\x1bg',
    );
    expect(visibleText('line one\nline two\tcafé ✓ 日本')).toBe('line one\nline two\tcafé ✓ 日本');
  });
});

describe('shownJson', () => {
  it('quotes as JSON and escapes everything outside printable ASCII', () => {
    // The approval probe's five commands: one real, four that looked the same on screen.
    const shown = [
      ['./build.sh'],
      ['./build.sh\uFE0F'],
      ['./build\u034F.sh'],
      ['./build.sh\u{E01EF}'],
      ['./b\u057Dild.sh'],
    ].map(shownJson);
    expect(shown).toEqual([
      '["./build.sh"]',
      '["./build.sh\\ufe0f"]',
      '["./build\\u034f.sh"]',
      '["./build.sh\\u{e01ef}"]',
      '["./b\\u057dild.sh"]',
    ]);
    expect(new Set(shown).size).toBe(5);
    // Bidi controls cannot reorder it; argument boundaries, spaces and newlines show.
    expect(shownJson(['bash -c \u202E\u2066rm -rf ~/\u2069', 'a  b\nc'])).toBe(
      '["bash -c \\u202e\\u2066rm -rf ~/\\u2069","a  b\\nc"]',
    );
    expect(shownJson('/home/me/app')).toBe('"/home/me/app"');
  });
});
