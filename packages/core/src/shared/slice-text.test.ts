import { describe, expect, it } from 'vitest';
import { sliceText } from './slice-text.js';

describe('sliceText', () => {
  it('cuts at the length, never inside a surrogate pair', () => {
    expect(sliceText('abcdef', 3)).toBe('abc');
    expect(sliceText('abc', 10)).toBe('abc');
    expect(sliceText('abc', 0)).toBe('');
    const emoji = '😀'; // two UTF-16 units
    expect(sliceText(`ab${emoji}cd`, 3)).toBe('ab');
    expect(sliceText(`ab${emoji}cd`, 4)).toBe(`ab${emoji}`);
    for (let length = 0; length <= 30; length++) {
      expect(sliceText(emoji.repeat(10), length).isWellFormed()).toBe(true);
    }
  });
});
