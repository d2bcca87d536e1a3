// Store-level speed of the PostgreSQL store beside the SQLite store's (run by hand, never in
// the test suite):
//
//   node test/bench/src/measure-scale.ts [--only postgres|sqlite] [--quick]
//
// Write throughput with 1 and 16 concurrent writers (single-item writes, as hub clients send
// them) and with batches of 500; then list (the shared bundle's section queries) and search
// latency at 10k and 100k items. Items are prepared before the clock starts: this measures
// the store, not validation and token counting. Texts are LoCoMo turns when the data is
// there (CTXBUS_LOCOMO), generated sentences otherwise.
import type { NewContextItem } from '@ctxbus/core';
import { prepareItem, sharedCandidateQueries } from '@ctxbus/core';
import type { Store } from '@ctxbus/store';
import { corpusQueries, corpusTexts } from './corpus.ts';
import { onPostgres, onSqlite, report } from './measure-support.ts';
import { percentile } from './stats.ts';

const quick = process.argv.includes('--quick');
const only = process.argv.includes('--only')
  ? process.argv[process.argv.indexOf('--only') + 1]
  : null;
const writer = { teamId: 'bench', runtime: 'claude-code' };

/** The benchmark's mix of item kinds (test/bench/src/run-bench.ts), so listings have work. */
function mixedItem(index: number, texts: readonly string[]): NewContextItem {
  const text = texts[index % texts.length] ?? 'text';
  const title = text.split(/\s+/).slice(0, 8).join(' ') || `item ${index}`;
  const kind = index % 100;
  let input: Record<string, unknown>;
  if (kind < 8) input = { type: 'decision', title, content: text, relevanceTags: ['arch'] };
  else if (kind < 14)
    input = {
      type: 'status',
      title,
      content: text,
      scopeKey: `task:T-${index % 700}`,
      ...(kind === 13 && { relevanceTags: ['done'] }),
    };
  else if (kind < 18)
    input = { type: 'discovery', title, content: text, scopeKey: `thread:chat-${index % 50}` };
  else if (kind < 20)
    input = {
      type: 'alert',
      title,
      content: text,
      urgency: kind === 18 ? 'blocking' : 'attention',
    };
  else if (kind < 21) input = { type: 'request', title, content: text };
  else if (kind < 24)
    input = {
      type: 'discovery',
      title,
      content: text,
      key: `project/p${index % 40}/note-${index % 7}`,
    };
  else
    input = {
      type: kind % 2 ? 'discovery' : 'status',
      title,
      content: text,
      relevanceTags: [`t${kind % 9}`],
    };
  return prepareItem(input, writer, { now: new Date() });
}

const rate = (count: number, ms: number) => `${Math.round((count * 1000) / ms)} items/s`;
const fmt = (ms: number) => `${ms.toFixed(2)} ms`;

async function measureWrites(name: string, store: Store, texts: readonly string[]) {
  let next = 0;
  const prepare = (count: number) => Array.from({ length: count }, () => mixedItem(next++, texts));
  for (const writers of [1, 16]) {
    const perWriter = quick ? 100 : writers === 1 ? 1000 : 500;
    const items = prepare(writers * perWriter);
    const latencies: number[] = [];
    const started = performance.now();
    await Promise.all(
      Array.from({ length: writers }, async (_, w) => {
        for (let n = 0; n < perWriter; n++) {
          const item = items[w * perWriter + n];
          if (!item) continue;
          const at = performance.now();
          await store.writeItems([item]);
          latencies.push(performance.now() - at);
        }
      }),
    );
    const elapsed = performance.now() - started;
    report(
      `${name}: ${writers} writer(s), single items: ${rate(items.length, elapsed)}; ` +
        `latency p50 ${fmt(percentile(latencies, 50))}, p99 ${fmt(percentile(latencies, 99))}`,
    );
  }
  const batches = quick ? 4 : 20;
  const batchItems = Array.from({ length: batches }, () => prepare(500));
  const started = performance.now();
  for (const batch of batchItems) await store.writeItems(batch);
  report(`${name}: batches of 500: ${rate(batches * 500, performance.now() - started)}`);
  return next;
}

async function measureReads(
  name: string,
  store: Store,
  texts: readonly string[],
  queries: readonly string[],
  written: number,
) {
  let count = written;
  for (const size of quick ? [5_000] : [10_000, 100_000]) {
    while (count < size) {
      const batch = Array.from({ length: Math.min(500, size - count) }, () =>
        mixedItem(count++, texts),
      );
      await store.writeItems(batch);
    }
    const repeats = quick ? 30 : 200;
    const shared: number[] = [];
    const sections = Object.values(sharedCandidateQueries()).flat();
    for (let index = 0; index < repeats; index++) {
      const at = performance.now();
      await Promise.all(sections.map((query) => store.listItems(writer, query)));
      shared.push(performance.now() - at);
    }
    const search: number[] = [];
    for (let index = 0; index < repeats; index++) {
      const query = queries[(index * 7) % queries.length] ?? 'status';
      const at = performance.now();
      await store.searchItems(writer, { query, limit: 10 });
      search.push(performance.now() - at);
    }
    const label = `${Math.round(count / 1000)}k`;
    report(
      `${name} @ ${label} items: shared-bundle queries p50 ${fmt(percentile(shared, 50))}, p99 ${fmt(percentile(shared, 99))}; ` +
        `search p50 ${fmt(percentile(search, 50))}, p99 ${fmt(percentile(search, 99))}`,
    );
  }
}

const texts = corpusTexts();
const queries = corpusQueries();

const measureStore = (name: string) => async (store: Store) => {
  const written = await measureWrites(name, store, texts);
  await measureReads(name, store, texts, queries, written);
};
if (only !== 'sqlite') await onPostgres('scale', measureStore('postgres'));
if (only !== 'postgres') await onSqlite(measureStore('sqlite'));
