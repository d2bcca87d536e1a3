// Search quality of the PostgreSQL store on the LoCoMo development split, beside the SQLite
// store's on the same items (run by hand, never in the test suite; the data stays outside the
// repository):
//
//   node test/bench/src/measure-locomo.ts [--only postgres|sqlite]
//
// Each conversation turn is one item in a team of the conversation's own (title = speaker,
// content = text plus " [image: caption]", tag = speaker, scope key and thread =
// `<sample>-s<session>`), each question one search (limit 10); a question counts when an
// evidence turn is in the top 10 (top 5). As test/bench/src/locomo-recall.ts does through the
// hub. CTXBUS_LOCOMO overrides the data path, CTXBUS_TEST_POSTGRES_URL the server.
import { prepareItem } from '@ctxbus/core';
import type { Store } from '@ctxbus/store';
import type { LocomoConversation } from './corpus.ts';
import { LOCOMO_PATH, loadLocomo, locomoAvailable, normaliseEvidence } from './corpus.ts';
import { turnItem } from './locomo-recall.ts';
import { onPostgres, onSqlite, report } from './measure-support.ts';
import { percentile } from './stats.ts';

/** As the data's README says: `D:?(\d+):0*(\d+)`. */
function normaliseDia(value: string): string {
  return normaliseEvidence([value])[0] ?? '';
}

async function measure(name: string, store: Store, conversations: LocomoConversation[]) {
  let questions = 0;
  let at5 = 0;
  let at10 = 0;
  const latencies: number[] = [];
  const perConversation: string[] = [];
  for (const [index, conversation] of conversations.entries()) {
    const writer = { teamId: `locomo-${index}`, runtime: 'claude-code' };
    const diaById = new Map<string, string>();
    for (const session of conversation.sessions) {
      const thread = `${conversation.sampleId}-s${session.index}`;
      for (let start = 0; start < session.turns.length; start += 500) {
        const turns = session.turns.slice(start, start + 500);
        const items = turns.map((turn) =>
          prepareItem(turnItem(turn, thread), writer, { now: new Date() }),
        );
        const outcomes = await store.writeItems(items);
        outcomes.forEach((outcome, offset) => {
          diaById.set(outcome.item.id, normaliseDia(turns[offset]?.dia_id ?? ''));
        });
      }
    }
    let conversationQuestions = 0;
    let conversationAt10 = 0;
    for (const question of conversation.questions) {
      const evidence = new Set(normaliseEvidence(question.evidence));
      if (evidence.size === 0) continue;
      const started = performance.now();
      const hits = await store.searchItems(writer, { query: question.question, limit: 10 });
      latencies.push(performance.now() - started);
      const ranked = hits.map((hit) => diaById.get(hit.item.id) ?? '');
      const hitAt = (k: number) => ranked.slice(0, k).some((dia) => evidence.has(dia));
      questions += 1;
      conversationQuestions += 1;
      if (hitAt(5)) at5 += 1;
      if (hitAt(10)) {
        at10 += 1;
        conversationAt10 += 1;
      }
    }
    perConversation.push(
      `${conversation.sampleId} ${((100 * conversationAt10) / conversationQuestions).toFixed(1)}%`,
    );
  }
  const pct = (part: number) => `${((100 * part) / questions).toFixed(1)}%`;
  report(
    `${name}: ${questions} questions, evidence in top 10 ${pct(at10)}, top 5 ${pct(at5)}; ` +
      `search p50 ${percentile(latencies, 50).toFixed(2)} ms, p99 ${percentile(latencies, 99).toFixed(2)} ms`,
  );
  report(`  top 10 by conversation: ${perConversation.join(', ')}`);
}

if (!locomoAvailable()) {
  report(`no LoCoMo data at ${LOCOMO_PATH} (set CTXBUS_LOCOMO)`);
  process.exit(1);
}
const only = process.argv.includes('--only')
  ? process.argv[process.argv.indexOf('--only') + 1]
  : null;
const conversations = loadLocomo();

if (only !== 'postgres') await onSqlite((store) => measure('sqlite', store, conversations));
if (only !== 'sqlite')
  await onPostgres('locomo', (store) => measure('postgres', store, conversations));
