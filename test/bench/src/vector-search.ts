// Vector search at the store: the exact scan (SQLite function, PostgreSQL SQL function) and
// pgvector's operator when the server has it, over N items with random unit vectors.
// Run through ./dev bench --only vectors.
import type { Viewer } from '@ctxbus/core';
import { prepareItem } from '@ctxbus/core';
import type { Store } from '@ctxbus/store';
import { openPostgresStore, openSqliteStore } from '@ctxbus/store';
import { probePostgres, ScratchSchemas } from '@ctxbus/store/testing';
import { removeDir, tempDir } from '@ctxbus/test-kit';
import type { Row } from './run-bench.ts';
import { ms, percentile } from './stats.ts';

const viewer: Viewer = { teamId: 'bench', runtime: 'claude-code' };

function randomVectors(count: number, dims: number, seed: number): Float32Array[] {
  let state = seed;
  const next = () => {
    state = (state * 48271) % 2147483647;
    return state / 2147483647 - 0.5;
  };
  return Array.from({ length: count }, () => Float32Array.from({ length: dims }, next));
}

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
  const dimsList = quick ? [256] : [256, 1536];
  const record = (backend: string, dims: number, latencies: number[]) => {
    const at = `${items.toLocaleString('en-US')} items x ${dims} dims, ${backend}`;
    rows.push({
      section: 'vectors',
      metric: `vector search p50 (${at})`,
      value: ms(percentile(latencies, 50)),
    });
    rows.push({
      section: 'vectors',
      metric: `vector search p99 (${at})`,
      value: ms(percentile(latencies, 99)),
    });
  };
  for (const dims of dimsList) {
    const dir = tempDir();
    const sqlite = openSqliteStore({ path: `${dir}/bench.db` });
    try {
      log(`vectors: SQLite, ${items} items x ${dims} dims`);
      await fill(sqlite, items, dims);
      record('SQLite exact', dims, await measure(sqlite, dims, queries));
    } finally {
      await sqlite.close();
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
      const pgvector = await openPostgresStore({ connectionString: server.url, schema });
      const exact = await openPostgresStore({
        connectionString: server.url,
        schema,
        vectors: 'exact',
      });
      try {
        log(`vectors: PostgreSQL, ${items} items x ${dims} dims`);
        await fill(exact, items, dims);
        // Planner statistics after the bulk load, as the store's own maintenance would do.
        await measure(exact, dims, 2);
        record('PostgreSQL exact scan', dims, await measure(exact, dims, queries));
        if (pgvector.info.vectorIndex === 'pgvector') {
          record('PostgreSQL pgvector', dims, await measure(pgvector, dims, queries));
        } else if (dims === dimsList[0]) {
          log('vectors: pgvector not installed on this server; only the exact scan measured');
        }
      } finally {
        await pgvector.close();
        await exact.close();
      }
    }
  } finally {
    await schemas.dropAll();
  }
  return rows;
}
