import { countTokens as countO200k, decode, encode } from 'gpt-tokenizer/encoding/o200k_base';

// Special-token strings in user content are ordinary text to us, never control tokens.
const PLAIN_TEXT = { disallowedSpecial: new Set<string>() } as const;

/** Name of the tokenizer every ctxbus token count uses. */
export const TOKENIZER = 'o200k_base';

/** Number of o200k tokens in `text`. */
export function countTokens(text: string): number {
  if (text.length === 0) return 0;
  return countO200k(text, PLAIN_TEXT);
}

/** Cuts `text` to `length` UTF-16 units without splitting a surrogate pair. */
function sliceSafe(text: string, length: number): string {
  const code = text.charCodeAt(length - 1);
  return code >= 0xd800 && code <= 0xdbff ? text.slice(0, length - 1) : text.slice(0, length);
}

/**
 * The longest prefix of `text` (a true string prefix) that fits in `maxTokens`. The decoded
 * token prefix gives a first guess; when a token boundary splits a character, a binary search
 * over prefix lengths finds the cut, checked with an exact count.
 */
export function truncateToTokens(text: string, maxTokens: number): string {
  if (maxTokens <= 0) return '';
  const tokens = encode(text, PLAIN_TEXT);
  if (tokens.length <= maxTokens) return text;
  const guess = decode(tokens.slice(0, maxTokens)).replace(/\uFFFD+$/u, '');
  if (text.startsWith(guess) && countTokens(guess) <= maxTokens) return guess;
  let low = 0;
  let high = Math.min(text.length, guess.length + 16);
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (countTokens(sliceSafe(text, mid)) <= maxTokens) low = mid;
    else high = mid - 1;
  }
  return sliceSafe(text, low);
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
