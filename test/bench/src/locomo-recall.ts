// Search quality on the LoCoMo development split, through a real hub's search API: each
// conversation turn is one item (in a team of its own), each question one query; a question
// is answered when an evidence turn is among the top k results.
import type { EmbeddingsServer } from '@ctxbus/test-kit';
import {
  call,
  removeDir,
  runtimeToken,
  startEmbeddingsServer,
  startHubProcess,
  tempDir,
  waitUntil,
} from '@ctxbus/test-kit';
import { loadLocomo, normaliseEvidence } from './corpus.ts';
import type { Row } from './stats.ts';
import { ms, percentile } from './stats.ts';

const CATEGORIES: Record<number, string> = {
  1: 'multi-hop',
  2: 'temporal',
  3: 'open-domain',
  4: 'single-hop',
  5: 'adversarial',
};

export interface LocomoResult {
  questions: number;
  at5: number;
  at10: number;
  byCategory: Map<number, { questions: number; at10: number }>;
  byConversation: Map<string, { questions: number; at10: number }>;
  latencies: number[];
  /** Searches the hub answered with mode `hybrid` (with an embeddings provider). */
  hybrid: number;
}

/** Turns one LoCoMo turn into the item a runtime would write for it. */
export function turnItem(
  turn: { speaker: string; text: string; blip_caption?: string },
  thread: string,
) {
  return {
    type: 'discovery',
    title: turn.speaker,
    content: turn.blip_caption ? `${turn.text} [image: ${turn.blip_caption}]` : turn.text,
    relevanceTags: [turn.speaker.toLowerCase().replace(/[\s,]+/g, '-')],
    scopeKey: `thread:${thread}`,
    source: { threadId: thread },
  };
}

/**
 * Recall through a real hub. With `embeddings`, the hub gets the test kit's embeddings
 * stand-in (words hashed into 256 dimensions: a weak model) and each conversation's questions
 * wait until its turns have vectors, so the searches are hybrid.
 */
export async function measureLocomo(options: { embeddings?: boolean } = {}): Promise<LocomoResult> {
  const conversations = loadLocomo();
  const dataDir = tempDir('ctxbus-locomo-');
  let embedder: EmbeddingsServer | null = null;
  if (options.embeddings) embedder = await startEmbeddingsServer({ dimensions: 256 });
  const hub = await startHubProcess({
    dataDir,
    args: [
      '--log-level',
      'error',
      ...(embedder ? ['--embeddings-url', embedder.url, '--embeddings-model', 'hashed-256'] : []),
    ],
    env: { CTXBUS_VALIDATE_RESPONSES: '0' },
  });
  const result: LocomoResult = {
    questions: 0,
    at5: 0,
    at10: 0,
    byCategory: new Map(),
    byConversation: new Map(),
    latencies: [],
    hybrid: 0,
  };
  let written = 0;
  try {
    for (const [index, conversation] of conversations.entries()) {
      const token = await runtimeToken(hub, `locomo-${index}`, 'claude-code');
      const diaById = new Map<string, string>();
      for (const session of conversation.sessions) {
        const thread = `${conversation.sampleId}-s${session.index}`;
        for (let start = 0; start < session.turns.length; start += 500) {
          const turns = session.turns.slice(start, start + 500);
          const response = await call(hub.url, 'POST', '/api/context', {
            token,
            body: { items: turns.map((turn) => turnItem(turn, thread)) },
          });
          if (response.status !== 201)
            throw new Error(`locomo write failed: ${JSON.stringify(response.body)}`);
          response.body.items.forEach((item: { id: string }, offset: number) => {
            diaById.set(item.id, turns[offset]?.dia_id ?? '');
          });
          written += turns.length;
        }
      }
      if (embedder) {
        await waitUntil(
          async () => {
            const health = await call(hub.url, 'GET', '/health');
            return (health.body.embeddings?.embedded ?? 0) >= written;
          },
          'the turns to have vectors',
          { timeoutMs: 120_000, intervalMs: 50 },
        );
      }
      const perConversation = { questions: 0, at10: 0 };
      for (const question of conversation.questions) {
        const evidence = new Set(normaliseEvidence(question.evidence));
        if (evidence.size === 0) continue;
        const started = performance.now();
        const response = await call(hub.url, 'POST', '/api/context/search', {
          token,
          body: { query: question.question, limit: 10 },
        });
        result.latencies.push(performance.now() - started);
        if (response.body.mode === 'hybrid') result.hybrid += 1;
        const ranked = (response.body.results as { item: { id: string } }[]).map((hit) =>
          (diaById.get(hit.item.id) ?? '').replace(/D:?(\d+):0*(\d+)/, 'D$1:$2'),
        );
        const hitAt = (k: number) => ranked.slice(0, k).some((dia) => evidence.has(dia));
        const category = result.byCategory.get(question.category) ?? { questions: 0, at10: 0 };
        result.questions += 1;
        category.questions += 1;
        perConversation.questions += 1;
        if (hitAt(5)) result.at5 += 1;
        if (hitAt(10)) {
          result.at10 += 1;
          category.at10 += 1;
          perConversation.at10 += 1;
        }
        result.byCategory.set(question.category, category);
      }
      result.byConversation.set(conversation.sampleId, perConversation);
    }
  } finally {
    await hub.stop();
    await embedder?.close();
    removeDir(dataDir);
  }
  return result;
}

/**
 * Full-text against hybrid recall@10 on the same data, the hybrid one with a weak embedding
 * model (the test kit's stand-in): fusion must never rank below full text alone.
 */
export async function runHybridLocomo(): Promise<Row[]> {
  const fulltext = await measureLocomo();
  const hybrid = await measureLocomo({ embeddings: true });
  const at10 = (r: LocomoResult) => r.at10 / Math.max(r.questions, 1);
  return [
    {
      section: 'hybrid',
      metric: `full text, evidence in top 10 (${fulltext.questions} questions)`,
      value: pct(fulltext.at10, fulltext.questions),
    },
    {
      section: 'hybrid',
      metric: `hybrid (hashed-256 stand-in model), evidence in top 10 (${hybrid.hybrid} of ${hybrid.questions} searches hybrid)`,
      value: pct(hybrid.at10, hybrid.questions),
      target: '>= full text',
      ok: at10(hybrid) >= at10(fulltext),
    },
    { section: 'hybrid', metric: 'full text, top 5', value: pct(fulltext.at5, fulltext.questions) },
    { section: 'hybrid', metric: 'hybrid, top 5', value: pct(hybrid.at5, hybrid.questions) },
    {
      section: 'hybrid',
      metric: 'hybrid search latency p50',
      value: ms(percentile(hybrid.latencies, 50)),
    },
  ];
}

const pct = (part: number, whole: number) => `${((100 * part) / Math.max(whole, 1)).toFixed(1)}%`;

export async function runLocomo(): Promise<Row[]> {
  const result = await measureLocomo();
  const rows: Row[] = [
    {
      section: 'locomo',
      metric: `evidence in top 10 (${result.questions} questions)`,
      value: pct(result.at10, result.questions),
      target: '>= 63% (BM25 floor)',
      ok: result.at10 / result.questions >= 0.63,
    },
    { section: 'locomo', metric: 'evidence in top 5', value: pct(result.at5, result.questions) },
  ];
  for (const [category, counts] of [...result.byCategory].sort((a, b) => a[0] - b[0])) {
    rows.push({
      section: 'locomo',
      metric: `top 10, ${CATEGORIES[category] ?? `category ${category}`} (${counts.questions})`,
      value: pct(counts.at10, counts.questions),
    });
  }
  for (const [sample, counts] of result.byConversation) {
    rows.push({
      section: 'locomo',
      metric: `top 10, ${sample}`,
      value: pct(counts.at10, counts.questions),
    });
  }
  rows.push({
    section: 'locomo',
    metric: 'search latency p50 (per conversation store)',
    value: ms(percentile(result.latencies, 50)),
  });
  return rows;
}
