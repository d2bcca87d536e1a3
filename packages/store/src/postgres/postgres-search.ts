import { stem, tokenize } from '../search/search-text.js';

// How items and questions become tsvector and tsquery values.
//
// The lexemes are not PostgreSQL's: its `english` configuration stems with Snowball (Porter 2)
// and parses words its own way, while the shared search pipeline (buildSearchQuery, the
// re-ranker, the highlighter) works with the Porter stems of `tokenize`. Building the tsvector
// here from those stems keeps one notion of a term everywhere: the GIN index finds exactly the
// items the re-ranker will score, the term statistics table counts the stems that
// buildSearchQuery looks up, and non-ASCII text is tokenized the same whatever the database's
// locale. Queries are built from the same stems as quoted lexemes joined with `|`, never parsed
// from user text, so no input can be a tsquery syntax error.

/** Longest token indexed: PostgreSQL refuses lexemes over 2047 bytes (4 bytes per character). */
export const MAX_LEXEME_CHARS = 500;
/** tsvector positions stop at 16383; later words share the last position. */
const MAX_POSITION = 16_383;
/** tsvector keeps at most 256 positions per lexeme. */
const MAX_POSITIONS_PER_LEXEME = 255;

/** Weight of each field's words: ts_rank's weights array below gives title the most. */
const FIELD_WEIGHTS = [
  ['title', 'A'],
  ['content', 'B'],
  ['summary', 'C'],
  ['tags', 'D'],
] as const;

/** ts_rank weights {D, C, B, A}: title counts twice, as in the SQLite store's bm25(2, 1, 1, 1). */
export const TS_RANK_WEIGHTS = '{0.5, 0.5, 0.5, 1}';

export interface SearchFields {
  title: string;
  content: string;
  summary: string;
  /** The tags as stored for search (a JSON array: only its words matter). */
  tags: string;
}

export interface SearchDocument {
  /** tsvector input text. */
  vector: string;
  /** Distinct stems, for the term statistics. */
  stems: string[];
}

/** A lexeme as tsvector/tsquery input: quoted, with quotes and backslashes escaped. */
export function quoteLexeme(lexeme: string): string {
  return `'${lexeme.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;
}

/** The tsvector (as input text) and distinct stems of an item's searchable fields. */
export function searchDocument(fields: SearchFields): SearchDocument {
  const positions = new Map<string, string[]>();
  let position = 0;
  for (const [field, weight] of FIELD_WEIGHTS) {
    for (const token of tokenize(fields[field])) {
      position = Math.min(position + 1, MAX_POSITION);
      if (token.length > MAX_LEXEME_CHARS) continue;
      const lexeme = stem(token);
      let list = positions.get(lexeme);
      if (!list) {
        list = [];
        positions.set(lexeme, list);
      }
      if (list.length < MAX_POSITIONS_PER_LEXEME) list.push(`${position}${weight}`);
    }
  }
  const parts: string[] = [];
  for (const [lexeme, list] of positions) parts.push(`${quoteLexeme(lexeme)}:${list.join(',')}`);
  return { vector: parts.join(' '), stems: [...positions.keys()] };
}

/** tsquery input text matching any of the stems, or null when none can be in the index. */
export function anyOfQuery(stems: readonly string[]): string | null {
  const usable = [...new Set(stems)].filter(
    (lexeme) => lexeme.length > 0 && lexeme.length <= MAX_LEXEME_CHARS,
  );
  return usable.length === 0 ? null : usable.map(quoteLexeme).join(' | ');
}
