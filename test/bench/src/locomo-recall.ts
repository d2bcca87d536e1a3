// Search quality on the LoCoMo development split, through a real hub's search API: each
// conversation turn is one item (in a team of its own), each question one query; a question
// is answered when an evidence turn is among the top k results.
import { call, removeDir, runtimeToken, startHubProcess, tempDir } from '@ctxbus/test-kit';
import { loadLocomo, normaliseEvidence } from './corpus.ts';
import type { Row } from './run-bench.ts';
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

export async function measureLocomo(): Promise<LocomoResult> {
  const conversations = loadLocomo();
  const dataDir = tempDir('ctxbus-locomo-');
  const hub = await startHubProcess({
    dataDir,
    args: ['--log-level', 'error'],
    env: { CTXBUS_VALIDATE_RESPONSES: '0' },
  });
  const result: LocomoResult = {
    questions: 0,
    at5: 0,
    at10: 0,
    byCategory: new Map(),
    byConversation: new Map(),
    latencies: [],
  };
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
        }
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
    removeDir(dataDir);
  }
  return result;
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
