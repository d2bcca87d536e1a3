const STOPWORDS = new Set(
  `a about after again all am an and any are as at be been before being but by can could did do
  does doing for from had has have having he her hers him his how i if in into is it its just me
  my no nor not of on or our ours she so some such than that the their theirs them then there
  these they this those to too up us very was we were what when where which while who whom why
  will with would you your yours`.split(/\s+/),
);

export interface SearchQuery {
  /** FTS5 MATCH expression: every term quoted, OR-joined. */
  match: string;
  terms: string[];
  /** bm25() weights for title, content, summary, tags. */
  weights: readonly number[];
}

/**
 * Turns a natural-language question into an FTS5 query. Terms are OR-joined (a question's
 * words rarely all appear in the answer) and quoted, so no input can be FTS5 syntax.
 * Returns null when nothing searchable is left.
 */
export function buildSearchQuery(text: string): SearchQuery | null {
  const terms: string[] = [];
  for (const match of text.toLowerCase().matchAll(/[\p{L}\p{N}]+/gu)) {
    const term = match[0];
    if (STOPWORDS.has(term) || terms.includes(term)) continue;
    terms.push(term);
  }
  if (terms.length === 0) return null;
  return {
    match: terms.map((term) => `"${term}"`).join(' OR '),
    terms,
    weights: [2, 1, 0.5, 1],
  };
}
