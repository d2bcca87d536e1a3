import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it } from 'vitest';
import { buildSearchQuery as buildFtsQuery, quoteFtsTerm } from './search-query.js';
import type { RerankCandidate } from './search-rerank.js';
import { rerankCandidates } from './search-rerank.js';
import { highlightPassage, stem as porterStem, tokenize } from './search-text.js';

/** A MATCH made only of quoted strings joined by OR. */
const SAFE_MATCH = /^"(?:[^"]|"")*"(?: OR "(?:[^"]|"")*")*$/;

const HOSTILE = [
  'He said "hello" and \'bye\'',
  '"unbalanced quote',
  'NEAR(alpha beta, 3) AND gamma OR NOT delta',
  'prefix* ^start -minus +plus title:value {col1 col2}: x',
  '((nested (parens)))',
  'AND OR NOT NEAR',
  'a AND',
  '*',
  '-',
  '""""',
  "Caroline's friend's dog's name?",
  'Café Zürich naïve façade 東京 Straße ÅNGSTRÖM 🧘‍♀️ emoji',
  'e\u0301te\u0301 (combining accents)',
  'x'.repeat(500),
  'semi;colon, comma. dot! bang? back\\slash `tick` [bracket] <angle> |pipe| &amp; $dollar %pct #hash @at ~tilde',
  '\u0000null\u0007bell\ttab\nnewline',
  'SELECT * FROM items; DROP TABLE items; --',
];

describe('buildFtsQuery escaping', () => {
  it('emits only quoted strings joined by OR, whatever the input', () => {
    for (const q of HOSTILE) {
      const built = buildFtsQuery(q);
      if (built === null) continue;
      expect(built.match).toMatch(SAFE_MATCH);
      expect(built.terms.length).toBeGreaterThan(0);
    }
  });

  it('neutralises FTS5 operators and syntax characters', () => {
    const built = buildFtsQuery('NEAR(alpha beta) AND gamma* -delta ^epsilon title:zeta');
    expect(built?.terms).toEqual(['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'title', 'zeta']);
    expect(built?.match).toBe(
      '"alpha" OR "beta" OR "gamma" OR "delta" OR "epsilon" OR "title" OR "zeta"',
    );
  });

  it('keeps operator words as plain (quoted) terms when they are not stopwords', () => {
    expect(buildFtsQuery('NOT NEAR')).toBeNull(); // both are stopwords
    expect(buildFtsQuery('AND kittens')?.match).toBe('"kittens"');
  });

  it('doubles embedded quotes in quoted terms', () => {
    expect(quoteFtsTerm('a"b')).toBe('"a""b"');
    expect(quoteFtsTerm('')).toBe('""');
  });

  it('splits possessives and contractions and drops the fragments', () => {
    expect(buildFtsQuery("What is Caroline's dog's name? Don't guess.")?.terms).toEqual([
      'caroline',
      'dog',
      'name',
      'guess',
    ]);
  });

  it('folds case and diacritics like unicode61 remove_diacritics 2', () => {
    expect(tokenize('Café Zürich naïve ÅNGSTRÖM 東京')).toEqual([
      'cafe',
      'zurich',
      'naive',
      'angstrom',
      '東京',
    ]);
    expect(buildFtsQuery('e\u0301te\u0301')?.terms).toEqual(['ete']);
  });

  it('never makes SQLite raise a syntax error', () => {
    const db = new DatabaseSync(':memory:');
    db.exec(`CREATE VIRTUAL TABLE t USING fts5(title, content, summary, tags,
      tokenize = 'porter unicode61 remove_diacritics 2')`);
    db.prepare('INSERT INTO t VALUES (?, ?, ?, ?)').run('Caroline', 'hello café world', 'hi', 'x');
    const stmt = db.prepare(`SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t)`);
    for (const q of HOSTILE) {
      const built = buildFtsQuery(q);
      if (built) expect(() => stmt.all(built.match)).not.toThrow();
    }
    expect(stmt.all(buildFtsQuery('Say "hello" to the CAFÉ')?.match ?? '').length).toBe(1);
    db.close();
  });
});

describe('buildFtsQuery terms', () => {
  it('returns null for empty, punctuation-only and stopword-only questions', () => {
    for (const q of [
      '',
      '   ',
      '?!.,;:"\'()*-',
      'What is it?',
      'Did you do that to them?',
      "Who's there?",
    ]) {
      expect(buildFtsQuery(q)).toBeNull();
    }
  });

  it('deduplicates terms by porter stem, keeping the first token', () => {
    expect(buildFtsQuery('paint painting painted paints')?.terms).toEqual(['paint']);
  });

  it('caps the number of terms, keeping the rarest when frequencies are known', () => {
    const words = Array.from(
      { length: 40 },
      (_, i) => `word${String.fromCharCode(97 + (i % 26))}${i}`,
    );
    expect(buildFtsQuery(words.join(' '))?.terms.length).toBe(32);
    const df = (stem: string): number => (stem === 'worda0' ? 1 : 100);
    const built = buildFtsQuery(words.join(' '), { maxTerms: 2, documentFrequency: df });
    expect(built?.terms).toEqual(['worda0', 'wordb1']);
  });

  it('leaves very common terms out of the MATCH but keeps them for re-ranking', () => {
    const df = (stem: string): number => ({ carolin: 600, potteri: 3, class: 40 })[stem] ?? 0;
    const built = buildFtsQuery('When did Caroline take a pottery class?', {
      documentFrequency: df,
      totalDocuments: 1000,
    });
    expect(built?.terms).toEqual(['take', 'pottery', 'class']);
    expect(built?.queryTerms.map((t) => [t.token, t.inMatch])).toEqual([
      ['caroline', false],
      ['take', true],
      ['pottery', true],
      ['class', true],
    ]);
  });

  it('applies the posting budget rarest first and always keeps the rarest term', () => {
    const df = (stem: string): number => ({ alpha: 3000, beta: 2500, gamma: 10 })[stem] ?? 0;
    const built = buildFtsQuery('alpha beta gamma', {
      documentFrequency: df,
      totalDocuments: 100_000,
      maxMatchPostings: 3000,
    });
    expect(built?.terms).toEqual(['beta', 'gamma']);
    const allCommon = buildFtsQuery('alpha beta', {
      documentFrequency: () => 90_000,
      totalDocuments: 100_000,
    });
    expect(allCommon?.terms).toEqual(['alpha']);
  });

  it('is deterministic', () => {
    const opts = { documentFrequency: (s: string) => s.length * 7, totalDocuments: 50 };
    for (const q of [...HOSTILE, 'What did Melanie paint recently?']) {
      expect(JSON.stringify(buildFtsQuery(q, opts))).toBe(JSON.stringify(buildFtsQuery(q, opts)));
    }
  });
});

describe('porterStem', () => {
  it('matches the FTS5 porter tokenizer on classic cases', () => {
    const cases: Array<[string, string]> = [
      ['caresses', 'caress'],
      ['ponies', 'poni'],
      ['relational', 'relat'],
      ['hopping', 'hop'],
      ['running', 'run'],
      ['generalizations', 'gener'],
      ['sky', 'sky'],
      ['ies', 'ie'],
      ['caroline', 'carolin'],
      ['2023', '2023'],
    ];
    for (const [word, stem] of cases) expect(porterStem(word)).toBe(stem);
  });
});

describe('rerankCandidates', () => {
  const item = (rid: number, content: string, extra: Partial<RerankCandidate> = {}) => ({
    rid,
    title: rid % 2 ? 'Caroline' : 'Melanie',
    content,
    summary: content.split('.')[0] ?? '',
    tags: JSON.stringify([rid % 2 ? 'caroline' : 'melanie']),
    ftsScore: -1,
    ...extra,
  });

  it('ranks by BM25 with coordination and returns each rid once', () => {
    const q = buildFtsQuery('pottery class');
    if (!q) throw new Error('query expected');
    const out = rerankCandidates(
      q,
      [item(2, 'I love my pottery class.'), item(4, 'pottery'), item(2, 'duplicate row')],
      { totalDocuments: 100, documentFrequency: () => 5 },
      { neighbourKernel: [] },
    );
    expect(out.map((r) => r.rid)).toEqual([2, 4]);
    expect(out[0]?.score).toBeGreaterThan(out[1]?.score ?? 0);
  });

  it('lifts items that follow a strong match in the same thread (kernel 0.5, 0.25)', () => {
    const q = buildFtsQuery('What did Melanie paint?');
    if (!q) throw new Error('query expected');
    const stats = { totalDocuments: 100, documentFrequency: () => 5 };
    const plain = { title: 'Caroline', tags: '["caroline"]', ftsScore: null };
    const candidates = [
      item(11, 'Did you paint anything new lately? Show me your paint work!', { after: [12, 13] }),
      item(20, 'I bought paint.'),
      item(12, 'Yes, a sunset over a lake.', plain),
      item(13, 'Wow, lovely.', plain),
    ];
    const without = rerankCandidates(q, candidates, stats, { neighbourKernel: [] });
    const withContext = rerankCandidates(q, candidates, stats);
    const by = (list: typeof without, rid: number) => list.find((r) => r.rid === rid);
    const s11 = by(without, 11)?.lexicalScore ?? 0;
    expect(s11).toBeGreaterThan(0);
    expect(by(without, 12)?.score).toBe(0);
    expect(by(withContext, 12)?.score).toBeCloseTo(0.5 * s11, 10);
    expect(by(withContext, 13)?.score).toBeCloseTo(0.25 * s11, 10);
    const order = withContext.map((r) => r.rid);
    expect(order.indexOf(12)).toBeLessThan(order.indexOf(13));
  });

  it('is deterministic and independent of tie order', () => {
    const q = buildFtsQuery('garden');
    if (!q) throw new Error('query expected');
    const rows = [item(5, 'garden'), item(3, 'garden'), item(7, 'garden')];
    const a = rerankCandidates(q, rows, { totalDocuments: 10, documentFrequency: () => 3 });
    const b = rerankCandidates(q, [...rows].reverse(), {
      totalDocuments: 10,
      documentFrequency: () => 3,
    });
    expect(a).toEqual(b);
    expect(a.map((r) => r.rid)).toEqual([3, 5, 7]);
  });
});

describe('stem', () => {
  it('leaves non-ASCII tokens unstemmed (SQLite stems straße to straß: a known, harmless difference)', () => {
    expect(porterStem('straße')).toBe('straße');
    expect(porterStem('x'.repeat(65))).toBe('x'.repeat(65));
  });
});

describe('highlightPassage', () => {
  it('wraps words whose stem matches, around the first match', () => {
    const stems = new Set(['paint', 'sunset']);
    expect(highlightPassage('Yesterday I painted a sunset by the lake.', stems)).toBe(
      'Yesterday I **painted** a **sunset** by the lake.',
    );
    // Punctuation stays outside the marks.
    expect(highlightPassage('Which database: "Sunset," (painted).', stems)).toBe(
      'Which database: "**Sunset**," (**painted**).',
    );
    const long = `${'filler '.repeat(40)}the sunset was lovely ${'filler '.repeat(40)}`;
    const passage = highlightPassage(long, stems, 10);
    expect(passage.startsWith('…')).toBe(true);
    expect(passage).toContain('**sunset**');
    expect(passage.endsWith('…')).toBe(true);
  });
});
