import type { Viewer } from '@ctxbus/core';
import type {
  EmbeddingSource,
  ItemVector,
  VectorHit,
  VectorIndex,
  VectorSearchOptions,
  VectorStore,
} from '../store.js';
import { normalizeVector } from '../vectors/vector-math.js';
import type { VectorSource } from '../vectors/vector-memory.js';
import { VectorMemory } from '../vectors/vector-memory.js';
import type { PostgresContext, PostgresLogger, PostgresQuery } from './postgres-connection.js';
import type { ItemRow } from './postgres-sql.js';
import { filterSql, ITEM_COLUMNS, rowToItem, SqlParams } from './postgres-sql.js';

// Vectors in PostgreSQL: item_vectors (migration 3) holds real[] at unit length. With the
// pgvector extension installed in the database, searches cast to its type and rank with its
// inner-product operator (exact, in C); without it, with the schema's ctxbus_dot SQL function.

/** How vectors are compared, and the schema of pgvector's type and operators when used. */
export interface VectorComparison {
  index: VectorIndex;
  /** Quoted schema of the installed `vector` extension (pgvector only). */
  extensionSchema?: string;
}

const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** pgvector when the database has the extension installed (and `prefer` allows), else exact. */
export async function detectVectorComparison(
  query: PostgresQuery,
  prefer: 'auto' | 'exact',
): Promise<VectorComparison> {
  if (prefer === 'exact') return { index: 'exact' };
  const rows = await query<{ schema: string }>(
    'detect pgvector',
    `SELECT n.nspname AS schema FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
      WHERE e.extname = 'vector'`,
  );
  const schema = rows[0]?.schema;
  return schema === undefined
    ? { index: 'exact' }
    : { index: 'pgvector', extensionSchema: quoteIdent(schema) };
}

/** The float4 array literal for a vector (finite numbers only: see normalizeVector). */
function arrayLiteral(vector: Float32Array): string {
  return `{${Array.from(vector).join(',')}}`;
}

export async function itemsToEmbedPostgres(
  query: PostgresQuery,
  s: string,
  model: string,
  options: { afterSeq: number; limit: number },
  nowMs: number,
): Promise<EmbeddingSource[]> {
  const rows = await query<ItemRow>(
    'list items to embed',
    `SELECT ${ITEM_COLUMNS} FROM ${s}.items i
      WHERE i.rid > $1 AND i.visibility = 'team'
        AND (i.expires_at IS NULL OR i.expires_at > $2::timestamptz)
        AND NOT EXISTS (SELECT 1 FROM ${s}.item_vectors v WHERE v.model = $3 AND v.rid = i.rid)
      ORDER BY i.rid LIMIT $4`,
    [options.afterSeq, new Date(nowMs).toISOString(), model, options.limit],
  );
  return rows.map((row) => {
    const item = rowToItem(row);
    return {
      seq: item.seq,
      id: item.id,
      title: item.title,
      summary: item.summary,
      content: item.content,
      tags: item.relevanceTags,
    };
  });
}

export async function saveVectorsPostgres(
  query: PostgresQuery,
  s: string,
  model: string,
  vectors: readonly ItemVector[],
): Promise<void> {
  const seqs: number[] = [];
  const literals: string[] = [];
  for (const { seq, vector } of vectors) {
    const unit = vector.length === 0 ? new Float32Array(0) : normalizeVector(vector);
    if (unit === null) continue;
    seqs.push(seq);
    literals.push(arrayLiteral(unit));
  }
  if (seqs.length === 0) return;
  // One statement for the batch; items deleted meanwhile drop out of the join. A vector is
  // saved once: the first hub to embed an item wins (see VectorMemory).
  await query(
    'save vectors',
    `INSERT INTO ${s}.item_vectors (model, rid, dims, vector)
     SELECT $1, v.rid, cardinality(v.vector::real[]), v.vector::real[]
       FROM unnest($2::bigint[], $3::text[]) AS v(rid, vector)
       JOIN ${s}.items i ON i.rid = v.rid
     ON CONFLICT (model, rid) DO NOTHING`,
    [model, seqs, literals],
  );
}

export async function vectorSearchPostgres(
  query: PostgresQuery,
  s: string,
  comparison: VectorComparison,
  memory: VectorMemory | null,
  viewer: Viewer,
  options: VectorSearchOptions,
  nowMs: number,
): Promise<VectorHit[]> {
  const unit = normalizeVector(options.vector);
  if (unit === null) return [];
  // The in-memory scan first (the fastest); the database when it cannot answer.
  if (memory) {
    const hits = await memory.search(viewer, options, unit);
    if (hits) return hits;
  }
  const p = new SqlParams();
  const model = p.add(options.model);
  const dims = p.add(unit.length);
  const literal = p.add(arrayLiteral(unit));
  let score: string;
  if (comparison.index === 'pgvector' && comparison.extensionSchema) {
    const x = comparison.extensionSchema;
    // <#> is the negative inner product; the cosine of unit vectors.
    score = `-(v.vector::${x}.vector OPERATOR(${x}.<#>) ${literal}::real[]::${x}.vector)`;
  } else {
    score = `${s}.ctxbus_dot(v.vector, ${literal}::real[])`;
  }
  const where = filterSql(viewer, options, nowMs, p);
  // Only (rid, score) go through the sort; the winners' columns are built after it.
  const rows = await query<ItemRow & { score: number }>(
    'search vectors',
    `SELECT ${ITEM_COLUMNS}, best.score
       FROM (SELECT v.rid, ${score} AS score
               FROM ${s}.item_vectors v JOIN ${s}.items i ON i.rid = v.rid
              WHERE v.model = ${model} AND v.dims = ${dims} AND ${where}
              ORDER BY score DESC, v.rid DESC LIMIT ${p.add(options.limit)}) best
       JOIN ${s}.items i ON i.rid = best.rid
      ORDER BY best.score DESC, best.rid DESC`,
    p.values,
  );
  return rows.map((row) => ({ item: rowToItem(row), score: Number(row.score) }));
}

/** The in-memory exact scan over this schema's vectors (see VectorMemory). */
export function postgresVectorMemory(
  query: PostgresQuery,
  s: string,
  clock: () => Date,
  maxBytes: number,
  onOverBudget: (model: string, bytes: number) => void,
): VectorMemory {
  const source: VectorSource = {
    async loadSince(model, afterVid, limit) {
      const rows = await query<{ vid: number; rid: number; team_id: string; vector: Float32Array }>(
        'load vectors',
        `SELECT v.vid, v.rid, i.team_id, v.vector
           FROM ${s}.item_vectors v JOIN ${s}.items i ON i.rid = v.rid
          WHERE v.model = $1 AND v.vid > $2 AND v.dims > 0
          ORDER BY v.vid LIMIT ${Math.trunc(limit)}`,
        [model, afterVid],
      );
      return rows.map((row) => ({
        vid: row.vid,
        rid: row.rid,
        teamId: row.team_id,
        vector: row.vector,
      }));
    },
    async visible(viewer, options, rids) {
      const p = new SqlParams();
      const list = p.add(rids);
      const where = filterSql(viewer, options, clock().getTime(), p);
      const rows = await query<ItemRow>(
        'search vectors',
        `SELECT ${ITEM_COLUMNS} FROM ${s}.items i WHERE i.rid = ANY(${list}::bigint[]) AND ${where}`,
        p.values,
      );
      return rows.map((row) => ({ rid: row.rid, item: rowToItem(row) }));
    },
    async stored(model, rids) {
      const rows = await query<{ rid: number }>(
        'search vectors',
        `SELECT rid FROM ${s}.item_vectors WHERE model = $1 AND rid = ANY($2::bigint[])`,
        [model, rids],
      );
      return rows.map((row) => row.rid);
    },
  };
  return new VectorMemory(source, maxBytes, onOverBudget);
}

/** Vector storage and search over one schema: in memory while the vectors fit, else in SQL. */
export class PostgresVectors implements VectorStore {
  private readonly memory: VectorMemory | null;

  constructor(
    private readonly context: PostgresContext,
    private readonly comparison: VectorComparison,
    memoryMb: number,
    logger: PostgresLogger,
  ) {
    this.memory =
      memoryMb > 0
        ? postgresVectorMemory(
            context.query,
            context.s,
            context.clock,
            memoryMb * 1024 * 1024,
            (model, bytes) =>
              logger.warn(
                { model, loadedMb: Math.round(bytes / 1048576), budgetMb: memoryMb },
                comparison.index === 'pgvector'
                  ? 'postgres: the vectors of this model exceed the memory budget: pgvector compares them in the database'
                  : 'postgres: the vectors of this model exceed the memory budget: vector search scans them in SQL (slow); install pgvector, or raise the budget (ctxbus serve --vector-memory-mb)',
              ),
          )
        : null;
  }

  itemsToEmbed(
    model: string,
    options: { afterSeq: number; limit: number },
  ): Promise<EmbeddingSource[]> {
    this.context.assertOpen();
    const { query, s, clock } = this.context;
    return itemsToEmbedPostgres(query, s, model, options, clock().getTime());
  }

  async saveVectors(model: string, vectors: readonly ItemVector[]): Promise<void> {
    this.context.assertOpen();
    await saveVectorsPostgres(this.context.query, this.context.s, model, vectors);
  }

  vectorSearch(viewer: Viewer, options: VectorSearchOptions): Promise<VectorHit[]> {
    this.context.assertOpen();
    const { query, s, clock } = this.context;
    return vectorSearchPostgres(
      query,
      s,
      this.comparison,
      this.memory,
      viewer,
      options,
      clock().getTime(),
    );
  }
}
