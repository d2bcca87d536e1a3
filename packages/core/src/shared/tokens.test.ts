import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { countTokens, effectiveBudget, truncateToTokens } from './tokens.js';

describe('tokens', () => {
  it('counts o200k tokens and treats special-token text as plain text', () => {
    expect(countTokens('')).toBe(0);
    expect(countTokens('hello world')).toBe(2);
    expect(countTokens('<|endoftext|>')).toBeGreaterThan(1);
  });

  it('truncates to a prefix within the limit', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 300 }), fc.nat(60), (text, max) => {
        const cut = truncateToTokens(text, max);
        expect(countTokens(cut)).toBeLessThanOrEqual(max);
        expect(text.startsWith(cut)).toBe(true);
        if (countTokens(text) <= max) expect(cut).toBe(text);
      }),
      { numRuns: 300 },
    );
  });

  it('applies the safety margin', () => {
    expect(effectiveBudget(4000, 0.05)).toBe(3800);
    expect(effectiveBudget(100, 0)).toBe(100);
    expect(effectiveBudget(-5, 0.1)).toBe(0);
  });
});
