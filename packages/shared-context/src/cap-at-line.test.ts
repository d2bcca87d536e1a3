import { describe, expect, it } from 'vitest';
import { capAtLine } from './read.js';

describe('capAtLine', () => {
  it('keeps text that fits as it is', () => {
    expect(capAtLine('a\nb', 3)).toBe('a\nb');
  });

  it('keeps whole lines, and leaves out a line when little room is left', () => {
    const text = `${'x'.repeat(50)}\n${'y'.repeat(100)}`;
    expect(capAtLine(text, 70)).toBe('x'.repeat(50));
  });

  it('cuts a line too long for the room at a word and marks the cut', () => {
    const text = `Heading\n${'word '.repeat(100)}`;
    const cut = capAtLine(text, 100);
    expect(cut.length).toBeLessThanOrEqual(100);
    expect(cut).toMatch(/^Heading\n(word ){10,}word…$/);
  });

  it('cuts a line with no space anywhere in the room, never inside a surrogate pair', () => {
    const text = `Heading\n${'😀'.repeat(100)}`;
    for (const max of [80, 81]) {
      const cut = capAtLine(text, max);
      expect(cut.length).toBeLessThanOrEqual(max);
      expect(cut.endsWith('…')).toBe(true);
      expect(cut.slice(8, -1)).toMatch(/^(😀)+$/u);
    }
  });

  it('stays within the limit for any text', () => {
    const texts = ['a b c\n'.repeat(300), `${'z'.repeat(5_000)}\nend`, '\n\n\n'.repeat(100)];
    for (const text of texts)
      for (const max of [1, 39, 40, 41, 120, 999])
        expect(capAtLine(text, max).length).toBeLessThanOrEqual(max);
  });
});
