import { stemmer } from 'stemmer';

// Text processing shared by every search backend: the same tokens and stems as SQLite FTS5's
// `porter unicode61 remove_diacritics 2` tokenizer, so document frequencies looked up by stem
// and the re-ranker's term matching agree with the index.

const TOKEN_RE = /[\p{L}\p{N}\p{Co}\p{Mn}]+/gu;
const MARKS_RE = /\p{M}+/gu;
// biome-ignore lint/suspicious/noControlCharactersInRegex: an ASCII range check
const NON_ASCII_RE = /[^\x00-\x7f]/;
const STEMMABLE_RE = /^[a-z0-9]{1,64}$/;

/**
 * Splits text into lowercase tokens as `unicode61 remove_diacritics 2` does: runs of letters,
 * digits and private-use characters, with diacritics removed.
 */
export function tokenize(text: string): string[] {
  const tokens: string[] = [];
  for (const match of text.matchAll(TOKEN_RE)) {
    let token = match[0].toLowerCase();
    if (NON_ASCII_RE.test(token))
      token = token.normalize('NFD').replace(MARKS_RE, '').normalize('NFC');
    if (token.length > 0) tokens.push(token);
  }
  return tokens;
}

const stemMemo = new Map<string, string>();

/**
 * The Porter stem FTS5's `porter` tokenizer stores for a token (npm `stemmer`; checked against
 * SQLite on 322,694 words: 7 differ, all oddities like `serenityyed`). Non-ASCII and very long
 * tokens are stored unstemmed by FTS5, and so here.
 */
export function stem(token: string): string {
  if (!STEMMABLE_RE.test(token)) return token;
  let stemmed = stemMemo.get(token);
  if (stemmed === undefined) {
    stemmed = stemmer(token);
    if (stemMemo.size >= 50_000) stemMemo.clear();
    stemMemo.set(token, stemmed);
  }
  return stemmed;
}

/**
 * English function words dropped from questions: articles, pronouns, question words, auxiliaries,
 * prepositions, conjunctions, a few adverbs, and the fragments `unicode61` makes of contractions
 * and possessives (`Caroline's` -> `caroline` + `s`, `don't` -> `don` + `t`). Lowercase tokens,
 * matched before stemming. Written for ctxbus.
 */
export const STOPWORDS: ReadonlySet<string> = new Set(
  `a an the this that these those some any each every all both either neither no another such other
own same i me my mine myself we us our ours ourselves you your yours yourself yourselves he him his
himself she her hers herself it its itself they them their theirs themselves what which who whom whose
when where why how whatever whichever whoever am is are was were be been being have has had having do
does did doing done will would shall should can could may might must ought s t d ll m re ve don didn
doesn isn aren wasn weren hasn haven hadn won wouldn couldn shouldn about above across after against
along among around at before behind below beneath beside between beyond by down during for from in
inside into near of off on onto out outside over since through throughout till to toward towards under
until up upon with within without via per and or but nor so yet if then than because as while whether
though although unless not very too also just only again ever here there now more most less few many
much further once quite rather else ago`.split(/\s+/),
);

/** A whitespace-free run as what comes before its first letter or digit, the word, and after. */
const WORD_IN_PART = /^([^\p{L}\p{N}]*)(.*?)([^\p{L}\p{N}]*)$/su;

/**
 * A readable passage of `text` around the first term whose stem is in `stems`, with matching
 * words wrapped in `**` (the same convention as the FTS5 snippets).
 */
export function highlightPassage(text: string, stems: ReadonlySet<string>, words = 24): string {
  const parts = text.split(/(\s+)/);
  const wordIndexes: number[] = [];
  parts.forEach((part, index) => {
    if (part.trim() !== '') wordIndexes.push(index);
  });
  const matches = (part: string) => tokenize(part).some((token) => stems.has(stem(token)));
  const first = wordIndexes.findIndex((index) => matches(parts[index] ?? ''));
  const start = Math.max(0, Math.max(first, 0) - Math.floor(words / 3));
  const chosen = wordIndexes.slice(start, start + words);
  const passage = chosen
    .map((index) => {
      const part = parts[index] ?? '';
      if (!matches(part)) return part;
      // The word marked, its punctuation outside the marks: "**database**:", not "**database:**".
      const [, before = '', word = '', after = ''] = WORD_IN_PART.exec(part) ?? [];
      return `${before}**${word}**${after}`;
    })
    .join(' ');
  return `${start > 0 ? '…' : ''}${passage}${start + words < wordIndexes.length ? '…' : ''}`;
}
