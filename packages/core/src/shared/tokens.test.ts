import fc from 'fast-check';
import { countTokens as countWhole } from 'gpt-tokenizer/encoding/o200k_base';
import { describe, expect, it } from 'vitest';
import {
  countTokens,
  effectiveBudget,
  MAX_TOKENIZER_PIECE,
  tokenizerPieces,
  truncateToTokens,
} from './tokens.js';

const PLAIN = { disallowedSpecial: new Set<string>() };
/** CJK characters without punctuation: to the tokenizer, one unbroken run. */
const cjk = (length: number) =>
  Array.from({ length }, (_, index) => String.fromCodePoint(0x4e00 + ((index * 7919) % 20_000)));

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

  it('hands the tokenizer pieces of bounded length that join back to the text', () => {
    // The tokenizer's merges are quadratic in an unbroken run's length: an item of 100,000
    // characters of one letter or of CJK without punctuation held the hub for seconds.
    const texts = [
      'q'.repeat(100_000),
      ' '.repeat(5_000),
      '!'.repeat(5_000),
      cjk(20_000).join(''),
      '😀'.repeat(3_000),
      'Decision: keep the invoices in Postgres. '.repeat(500),
    ];
    for (const text of texts) {
      const pieces = tokenizerPieces(text);
      expect(pieces.join('')).toBe(text);
      for (const piece of pieces) {
        expect(piece.length).toBeGreaterThan(0);
        expect(piece.length).toBeLessThanOrEqual(MAX_TOKENIZER_PIECE);
        expect(piece.isWellFormed()).toBe(true); // no surrogate pair split
      }
    }
    expect(tokenizerPieces('short')).toEqual(['short']);
  });

  it('counts text up to a piece exactly, and prose in pieces as it counts whole', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: MAX_TOKENIZER_PIECE }), (text) => {
        expect(countTokens(text)).toBe(countWhole(text, PLAIN));
      }),
      { numRuns: 200 },
    );
    // Prose is cut before a word's leading space, where o200k's chunks break anyway.
    const prose = 'The team chose Postgres for invoices, after the review; see ADR-12. '.repeat(
      300,
    );
    expect(countTokens(prose)).toBe(countWhole(prose, PLAIN));
    // An unbroken run cut in pieces: within a token per cut of its whole count.
    const run = cjk(3_000).join('');
    const cuts = tokenizerPieces(run).length - 1;
    expect(cuts).toBeGreaterThan(0);
    expect(Math.abs(countTokens(run) - countWhole(run, PLAIN))).toBeLessThanOrEqual(cuts);
  });

  it('truncates long unbroken text to a prefix within the limit', () => {
    for (const text of ['q'.repeat(50_000), cjk(8_000).join(''), 'word '.repeat(4_000)]) {
      for (const max of [1, 700, 3_000]) {
        const cut = truncateToTokens(text, max);
        expect(text.startsWith(cut)).toBe(true);
        expect(countTokens(cut)).toBeLessThanOrEqual(max);
        expect(countTokens(cut)).toBeGreaterThan(max - 10);
      }
    }
  });

  it('applies the safety margin', () => {
    expect(effectiveBudget(4000, 0.05)).toBe(3800);
    expect(effectiveBudget(100, 0)).toBe(100);
    expect(effectiveBudget(-5, 0.1)).toBe(0);
  });
});
