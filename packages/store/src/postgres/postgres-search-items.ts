import type { Viewer } from '@ctxbus/core';
import type { QueryResultRow } from 'pg';
import { searchHits } from '../search/search-hits.js';
import {
  buildSearchQuery,
  CANDIDATE_LIMIT,
  extractQueryTerms,
  THREAD_CONTEXT_CANDIDATES,
} from '../search/search-query.js';
import type { RerankCandidate } from '../search/search-rerank.js';
import { bm25Idf, NEIGHBOUR_WINDOW, rerankCandidates } from '../search/search-rerank.js';
import type { SearchHit, SearchOptions } from '../store.js';
import { toStoreError } from './postgres-errors.js';
import { anyOfQuery, TS_RANK_WEIGHTS } from './postgres-search.js';
import type { ItemRow } from './postgres-sql.js';
import { filterSql, ITEM_COLUMNS, rowToItem, SqlParams } from './postgres-sql.js';
import type { DocumentFrequencies, TermStatistics } from './postgres-term-stats.js';

type CandidateRow = ItemRow & { rank: number };

/** What a search needs from the store. */
export interface SearchContext {
  /** The quoted schema. */
  s: string;
  location: string;
  termStats: TermStatistics;
  query<R extends QueryResultRow>(action: string, text: string, values: unknown[]): Promise<R[]>;
}

/**
 * The SQLite store's two passes, over a tsvector index: the CANDIDATE_LIMIT best items by
 * idf-weighted ts_rank for an OR query of the question's stems (very common ones left out,
 * using the term statistics), each of the lexically best with its NEIGHBOUR_WINDOW neighbours
 * on either side in its thread, all re-ranked by rerankCandidates. Every row passes the same
 * filters.
 */
export async function searchPostgres(
  context: SearchContext,
  viewer: Viewer,
  options: SearchOptions,
  nowMs: number,
): Promise<SearchHit[]> {
  const { s } = context;
  const terms = extractQueryTerms(options.query).map((term) => term.stem);
  if (terms.length === 0) return [];
  let statistics: DocumentFrequencies;
  try {
    statistics = await context.termStats.read(viewer, terms);
  } catch (error) {
    throw toStoreError(error, 'search', context.location);
  }
  const { documentFrequency, totalDocuments } = statistics;
  const query = buildSearchQuery(options.query, { documentFrequency, totalDocuments });
  if (query === null) return [];

  const findCandidates = async (stems: string[]): Promise<CandidateRow[]> => {
    const usable = stems.filter((stem) => anyOfQuery([stem]) !== null);
    const tsquery = anyOfQuery(usable);
    if (tsquery === null) return [];
    const p = new SqlParams();
    const match = p.add(tsquery);
    // ts_rank weighs every query term alike, so "caroline" (in every turn she speaks) counted
    // as much as "adoption": 81.7% at 10 on LoCoMo. Ranked term by term, weighted by idf (as
    // BM25 does), the first pass gives the re-ranker the same candidates as SQLite's bm25:
    // 82.9% / 73.7%, equal to the SQLite store.
    const rank = usable
      .map((stem) => {
        const idf = bm25Idf(documentFrequency(stem), totalDocuments);
        return `${p.add(idf)}::float8 * ts_rank('${TS_RANK_WEIGHTS}', i.search, ${p.add(anyOfQuery([stem]))}::tsquery)`;
      })
      .join(' + ');
    const where = filterSql(viewer, options, nowMs, p);
    // Rank over rids only, then read the 50 rows: projecting every column of every match
    // before the sort cost a quarter of the query.
    return context.query<CandidateRow>(
      'search',
      `SELECT ${ITEM_COLUMNS}, c.rank FROM (
         SELECT i.rid, ${rank} AS rank FROM ${s}.items i
          WHERE i.search @@ ${match}::tsquery AND ${where}
          ORDER BY rank DESC, i.rid DESC LIMIT ${p.add(CANDIDATE_LIMIT)}
       ) c JOIN ${s}.items i ON i.rid = c.rid
       ORDER BY c.rank DESC, c.rid DESC`,
      p.values,
    );
  };
  const matchStems = query.queryTerms.filter((term) => term.inMatch).map((term) => term.stem);
  const allStems = query.queryTerms.map((term) => term.stem);
  let candidates = await findCandidates(matchStems);
  // Pruning common terms is for big corpora; when it leaves too few, use every term.
  if (candidates.length < CANDIDATE_LIMIT && matchStems.length < allStems.length) {
    candidates = await findCandidates(allStems);
  }
  if (candidates.length === 0) return [];

  const rows = new Map<number, ItemRow>(candidates.map((row) => [row.rid, row]));
  const toCandidate = (row: ItemRow, ftsScore: number | null): RerankCandidate => ({
    rid: row.rid,
    title: row.title,
    content: row.content,
    summary: row.summary,
    tags: JSON.stringify(row.tags),
    // ts_rank: higher is better; the re-ranker breaks ties by ascending score (bm25 style).
    ftsScore,
  });
  const inputs = candidates.map((row) => toCandidate(row, -row.rank));
  const stats = { totalDocuments };
  const lexical = rerankCandidates(query, inputs, stats, { neighbourKernel: [] });

  // Thread context for the lexically best candidates, in one query.
  const anchors = lexical
    .slice(0, THREAD_CONTEXT_CANDIDATES)
    .map(({ rid }) => rows.get(rid))
    .filter((row): row is CandidateRow => row !== undefined && row.source_thread !== null);
  if (anchors.length > 0) {
    const p = new SqlParams();
    const anchorRids = p.add(anchors.map((row) => row.rid));
    const anchorThreads = p.add(anchors.map((row) => row.source_thread));
    const where = filterSql(viewer, options, nowMs, p);
    const window = p.add(NEIGHBOUR_WINDOW);
    const neighbours = await context.query<ItemRow & { anchor: number }>(
      'search',
      `SELECT a.anchor, n.* FROM unnest(${anchorRids}::bigint[], ${anchorThreads}::text[]) AS a(anchor, thread)
       CROSS JOIN LATERAL (
         (SELECT ${ITEM_COLUMNS} FROM ${s}.items i
           WHERE ${where} AND i.source_thread = a.thread AND i.rid < a.anchor
           ORDER BY i.rid DESC LIMIT ${window})
         UNION ALL
         (SELECT ${ITEM_COLUMNS} FROM ${s}.items i
           WHERE ${where} AND i.source_thread = a.thread AND i.rid > a.anchor
           ORDER BY i.rid ASC LIMIT ${window})
       ) n`,
      p.values,
    );
    const byRid = new Map(inputs.map((input) => [input.rid, input]));
    const before = new Map<number, number[]>();
    const after = new Map<number, number[]>();
    for (const row of neighbours) {
      const side = row.rid < row.anchor ? before : after;
      const list = side.get(row.anchor) ?? [];
      list.push(row.rid);
      side.set(row.anchor, list);
      if (!rows.has(row.rid)) {
        rows.set(row.rid, row);
        inputs.push(toCandidate(row, null));
      }
    }
    for (const anchor of anchors) {
      const input = byRid.get(anchor.rid);
      if (!input) continue;
      // Nearest first on both sides.
      input.before = (before.get(anchor.rid) ?? []).sort((a, b) => b - a);
      input.after = (after.get(anchor.rid) ?? []).sort((a, b) => a - b);
    }
  }

  return searchHits(query, inputs, stats, rows, options.limit, rowToItem);
}
