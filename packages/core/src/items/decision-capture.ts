import { sha256Hex } from '../shared/canonical-hash.js';

const DECISION_LINE =
  /^\s*(?:[-*]\s+)?(?:\*\*|__)?Decision(?:\*\*|__)?\s*:\s*(?:\*\*|__)?\s*(.+?)\s*$/gim;

/**
 * The longest decision kept, in characters: a longer line is cut (with …), far below what the
 * hub takes for an item's content, so that a runaway line is recorded instead of refused.
 */
export const MAX_DECISION_CHARS = 4_000;

/**
 * Decisions the assistant stated explicitly, one per line: `Decision: use SQLite for ...`
 * (also as a list item or in bold). Nothing is inferred from other prose.
 */
export function extractDecisions(text: string): string[] {
  const found: string[] = [];
  for (const match of text.matchAll(DECISION_LINE)) {
    const stated = match[1]?.replace(/\*\*|__/g, '').trim();
    const decision =
      stated && stated.length > MAX_DECISION_CHARS
        ? `${stated.slice(0, MAX_DECISION_CHARS - 1)}…`
        : stated;
    if (decision && !found.includes(decision)) found.push(decision);
  }
  return found;
}

/** A UUID derived from its parts (same parts, same id): makes retried writes idempotent. */
export function stableId(...parts: string[]): string {
  const hex = sha256Hex(parts.join('\u0000'));
  // RFC 9562 version 8 (custom) layout with the RFC variant bits.
  const variant = ((Number.parseInt(hex.slice(16, 18), 16) & 0x3f) | 0x80).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(18, 20)}-${hex.slice(20, 32)}`;
}
