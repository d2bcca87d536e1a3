import type { Viewer } from '@ctxbus/core';
import type {
  EmbeddingSource,
  ItemVector,
  VectorHit,
  VectorSearchOptions,
  VectorStore,
} from '../store.js';
import {
  bytesToVector,
  dotProduct,
  normalizeVector,
  vectorToBytes,
} from '../vectors/vector-math.js';
import { VectorMemory } from '../vectors/vector-memory.js';
import type { SqliteConnection } from './sqlite-connection.js';
import type { ItemRow } from './sqlite-rows.js';
import { rowToItem } from './sqlite-rows.js';
import { filterSql } from './sqlite-sql.js';

// Vectors in the embedded store: item_vectors holds each model's vectors at unit length, as
// bytes. Searches compare exactly: in memory (VectorMemory) while the vectors fit, else in
// the SQL scan, with the same filters as every read.

export class SqliteVectors implements VectorStore {
  /** The query vector `ctxbus_query_cosine` compares with, set around each vector search. */
  private queryVector: Float32Array | null = null;
  private readonly memory: VectorMemory | null;

  constructor(
    private readonly connection: SqliteConnection,
    vectorMemoryMb: number,
  ) {
    this.memory = vectorMemoryMb > 0 ? this.createMemory(vectorMemoryMb * 1024 * 1024) : null;
    // Exact cosine in the scan itself (when the vectors are not held in memory), so vector
    // search reuses the SQL filters of every read.
    connection.db.function('ctxbus_query_cosine', { deterministic: false }, (stored) => {
      const query = this.queryVector;
      if (!query || !(stored instanceof Uint8Array) || stored.byteLength !== query.byteLength)
        return null;
      return dotProduct(bytesToVector(stored), query);
    });
  }

  async itemsToEmbed(
    model: string,
    options: { afterSeq: number; limit: number },
  ): Promise<EmbeddingSource[]> {
    this.connection.assertOpen();
    const rows = this.connection
      .statement(
        `SELECT i.* FROM items i
          WHERE i.rid > ? AND i.visibility = 'team' AND (i.expires_at IS NULL OR i.expires_at > ?)
            AND NOT EXISTS (SELECT 1 FROM item_vectors v WHERE v.model = ? AND v.rid = i.rid)
          ORDER BY i.rid LIMIT ?`,
      )
      .all(
        options.afterSeq,
        this.connection.clock().getTime(),
        model,
        options.limit,
      ) as unknown as ItemRow[];
    return rows.map((row) => ({
      seq: row.rid,
      id: row.id,
      title: row.title,
      summary: row.summary,
      content: row.content,
      tags: JSON.parse(row.tags) as string[],
    }));
  }

  async saveVectors(model: string, vectors: readonly ItemVector[]): Promise<void> {
    this.connection.assertOpen();
    const insert = this.connection.statement(
      `INSERT INTO item_vectors (model, rid, vector)
       SELECT ?, rid, ? FROM items WHERE rid = ?
       ON CONFLICT (model, rid) DO NOTHING`,
    );
    this.connection.transaction(() => {
      for (const { seq, vector } of vectors) {
        const unit = vector.length === 0 ? new Float32Array(0) : normalizeVector(vector);
        if (unit === null) continue;
        insert.run(model, vectorToBytes(unit), seq);
      }
    });
  }

  async vectorSearch(viewer: Viewer, options: VectorSearchOptions): Promise<VectorHit[]> {
    this.connection.assertOpen();
    const query = normalizeVector(options.vector);
    if (query === null) return [];
    if (this.memory) {
      const hits = await this.memory.search(viewer, options, query);
      if (hits) return hits;
    }
    const { where, params } = filterSql(viewer, options, this.connection.clock().getTime());
    const search = this.connection.statement(
      // Only (rid, score) go through the sort; the rows of the winners are read after it.
      `SELECT i.*, best.score FROM (
         SELECT v.rid, ctxbus_query_cosine(v.vector) AS score
           FROM item_vectors v JOIN items i ON i.rid = v.rid
          WHERE v.model = ? AND length(v.vector) = ? AND ${where}
          ORDER BY score DESC, v.rid DESC LIMIT ?) best
       JOIN items i ON i.rid = best.rid
       ORDER BY best.score DESC, best.rid DESC`,
    );
    this.queryVector = query;
    try {
      const rows = search.all(
        options.model,
        query.byteLength,
        ...params,
        options.limit,
      ) as unknown as (ItemRow & { score: number })[];
      return rows.map((row) => ({ item: rowToItem(row), score: row.score }));
    } finally {
      this.queryVector = null;
    }
  }

  /** The in-memory exact scan over this database's vectors (see VectorMemory). */
  private createMemory(maxBytes: number): VectorMemory {
    const statement = (sql: string) => this.connection.statement(sql);
    return new VectorMemory(
      {
        loadSince: async (model, afterVid, limit) => {
          const rows = statement(
            `SELECT v.vid, v.rid, i.team_id, v.vector
               FROM item_vectors v JOIN items i ON i.rid = v.rid
              WHERE v.model = ? AND v.vid > ? AND length(v.vector) > 0
              ORDER BY v.vid LIMIT ?`,
          ).all(model, afterVid, limit) as {
            vid: number;
            rid: number;
            team_id: string;
            vector: Uint8Array;
          }[];
          return rows.map((row) => ({
            vid: row.vid,
            rid: row.rid,
            teamId: row.team_id,
            // A copy: the row's bytes may be a view of a reused buffer.
            vector: bytesToVector(row.vector.slice()),
          }));
        },
        visible: async (viewer, options, rids) => {
          const { where, params } = filterSql(viewer, options, this.connection.clock().getTime());
          const rows = statement(
            `SELECT i.* FROM items i WHERE i.rid IN (${rids.map(() => '?').join(', ')}) AND ${where}`,
          ).all(...rids, ...params) as unknown as ItemRow[];
          return rows.map((row) => ({ rid: row.rid, item: rowToItem(row) }));
        },
        stored: async (model, rids) =>
          (
            statement(
              `SELECT rid FROM item_vectors WHERE model = ? AND rid IN (${rids.map(() => '?').join(', ')})`,
            ).all(model, ...rids) as { rid: number }[]
          ).map((row) => row.rid),
      },
      maxBytes,
    );
  }
}
