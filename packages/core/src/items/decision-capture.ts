import { sha256Hex } from '../shared/canonical-hash.js';

/** `Decision: ...` (or `DECISION:`), also as a list item or in bold; not `decision:` (a key). */
const DECISION_LINE =
  /^\s*(?:[-*]\s+)?(?:\*\*|__)?(?:Decision|DECISION)(?:\*\*|__)?\s*:\s*(?:\*\*|__)?\s*(.+?)\s*$/;

/** A fence line of Markdown code (up to 3 spaces in, then 3 or more ` or ~). */
const FENCE = /^ {0,3}(`{3,}|~{3,})/;

/**
 * The longest decision kept, in characters: a longer line is cut (with …), far below what the
 * hub takes for an item's content, so that a runaway line is recorded instead of refused.
 */
export const MAX_DECISION_CHARS = 4_000;

/**
 * Decisions the assistant stated explicitly, one per line: `Decision: use SQLite for ...`
 * (also as a list item or in bold). Nothing is inferred from other prose, and nothing is taken
 * from what the reply only shows: fenced code (a workflow file's `decision:` key, an example of
 * the format) and quoted lines (`> Decision: ...`, someone else's words).
 */
export function extractDecisions(text: string): string[] {
  const found: string[] = [];
  let fence: string | null = null;
  for (const line of text.split(/\r?\n|\r/)) {
    const marker = FENCE.exec(line)?.[1];
    if (marker !== undefined) {
      // A fence closes on the same character, at least as long; another opens nothing inside.
      if (fence === null) fence = marker;
      else if (marker[0] === fence[0] && marker.length >= fence.length) fence = null;
      continue;
    }
    if (fence !== null || /^\s*>/.test(line)) continue;
    const stated = DECISION_LINE.exec(line)?.[1]
      ?.replace(/\*\*|__/g, '')
      .trim();
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
