import { STOPWORDS, stem, tokenize } from './search-text.js';

/** How many candidates the first-pass full-text query fetches for re-ranking. */
export const CANDIDATE_LIMIT = 50;

/**
 * How many of the lexically best candidates get their thread neighbours fetched (the rest of
 * the candidates rarely reach the top 10 through them: recall is unchanged against all 50).
 */
export const THREAD_CONTEXT_CANDIDATES = 20;

/**
 * Terms in more than this fraction of all items stay out of the MATCH (they still count in
 * re-ranking): costs no measurable recall, and bounds the full-text work at 100k items (a
 * worst-case question went from 42-60 ms to 8 ms).
 */
export const MAX_MATCH_DOCUMENT_FREQUENCY_RATIO = 0.2;

/**
 * Posting budget of the MATCH: terms are admitted rarest first while their document
 * frequencies add up to at most this; the rarest term is always admitted.
 */
export const MAX_MATCH_POSTINGS = 5_000;

/** Distinct terms taken from one question at most. */
export const MAX_QUERY_TERMS = 32;

/** One distinct (by stem) searchable term of a question. */
export interface QueryTerm {
  token: string;
  /** The form stored in the index (and looked up for document frequencies). */
  stem: string;
  documentFrequency?: number;
  /** Whether the term is in the MATCH (false: re-ranking only). */
  inMatch: boolean;
}

export interface SearchQueryOptions {
  /** Items containing a stem (the index's vocabulary). Enables pruning of common terms. */
  documentFrequency?: (stem: string) => number;
  totalDocuments?: number;
  maxTerms?: number;
  /** Defaults to MAX_MATCH_DOCUMENT_FREQUENCY_RATIO. */
  maxDocumentFrequencyRatio?: number;
  /** Defaults to MAX_MATCH_POSTINGS. */
  maxMatchPostings?: number;
}

export interface SearchQuery {
  /** FTS5 MATCH expression: quoted terms joined with OR. Never a syntax error. */
  match: string;
  /** The tokens in `match`, in question order. */
  terms: string[];
  /**
   * MATCH with every term, pruned or not: the fallback when the pruned MATCH finds too few
   * visible items (a small corpus, or a small team in a big hub, where every term is "common").
   */
  fullMatch: string;
  /** Every searchable term, in question order (MATCH and re-rank-only). */
  queryTerms: QueryTerm[];
}

/** Quotes one term as an FTS5 string (`"..."`, inner quotes doubled): safe for any input. */
export function quoteFtsTerm(term: string): string {
  return `"${term.replace(/"/g, '""')}"`;
}

/** Distinct (by stem) non-stopword terms of a question, in order of first appearance. */
export function extractQueryTerms(question: string): QueryTerm[] {
  const terms = new Map<string, QueryTerm>();
  for (const token of tokenize(question)) {
    if (STOPWORDS.has(token)) continue;
    const stemmed = stem(token);
    if (!terms.has(stemmed)) terms.set(stemmed, { token, stem: stemmed, inMatch: true });
  }
  return [...terms.values()];
}

function rarestFirst(terms: readonly QueryTerm[]): QueryTerm[] {
  return terms
    .map((term, index) => ({ term, index }))
    .sort(
      (a, b) =>
        (a.term.documentFrequency ?? 0) - (b.term.documentFrequency ?? 0) || a.index - b.index,
    )
    .map(({ term }) => term);
}

/**
 * Turns a natural-language question into a full-text query, or null when nothing searchable
 * is left (empty, punctuation or stop words only). Terms are OR-joined, since a question's
 * words rarely all appear in its answer, and quoted, so no input is FTS5 syntax. With document
 * frequencies, very common terms are kept for re-ranking but left out of the MATCH.
 * Deterministic for the same input and frequencies.
 */
export function buildSearchQuery(
  question: string,
  options: SearchQueryOptions = {},
): SearchQuery | null {
  let terms = extractQueryTerms(question);
  if (terms.length === 0) return null;
  const { documentFrequency } = options;
  if (documentFrequency)
    for (const term of terms) term.documentFrequency = documentFrequency(term.stem);
  const maxTerms = Math.max(1, options.maxTerms ?? MAX_QUERY_TERMS);
  if (terms.length > maxTerms) {
    const keep = new Set(rarestFirst(terms).slice(0, maxTerms));
    terms = terms.filter((term) => keep.has(term));
  }
  if (documentFrequency) {
    const total = options.totalDocuments ?? 0;
    const ratio = options.maxDocumentFrequencyRatio ?? MAX_MATCH_DOCUMENT_FREQUENCY_RATIO;
    const budget = options.maxMatchPostings ?? MAX_MATCH_POSTINGS;
    const frequencyLimit = total > 0 ? ratio * total : Number.POSITIVE_INFINITY;
    let postings = 0;
    rarestFirst(terms).forEach((term, rank) => {
      const frequency = term.documentFrequency ?? 0;
      term.inMatch = rank === 0 || (frequency <= frequencyLimit && postings + frequency <= budget);
      if (term.inMatch) postings += frequency;
    });
  }
  const inMatch = terms.filter((term) => term.inMatch).map((term) => term.token);
  return {
    match: inMatch.map(quoteFtsTerm).join(' OR '),
    terms: inMatch,
    fullMatch: terms.map((term) => quoteFtsTerm(term.token)).join(' OR '),
    queryTerms: terms,
  };
}
