import type { ContextItem } from '@ctxbus/core';
import type { SearchHit } from '../store.js';
import type { SearchQuery } from './search-query.js';
import type { RerankCandidate, RerankStats } from './search-rerank.js';
import { rerankCandidates } from './search-rerank.js';
import { highlightPassage } from './search-text.js';

/**
 * The last step of every backend's search: re-rank the candidates (with their thread
 * neighbours), keep the `limit` best that scored, and give each its best passage.
 */
export function searchHits<Row extends { title: string; content: string }>(
  query: SearchQuery,
  inputs: readonly RerankCandidate[],
  stats: RerankStats,
  rows: ReadonlyMap<number, Row>,
  limit: number,
  toItem: (row: Row) => ContextItem,
): SearchHit[] {
  const stems = new Set(query.queryTerms.map((term) => term.stem));
  return rerankCandidates(query, inputs, stats)
    .filter((ranked) => ranked.score > 0)
    .slice(0, limit)
    .flatMap((ranked) => {
      const row = rows.get(ranked.rid);
      if (!row) return [];
      const highlight = highlightPassage(row.content || row.title, stems);
      return [{ item: toItem(row), score: ranked.score, highlight }];
    });
}
