import { countTokens as countO200k, decode, encode } from 'gpt-tokenizer/encoding/o200k_base';
import { sliceText } from './slice-text.js';

// Special-token strings in user content are ordinary text to us, never control tokens.
const PLAIN_TEXT = { disallowedSpecial: new Set<string>() } as const;

/** Name of the tokenizer every ctxbus token count uses. */
export const TOKENIZER = 'o200k_base';

/**
 * The longest text handed to the tokenizer at once. Its byte-pair merges take time quadratic in
 * the length of one pre-tokenized chunk, and a chunk is any unbroken run: CJK prose without
 * punctuation, one character repeated, a run of spaces. Whole, 128,000 of one letter held the
 * hub's event loop for 14 s and 64,000 CJK characters for 27 s (an item may hold 100,000); in
 * pieces of this size, milliseconds and 0.2 s. Text up to this length is counted exactly as it
 * is; longer text is cut before a word's leading whitespace where the piece's second half has
 * one (where o200k's chunks break anyway), else at this length, which may shift the count of a
 * long unbroken run by a token per cut.
 */
export const MAX_TOKENIZER_PIECE = 1_000;

const isSpace = (code: number) => code === 32 || (code >= 9 && code <= 13) || code === 0xa0;

/** Where the piece starting at `start` ends (see MAX_TOKENIZER_PIECE). */
function pieceEnd(text: string, start: number): number {
  const end = start + MAX_TOKENIZER_PIECE;
  for (let at = end - 1; at > start + MAX_TOKENIZER_PIECE / 2; at--) {
    if (isSpace(text.charCodeAt(at)) && !isSpace(text.charCodeAt(at - 1))) return at;
  }
  const last = text.charCodeAt(end - 1);
  return last >= 0xd800 && last <= 0xdbff ? end - 1 : end;
}

/** `text` in the pieces the tokenizer takes one at a time; joined, they are `text`. */
export function tokenizerPieces(text: string): string[] {
  const pieces: string[] = [];
  let start = 0;
  while (text.length - start > MAX_TOKENIZER_PIECE) {
    const end = pieceEnd(text, start);
    pieces.push(text.slice(start, end));
    start = end;
  }
  pieces.push(text.slice(start));
  return pieces;
}

/** Number of o200k tokens in `text`. */
export function countTokens(text: string): number {
  if (text.length === 0) return 0;
  if (text.length <= MAX_TOKENIZER_PIECE) return countO200k(text, PLAIN_TEXT);
  let count = 0;
  for (const piece of tokenizerPieces(text)) count += countO200k(piece, PLAIN_TEXT);
  return count;
}

/** The o200k tokens of `text`, piece by piece (see MAX_TOKENIZER_PIECE). */
function encodeText(text: string): number[] {
  if (text.length <= MAX_TOKENIZER_PIECE) return encode(text, PLAIN_TEXT);
  return tokenizerPieces(text).flatMap((piece) => encode(piece, PLAIN_TEXT));
}

/**
 * The longest prefix of `text` (a true string prefix) that fits in `maxTokens`. The decoded
 * token prefix gives a first guess; when a token boundary splits a character, a binary search
 * over prefix lengths finds the cut, checked with an exact count.
 */
export function truncateToTokens(text: string, maxTokens: number): string {
  if (maxTokens <= 0) return '';
  const tokens = encodeText(text);
  if (tokens.length <= maxTokens) return text;
  const guess = decode(tokens.slice(0, maxTokens)).replace(/\uFFFD+$/u, '');
  if (text.startsWith(guess) && countTokens(guess) <= maxTokens) return guess;
  let low = 0;
  let high = Math.min(text.length, guess.length + 16);
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (countTokens(sliceText(text, mid)) <= maxTokens) low = mid;
    else high = mid - 1;
  }
  return sliceText(text, low);
}

/**
 * The budget a build may fill: the requested budget less a per-runtime safety margin (a
 * fraction, since the runtime's own tokenizer may count a little differently from o200k).
 */
export function effectiveBudget(tokenBudget: number, safetyMargin: number): number {
  if (!Number.isFinite(tokenBudget) || tokenBudget < 0) return 0;
  const margin = Math.min(Math.max(safetyMargin, 0), 0.9);
  return Math.floor(tokenBudget * (1 - margin));
}

/** The exact o200k counter for `buildTurnContext`, under the name snapshots record. */
export const o200kTokenCounter = { name: TOKENIZER, count: countTokens } as const;
