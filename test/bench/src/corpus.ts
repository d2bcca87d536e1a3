import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

/** Where the LoCoMo development split lives (never committed to this repository). */
export const LOCOMO_PATH =
  process.env.CTXBUS_LOCOMO ?? resolve(here, '../../../../shared/data/locomo-dev/locomo-dev.json');

export interface LocomoTurn {
  speaker: string;
  dia_id: string;
  text: string;
  blip_caption?: string;
}

export interface LocomoQuestion {
  question: string;
  evidence: string[];
  category: number;
}

export interface LocomoConversation {
  sampleId: string;
  sessions: { index: number; date: string; turns: LocomoTurn[] }[];
  questions: LocomoQuestion[];
}

export function locomoAvailable(): boolean {
  return existsSync(LOCOMO_PATH);
}

export function loadLocomo(): LocomoConversation[] {
  const raw = JSON.parse(readFileSync(LOCOMO_PATH, 'utf8')) as {
    sample_id?: string;
    conversation: Record<string, unknown>;
    qa: LocomoQuestion[];
  }[];
  return raw.map((sample, index) => {
    const sessions: LocomoConversation['sessions'] = [];
    for (const [name, value] of Object.entries(sample.conversation)) {
      const match = /^session_(\d+)$/.exec(name);
      if (!match || !Array.isArray(value)) continue;
      const sessionIndex = Number(match[1]);
      sessions.push({
        index: sessionIndex,
        date: String(sample.conversation[`session_${sessionIndex}_date_time`] ?? ''),
        turns: value as LocomoTurn[],
      });
    }
    sessions.sort((a, b) => a.index - b.index);
    return { sampleId: sample.sample_id ?? `conv-${index}`, sessions, questions: sample.qa };
  });
}

/** Evidence ids normalised as the data's README says: `D:?(\d+):0*(\d+)`, split on ; or spaces. */
export function normaliseEvidence(evidence: readonly string[]): string[] {
  const ids: string[] = [];
  for (const entry of evidence) {
    for (const part of entry.split(/[;\s]+/)) {
      const match = /D:?(\d+):0*(\d+)/.exec(part);
      if (match) ids.push(`D${match[1]}:${match[2]}`);
    }
  }
  return ids;
}

const WORDS =
  'build cache deploy design review token budget schema migration index query latency stream subscriber hub store search ranking decision alert request status discovery release branch test failure flaky fix feature customer invoice meeting plan roadmap priority incident database queue worker retry backoff timeout memory context runtime agent model prompt'.split(
    ' ',
  );

/** Text for scale tests: LoCoMo turns when the data is present, generated sentences otherwise. */
export function corpusTexts(): string[] {
  if (locomoAvailable()) {
    return loadLocomo().flatMap((conversation) =>
      conversation.sessions.flatMap((session) => session.turns.map((turn) => turn.text)),
    );
  }
  let seed = 42;
  const next = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed;
  };
  return Array.from({ length: 3000 }, () =>
    Array.from({ length: 8 + (next() % 20) }, () => WORDS[next() % WORDS.length]).join(' '),
  );
}

/** Natural-language queries: LoCoMo questions, or generated ones. */
export function corpusQueries(): string[] {
  if (locomoAvailable())
    return loadLocomo().flatMap((conversation) => conversation.questions.map((q) => q.question));
  return corpusTexts()
    .slice(0, 500)
    .map((text) => `what about the ${text.split(' ').slice(0, 4).join(' ')}?`);
}
