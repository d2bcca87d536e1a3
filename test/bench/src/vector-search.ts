// Vector search at the store, over N items with random vectors: in memory (the default), and
// in the database: pgvector's operator when the server has it, an exact scan in SQL otherwise.
// Run through ./dev bench --only vectors.
import type { Viewer } from '@ctxbus/core';
import { prepareItem } from '@ctxbus/core';
import type { Store } from '@ctxbus/store';
import { openSqliteStore } from '@ctxbus/store';
import { openPostgresStore } from '@ctxbus/store/postgres';
import { probePostgres, randomVectors, ScratchSchemas } from '@ctxbus/store/testing';
import { removeDir, tempDir } from '@ctxbus/test-kit';
import type { Row } from './stats.ts';
import { ms, percentile } from './stats.ts';

const viewer: Viewer = { teamId: 'bench', runtime: 'claude-code' };

async function fill(store: Store, items: number, dims: number): Promise<void> {
  const vectors = randomVectors(items, dims, 11);
  for (let start = 0; start < items; start += 500) {
    const outcomes = await store.writeItems(
      Array.from({ length: Math.min(500, items - start) }, (_, index) =>
        prepareItem(
          { type: 'discovery', title: `item ${start + index}`, content: 'vector bench' },
          viewer,
          { now: new Date() },
        ),
      ),
    );
    await store.saveVectors(
      'bench',
      outcomes.map((outcome, index) => ({
        seq: outcome.item.seq,
        vector: vectors[start + index] as Float32Array,
      })),
    );
  }
}

async function measure(store: Store, dims: number, queries: number): Promise<number[]> {
  const latencies: number[] = [];
  for (const vector of randomVectors(queries, dims, 29)) {
    const started = performance.now();
    const hits = await store.vectorSearch(viewer, { model: 'bench', vector, limit: 50 });
    latencies.push(performance.now() - started);
    if (hits.length !== 50) throw new Error(`expected 50 hits, got ${hits.length}`);
  }
  return latencies;
}

/** Rows for the benchmark table. */
export async function benchVectorSearch(
  quick: boolean,
  log: (line: string) => void,
): Promise<Row[]> {
  const rows: Row[] = [];
  const items = quick ? 1_000 : 10_000;
  const queries = quick ? 10 : 30;
  // The scans in SQL are slow at 1536 dimensions: fewer queries there.
  const sqlQueries = quick ? 3 : 5;
  const dimsList = quick ? [256] : [256, 1536];
  const label = (dims: number, how: string) =>
    `${items.toLocaleString('en-US')} items x ${dims} dims, ${how}`;
  const push = (metric: string, value: string) => rows.push({ section: 'vectors', metric, value });
  const record = (dims: number, how: string, latencies: number[]) => {
    push(`vector search p50 (${label(dims, how)})`, ms(percentile(latencies, 50)));
    push(`vector search p99 (${label(dims, how)})`, ms(percentile(latencies, 99)));
  };
  /** In memory: the first search loads the vectors (reported apart), then the rest. */
  const inMemory = async (store: Store, dims: number, how: string) => {
    const [first] = await measure(store, dims, 1);
    push(`vector search, first (loads the vectors) (${label(dims, how)})`, ms(first ?? Number.NaN));
    record(dims, how, await measure(store, dims, queries));
  };
  for (const dims of dimsList) {
    const dir = tempDir();
    const memory = openSqliteStore({ path: `${dir}/bench.db` });
    const scan = openSqliteStore({ path: `${dir}/bench.db`, vectorMemoryMb: 0 });
    try {
      log(`vectors: SQLite, ${items} items x ${dims} dims`);
      await fill(memory, items, dims);
      await inMemory(memory, dims, 'SQLite, in memory');
      record(dims, 'SQLite, scan in SQL', await measure(scan, dims, sqlQueries));
    } finally {
      await memory.close();
      await scan.close();
      removeDir(dir);
    }
  }
  const server = await probePostgres();
  if (server.url === null) {
    log(`vectors: PostgreSQL skipped (${server.reason})`);
    return rows;
  }
  const schemas = new ScratchSchemas(server.url);
  try {
    for (const dims of dimsList) {
      const schema = schemas.next('vec');
      const open = (options: { vectors?: 'exact'; vectorMemoryMb?: number }) =>
        openPostgresStore({ connectionString: server.url as string, schema, ...options });
      const memory = await open({});
      const pgvector = await open({ vectorMemoryMb: 0 });
      const scan = await open({ vectors: 'exact', vectorMemoryMb: 0 });
      try {
        log(`vectors: PostgreSQL, ${items} items x ${dims} dims`);
        await fill(memory, items, dims);
        // Planner statistics after the bulk load, as the store's own maintenance would do.
        await measure(scan, dims, 1);
        await inMemory(memory, dims, 'PostgreSQL, in memory');
        if (pgvector.info.vectorIndex === 'pgvector') {
          record(dims, 'PostgreSQL, pgvector in SQL', await measure(pgvector, dims, queries));
        } else if (dims === dimsList[0]) {
          log('vectors: pgvector not installed on this server: not measured');
        }
        record(dims, 'PostgreSQL, scan in SQL', await measure(scan, dims, sqlQueries));
      } finally {
        await Promise.all([memory.close(), pgvector.close(), scan.close()]);
      }
    }
  } finally {
    await schemas.dropAll();
  }
  return rows;
}
