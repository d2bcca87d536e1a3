// Search quality of the PostgreSQL store on the LoCoMo development split, beside the SQLite
// store's on the same items (run by hand, never in the test suite; the data stays outside the
// repository):
//
//   node --experimental-transform-types packages/store/src/postgres/measure-locomo.ts [--only postgres|sqlite]
//
// Each conversation turn is one item in a team of the conversation's own (title = speaker,
// content = text plus " [image: caption]", tag = speaker, scope key and thread =
// `<sample>-s<session>`), each question one search (limit 10); a question counts when an
// evidence turn is in the top 10 (top 5). As test/bench/src/locomo-recall.ts does through the
// hub. CTXBUS_LOCOMO overrides the data path, CTXBUS_TEST_POSTGRES_URL the server.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { percentile, report, resolveSourceImports } from './measure-support.ts';

resolveSourceImports();
const { prepareItem } = await import('@ctxbus/core');
const { openPostgresStore } = await import('./postgres-store.ts');
const { openSqliteStore } = await import('../sqlite/sqlite-store.ts');
const { probePostgres, ScratchSchemas } = await import('./postgres-test-server.ts');
type Store = import('../store.ts').Store;

const here = dirname(fileURLToPath(import.meta.url));
const dataPath =
  process.env.CTXBUS_LOCOMO ??
  resolve(here, '../../../../../shared/data/locomo-dev/locomo-dev.json');

interface Turn {
  speaker: string;
  dia_id: string;
  text: string;
  blip_caption?: string;
}
interface Question {
  question: string;
  evidence: string[];
  category: number;
}
interface Conversation {
  sampleId: string;
  sessions: { index: number; turns: Turn[] }[];
  questions: Question[];
}

function loadConversations(): Conversation[] {
  const raw = JSON.parse(readFileSync(dataPath, 'utf8')) as {
    sample_id?: string;
    conversation: Record<string, unknown>;
    qa: Question[];
  }[];
  return raw.map((sample, index) => {
    const sessions: Conversation['sessions'] = [];
    for (const [name, value] of Object.entries(sample.conversation)) {
      const match = /^session_(\d+)$/.exec(name);
      if (match && Array.isArray(value))
        sessions.push({ index: Number(match[1]), turns: value as Turn[] });
    }
    sessions.sort((a, b) => a.index - b.index);
    return { sampleId: sample.sample_id ?? `conv-${index}`, sessions, questions: sample.qa };
  });
}

/** As the data's README says: `D:?(\d+):0*(\d+)`, split on `;` or spaces. */
function normaliseDia(value: string): string | null {
  const match = /D:?(\d+):0*(\d+)/.exec(value);
  return match ? `D${match[1]}:${match[2]}` : null;
}
function normaliseEvidence(evidence: readonly string[]): Set<string> {
  const ids = new Set<string>();
  for (const entry of evidence)
    for (const part of entry.split(/[;\s]+/)) {
      const id = normaliseDia(part);
      if (id) ids.add(id);
    }
  return ids;
}

async function measure(name: string, store: Store, conversations: Conversation[]) {
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
          prepareItem(
            {
              type: 'discovery',
              title: turn.speaker,
              content: turn.blip_caption ? `${turn.text} [image: ${turn.blip_caption}]` : turn.text,
              relevanceTags: [turn.speaker.toLowerCase().replace(/[\s,]+/g, '-')],
              scopeKey: `thread:${thread}`,
              source: { threadId: thread },
            },
            writer,
            { now: new Date() },
          ),
        );
        const outcomes = await store.writeItems(items);
        outcomes.forEach((outcome, offset) => {
          diaById.set(outcome.item.id, normaliseDia(turns[offset]?.dia_id ?? '') ?? '');
        });
      }
    }
    let conversationQuestions = 0;
    let conversationAt10 = 0;
    for (const question of conversation.questions) {
      const evidence = normaliseEvidence(question.evidence);
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

if (!existsSync(dataPath)) {
  report(`no LoCoMo data at ${dataPath} (set CTXBUS_LOCOMO)`);
  process.exit(1);
}
const only = process.argv.includes('--only')
  ? process.argv[process.argv.indexOf('--only') + 1]
  : null;
const conversations = loadConversations();

if (only !== 'postgres') {
  const dir = mkdtempSync(join(tmpdir(), 'ctxbus-locomo-'));
  const store = openSqliteStore({ path: join(dir, 'ctxbus.db') });
  try {
    await measure('sqlite', store, conversations);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
if (only !== 'sqlite') {
  const server = await probePostgres();
  if (server.url === null) {
    report(`no PostgreSQL at ${server.tried}: ${server.reason}`);
    process.exit(1);
  }
  const schemas = new ScratchSchemas(server.url);
  const store = await openPostgresStore({
    connectionString: server.url,
    schema: schemas.next('locomo'),
  });
  try {
    await measure('postgres', store, conversations);
  } finally {
    await store.close();
    await schemas.dropAll();
  }
}
