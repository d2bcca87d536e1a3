import type { SearchQuery } from './search-query.js';
import { stem, tokenize } from './search-text.js';

// Second-pass ranking of full-text candidates, plus context from neighbouring items of the same
// thread. Tuned on LoCoMo's development split (search-quality numbers in the README): 64.8% ->
// 82.9% of questions with an evidence turn in the top 10; leave-one-conversation-out 82.2%.

/** One row to re-rank: an FTS5 candidate, or a thread neighbour fetched for context. */
export interface RerankCandidate {
  rid: number;
  title: string;
  content: string;
  summary: string;
  /** The stored tags column (JSON array or space-separated; only its words matter). */
  tags: string;
  /** `bm25()` value from the candidate query; `null`/absent for neighbour-only rows. */
  ftsScore?: number | null;
  /** rids of the items just before this one in its thread, nearest first. */
  before?: readonly number[];
  /** rids of the items just after this one in its thread, nearest first. */
  after?: readonly number[];
}

/** Collection statistics for the re-ranker. */
export interface RerankStats {
  /** Rows in the FTS table (the same population `documentFrequency` counts). */
  totalDocuments: number;
  /** Rows containing a stem; not needed for terms that already carry `documentFrequency`. */
  documentFrequency?: (stem: string) => number;
  /** Mean tokens per column; defaults to the mean over the candidates given. */
  averageFieldLength?: Partial<Record<'title' | 'content' | 'summary' | 'tags', number>>;
}

/** Tuning of `rerankCandidates`. */
export interface RerankOptions {
  /** BM25 term-frequency saturation. */
  k1: number;
  /** BM25 length normalisation (0 = none). */
  b: number;
  /** BM25F field weights (title, content, summary, tags). */
  fieldWeights: { title: number; content: number; summary: number; tags: number };
  /** Added once when a query term appears in the item's title or tags. */
  titleBoost: number;
  /** Lexical score multiplied by (idf share of the query's terms that the item matches)^this. */
  coordination: number;
  /**
   * Weights of the neighbour contributions: item score += kernel[k-1] * max(score of the item k
   * places before, k places after) in the same thread. Empty = no thread context.
   */
  neighbourKernel: readonly number[];
}

/** Tuned defaults (LoCoMo dev, stable across all five conversations). */
export const DEFAULT_RERANK_OPTIONS: Readonly<RerankOptions> = Object.freeze({
  k1: 1.2,
  b: 0.25,
  fieldWeights: Object.freeze({ title: 0.5, content: 1, summary: 1, tags: 1 }),
  titleBoost: 1,
  coordination: 1,
  neighbourKernel: Object.freeze([0.5, 0.25]),
});

/** Items to fetch on each side of every candidate for thread context (= default kernel length). */
export const NEIGHBOUR_WINDOW = DEFAULT_RERANK_OPTIONS.neighbourKernel.length;

/** A re-ranked item. */
export interface RankedItem {
  rid: number;
  /** Final score (higher is better). */
  score: number;
  /** Score from the item's own text, before thread context. */
  lexicalScore: number;
}

const FIELDS = ['title', 'content', 'summary', 'tags'] as const;

/** BM25 idf that stays positive for terms in over half the rows (unlike FTS5's). */
export function bm25Idf(documentFrequency: number, totalDocuments: number): number {
  const n = Math.max(0, documentFrequency);
  const total = Math.max(totalDocuments, n);
  return Math.log(1 + (total - n + 0.5) / (n + 0.5));
}

/**
 * Re-ranks FTS5 candidates (plus optional thread neighbours) for a query from `buildFtsQuery`:
 * BM25F over title/content/summary with proper k1/b and positive idf, an idf-weighted
 * coordination factor, a title/tag match bonus, then score propagation to items adjacent in the
 * same thread (`before`/`after` links). Returns every distinct input row, best first; ties keep
 * FTS5 order, then rid. Pure and deterministic.
 */
export function rerankCandidates(
  query: SearchQuery,
  candidates: readonly RerankCandidate[],
  stats: RerankStats,
  options: Partial<RerankOptions> = {},
): RankedItem[] {
  const o: RerankOptions = { ...DEFAULT_RERANK_OPTIONS, ...options };
  const rows: RerankCandidate[] = [];
  const seenRid = new Set<number>();
  for (const c of candidates) {
    if (seenRid.has(c.rid)) continue;
    seenRid.add(c.rid);
    rows.push(c);
  }
  const terms = query.queryTerms;
  const index = new Map<string, number>();
  terms.forEach((t, i) => {
    index.set(t.stem, i);
  });
  const idf = terms.map((t) =>
    bm25Idf(t.documentFrequency ?? stats.documentFrequency?.(t.stem) ?? 0, stats.totalDocuments),
  );
  const idfTotal = idf.reduce((a, x) => a + x, 0) || 1;
  const fieldTokens = rows.map((r) => FIELDS.map((f) => tokenize(r[f]).map(stem)));
  const avg = FIELDS.map((f, fi) => {
    const given = stats.averageFieldLength?.[f];
    if (given !== undefined && given > 0) return given;
    let sum = 0;
    for (const ft of fieldTokens) sum += ft[fi]?.length ?? 0;
    return rows.length ? sum / rows.length || 1 : 1;
  });
  const weights = FIELDS.map((f) => o.fieldWeights[f]);

  const lexical = rows.map((_, ri) => {
    const tokens = fieldTokens[ri] ?? [];
    const tf = new Float64Array(terms.length);
    for (let f = 0; f < FIELDS.length; f++) {
      const w = weights[f] ?? 0;
      const toks = tokens[f] ?? [];
      if (w === 0 || toks.length === 0) continue;
      const norm = 1 - o.b + (o.b * toks.length) / (avg[f] ?? 1);
      for (const s of toks) {
        const qi = index.get(s);
        if (qi !== undefined) tf[qi] = (tf[qi] ?? 0) + w / norm;
      }
    }
    let score = 0;
    let matched = 0;
    for (let i = 0; i < terms.length; i++) {
      const x = tf[i] ?? 0;
      if (x <= 0) continue;
      const w = idf[i] ?? 0;
      score += (w * x * (o.k1 + 1)) / (x + o.k1);
      matched += w;
    }
    if (o.coordination !== 0 && score > 0) score *= (matched / idfTotal) ** o.coordination;
    if (o.titleBoost !== 0 && score > 0) {
      const titleTags = [...(tokens[0] ?? []), ...(tokens[3] ?? [])];
      if (titleTags.some((s) => index.has(s))) score += o.titleBoost;
    }
    return score;
  });

  const scoreOf = new Map<number, number>();
  rows.forEach((r, i) => {
    scoreOf.set(r.rid, lexical[i] ?? 0);
  });
  const final = [...lexical];
  const kernel = o.neighbourKernel;
  if (kernel.length > 0) {
    const prev = new Map<number, number>();
    const next = new Map<number, number>();
    for (const r of rows) {
      let cur = r.rid;
      for (const b of r.before ?? []) {
        prev.set(cur, b);
        next.set(b, cur);
        cur = b;
      }
      cur = r.rid;
      for (const a of r.after ?? []) {
        next.set(cur, a);
        prev.set(a, cur);
        cur = a;
      }
    }
    rows.forEach((r, i) => {
      let p: number | undefined = r.rid;
      let n: number | undefined = r.rid;
      let add = 0;
      for (let k = 0; k < kernel.length; k++) {
        p = p === undefined ? undefined : prev.get(p);
        n = n === undefined ? undefined : next.get(n);
        const sp = p === undefined ? 0 : (scoreOf.get(p) ?? 0);
        const sn = n === undefined ? 0 : (scoreOf.get(n) ?? 0);
        add += (kernel[k] ?? 0) * Math.max(sp, sn);
      }
      final[i] = (final[i] ?? 0) + add;
    });
  }

  const order = rows.map((r, i) => ({
    rid: r.rid,
    score: final[i] ?? 0,
    lexicalScore: lexical[i] ?? 0,
    fts: r.ftsScore ?? Number.POSITIVE_INFINITY,
  }));
  order.sort((a, b) => b.score - a.score || a.fts - b.fts || a.rid - b.rid);
  return order.map(({ rid, score, lexicalScore }) => ({ rid, score, lexicalScore }));
}
