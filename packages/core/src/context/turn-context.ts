import { hashValue } from '../shared/canonical-hash.js';

// Seed 002's turn context: what one agent turn starts with, built from five sources in a fixed
// order, bounded by three budgets, trimmed deterministically, and hashed so a snapshot on disk
// can prove it was rebuilt exactly. No zod and no tokenizer here: hooks load this per process,
// and the token counter is passed in (and named in the snapshot, so replay uses the same one).

/** Who sent a message. `kind` is carried for the record; the builder never reads it. */
export interface TurnSender {
  id: string;
  kind?: string;
}

/** One message of the recent chat window (inbound or outbound). */
export interface TurnMessage {
  id: string;
  direction: 'inbound' | 'outbound';
  sender: TurnSender;
  text: string;
  /**
   * Already in the runtime's own transcript (the session's prompts and replies): part of the
   * turn context, its budget and hash, but not repeated in `injection`.
   */
  held?: boolean;
}

/** The session's runtime state: the last checkpoint, the pending queue, the last terminal status. */
export interface TurnRuntimeState {
  lastCheckpointSummary?: string;
  pendingQueueSummary?: string;
  lastTerminalStatus?: string;
}

/** A memory note or reference relevant to this chat (one line, or a block kept as written). */
export interface TurnMemoryPointer {
  id: string;
  text: string;
}

/** A recent tool or skill result: its raw output and the summary it compacts to. */
export interface TurnToolSnippet {
  id: string;
  tool: string;
  output: string;
  summary: string;
  /** Already in the runtime's own transcript (its tool calls' results): not repeated in `injection`. */
  held?: boolean;
}

export interface TurnCurrentInput {
  id: string;
  sender: TurnSender;
  text: string;
}

/** The five sources, in assembly order; messages and tool snippets oldest first. */
export interface TurnSources {
  recentMessages: TurnMessage[];
  runtimeState: TurnRuntimeState;
  memoryPointers: TurnMemoryPointer[];
  toolSnippets: TurnToolSnippet[];
  currentInput: TurnCurrentInput;
}

export interface TurnBudgets {
  /** The whole context, in tokens of the named counter. */
  maxContextTokens: number;
  /** The chat window: older messages are left out before any budget is weighed. */
  maxRecentMessages: number;
  /** Raw tool output allowed in one turn; snippets beyond it show their summary. */
  maxToolSnippetTokens: number;
}

export const DEFAULT_TURN_BUDGETS: TurnBudgets = {
  maxContextTokens: 2_000,
  maxRecentMessages: 20,
  maxToolSnippetTokens: 400,
};

/** Everything a build depends on: the same input gives the same text and hash. */
export interface TurnContextInput {
  agentId: string;
  sessionId: string;
  turnId: string;
  sources: TurnSources;
  budgets: TurnBudgets;
  /** The token counter's name (see `TokenCounter`). */
  tokenizer: string;
}

/** Counts tokens; its name is recorded so a replay counts with the same one. */
export interface TokenCounter {
  name: string;
  count(text: string): number;
}

/**
 * Tokens estimated on the safe side (3.5 characters a token; English under o200k_base averages
 * about 4): what per-hook processes use, since loading the o200k vocabulary costs more than the
 * rest of a hook. The full entry offers `o200kTokenCounter` for exact counts.
 */
export const estimateTokenCounter: TokenCounter = {
  name: 'estimate-3.5',
  count: (text) => Math.ceil(text.length / 3.5),
};

/** The length of `text` in UTF-8 bytes, without encoding it. */
function utf8Length(text: string): number {
  let bytes = 0;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && index + 1 < text.length) {
      const next = text.charCodeAt(index + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        index += 1;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

/**
 * The estimate over UTF-8 bytes (3.5 a token): the same as `estimateTokenCounter` for ASCII,
 * and on the safe side where a runtime caps what a hook injects in bytes (Codex), so that a
 * budget in tokens fits the cap whatever the script (a CJK character is 3 bytes).
 */
export const utf8EstimateTokenCounter: TokenCounter = {
  name: 'estimate-utf8-3.5',
  count: (text) => Math.ceil(utf8Length(text) / 3.5),
};

export type TurnSource = 'messages' | 'runtimeState' | 'memoryPointers' | 'toolSnippets' | 'input';

/** One line of the built context, in document order. */
export interface TurnPart {
  source: TurnSource;
  id: string;
  mode: 'full' | 'summary' | 'dropped';
  tokens: number;
  /** sha256 of the source line (its full text and summary), whatever the mode: an edit shows here. */
  hash: string;
}

export interface TurnTrimAction {
  source: TurnSource;
  id: string;
  action: 'drop' | 'compact';
  /** window: past maxRecentMessages; tool-cap: past maxToolSnippetTokens; budget: over maxContextTokens. */
  reason: 'window' | 'tool-cap' | 'budget';
}

/** The trim note the trace carries. */
export interface TurnTrimNote {
  /**
   * Whether any of the three bounds left a line out or showed its summary: the window, the tool
   * cap or the budget (`actions` says which, line by line). Not part of the context hash.
   */
  trimmed: boolean;
  tokensBeforeTrim: number;
  /** The current input and latest checkpoint alone exceed the budget; both are kept whole. */
  overBudget: boolean;
  actions: TurnTrimAction[];
}

/** Seed 002's compact snapshot. */
export interface TurnSnapshot {
  sessionId: string;
  turnId: string;
  contextHash: string;
  sourceCounts: { messages: number; memoryPointers: number; toolSnippets: number };
  trimmed: boolean;
  timestampMs: number;
}

export interface BuiltTurnContext {
  /** The whole context, current input last. */
  text: string;
  /**
   * The same without what the runtime already holds in its transcript (the current input and the
   * held messages and tool results): what it injects beside them.
   */
  injection: string;
  totalTokens: number;
  contextHash: string;
  parts: TurnPart[];
  trim: TurnTrimNote;
  snapshot: TurnSnapshot;
}

/** One line of `<data>/agents/<agentId>/context/<sessionId>.jsonl`: the snapshot and how to rebuild it. */
export interface TurnContextRecord {
  kind: 'turn';
  version: number;
  agentId: string;
  snapshot: TurnSnapshot;
  input: TurnContextInput;
  trace: { parts: TurnPart[]; trim: TurnTrimNote };
}

/** A failed build: a terminal failure with a recovery step, for the session's audit log. */
export interface ContextBuildFailure {
  kind: 'failure';
  code: 'context_build_error';
  status: 'failed';
  agentId: string;
  sessionId: string;
  turnId: string;
  message: string;
  nextAction: string;
  timestampMs: number;
}

export const TURN_BUILDER_VERSION = 1;

const SECTION_TITLES: Record<TurnSource, string> = {
  messages: '## Recent chat',
  runtimeState: '## Session state',
  memoryPointers: '## Memory',
  toolSnippets: '## Tool results',
  input: '## Current input',
};
const SOURCE_ORDER: readonly TurnSource[] = [
  'messages',
  'runtimeState',
  'memoryPointers',
  'toolSnippets',
  'input',
];
const CHECKPOINT_ID = 'lastCheckpointSummary';
const STATE_LINES: readonly [keyof TurnRuntimeState, string][] = [
  ['lastCheckpointSummary', 'Last checkpoint'],
  ['pendingQueueSummary', 'Pending queue'],
  ['lastTerminalStatus', 'Last terminal status'],
];

interface Line {
  source: TurnSource;
  id: string;
  full: string;
  summary: string | null;
  mode: 'full' | 'summary' | 'dropped';
  fullTokens: number;
  summaryTokens: number;
  held: boolean;
}

const flat = (text: string) => text.replace(/\s+/g, ' ').trim();

function assertInput(input: TurnContextInput): void {
  const fail = (what: string) => {
    throw new Error(`turn context input: ${what}`);
  };
  for (const key of ['agentId', 'sessionId', 'turnId', 'tokenizer'] as const) {
    if (typeof input?.[key] !== 'string' || input[key] === '')
      fail(`${key} must be a non-empty string`);
  }
  for (const key of ['maxContextTokens', 'maxRecentMessages', 'maxToolSnippetTokens'] as const) {
    const value = input.budgets?.[key];
    if (!Number.isInteger(value) || (value as number) < 0)
      fail(`budgets.${key} must be an integer >= 0`);
  }
  const sources = input.sources;
  if (!sources || typeof sources.currentInput?.text !== 'string')
    fail('sources.currentInput.text is required');
  for (const key of ['recentMessages', 'memoryPointers', 'toolSnippets'] as const) {
    if (!Array.isArray(sources[key])) fail(`sources.${key} must be an array`);
  }
}

function lines(input: TurnContextInput, counter: TokenCounter): Line[] {
  const { sources } = input;
  const line = (
    source: TurnSource,
    id: string,
    full: string,
    summary: string | null,
    held = false,
  ): Line => ({
    source,
    id,
    full,
    summary,
    mode: 'full',
    fullTokens: counter.count(full),
    summaryTokens: summary === null ? 0 : counter.count(summary),
    held,
  });
  const out: Line[] = [];
  for (const message of sources.recentMessages) {
    const arrow = message.direction === 'inbound' ? '←' : '→';
    out.push(
      line(
        'messages',
        message.id,
        `- ${arrow} ${message.sender.id}: ${flat(message.text)}`,
        null,
        message.held === true,
      ),
    );
  }
  for (const [key, label] of STATE_LINES) {
    const value = sources.runtimeState[key];
    if (value) out.push(line('runtimeState', key, `- ${label}: ${flat(value)}`, null));
  }
  for (const pointer of sources.memoryPointers) {
    // A note is one line; a longer memory (a team bundle, a notes file) keeps its own layout.
    const text = pointer.text.trim();
    out.push(line('memoryPointers', pointer.id, text.includes('\n') ? text : `- ${text}`, null));
  }
  for (const snippet of sources.toolSnippets) {
    out.push(
      line(
        'toolSnippets',
        snippet.id,
        `- ${snippet.tool}: ${snippet.output.trim()}`,
        `- ${snippet.tool} (summary): ${flat(snippet.summary)}`,
        snippet.held === true,
      ),
    );
  }
  const current = sources.currentInput;
  out.push(line('input', current.id, `From ${current.sender.id}:\n${current.text.trim()}`, null));
  return out;
}

const live = (line: Line) =>
  line.mode === 'dropped' ? 0 : line.mode === 'full' ? line.fullTokens : line.summaryTokens;
const shown = (line: Line) =>
  line.mode === 'dropped' ? '' : line.mode === 'full' ? line.full : (line.summary as string);

/** The context's text; `forInjection` leaves out what the runtime holds (the input, held lines). */
function render(all: Line[], forInjection: boolean): string {
  const blocks: string[] = [];
  for (const source of SOURCE_ORDER) {
    if (source === 'input' && forInjection) continue;
    const body = all.filter(
      (line) => line.source === source && line.mode !== 'dropped' && !(forInjection && line.held),
    );
    if (body.length > 0) blocks.push([SECTION_TITLES[source], ...body.map(shown)].join('\n'));
  }
  return blocks.join('\n\n');
}

/**
 * Builds one turn's context. Before any budget: messages past `maxRecentMessages` (oldest) are
 * left out, and tool snippets show their summary once their raw output (newest first) passes
 * `maxToolSnippetTokens`. Then, while the sum of the lines' tokens and the section titles' is
 * over `maxContextTokens`: (1) drop chat messages, oldest first; (2) compact tool outputs to
 * summaries, oldest first; (3) drop tool snippets, oldest first, then memory pointers, last
 * first, then the pending queue and terminal status. The current input and the latest
 * checkpoint summary are always kept; if they alone are over, `overBudget` says so. The sender's
 * kind is never read: Agent<->Human and Agent<->Agent take the same path. Throws on input that
 * is not a turn (see `tryBuildTurnContext`).
 */
export function buildTurnContext(
  input: TurnContextInput,
  counter: TokenCounter,
  timestampMs: number,
): BuiltTurnContext {
  assertInput(input);
  if (counter.name !== input.tokenizer) {
    throw new Error(
      `turn context input names tokenizer ${input.tokenizer}, built with ${counter.name}`,
    );
  }
  const { budgets } = input;
  const all = lines(input, counter);
  const actions: TurnTrimAction[] = [];
  const apply = (line: Line, action: 'drop' | 'compact', reason: TurnTrimAction['reason']) => {
    line.mode = action === 'drop' ? 'dropped' : 'summary';
    actions.push({ source: line.source, id: line.id, action, reason });
  };

  const messages = all.filter((line) => line.source === 'messages');
  for (const line of messages.slice(0, Math.max(messages.length - budgets.maxRecentMessages, 0))) {
    apply(line, 'drop', 'window');
  }
  const snippets = all.filter((line) => line.source === 'toolSnippets');
  let rawLeft = budgets.maxToolSnippetTokens;
  for (const line of [...snippets].reverse()) {
    if (line.fullTokens <= rawLeft) rawLeft -= line.fullTokens;
    else apply(line, 'compact', 'tool-cap');
  }

  const titleTokens = new Map(
    SOURCE_ORDER.map((source) => [source, counter.count(SECTION_TITLES[source])]),
  );
  const total = () => {
    let sum = 0;
    const present = new Set<TurnSource>();
    for (const line of all) {
      if (line.mode === 'dropped') continue;
      sum += live(line);
      present.add(line.source);
    }
    for (const source of present) sum += titleTokens.get(source) ?? 0;
    return sum;
  };
  const tokensBeforeTrim = total();
  const steps: [Line, 'drop' | 'compact'][] = [
    ...messages
      .filter((line) => line.mode !== 'dropped')
      .map((line) => [line, 'drop'] as [Line, 'drop']),
    ...snippets.map((line) => [line, 'compact'] as [Line, 'compact']),
    ...snippets.map((line) => [line, 'drop'] as [Line, 'drop']),
    ...all
      .filter((line) => line.source === 'memoryPointers')
      .reverse()
      .map((line) => [line, 'drop'] as [Line, 'drop']),
    ...all
      .filter((line) => line.source === 'runtimeState' && line.id !== CHECKPOINT_ID)
      .reverse()
      .map((line) => [line, 'drop'] as [Line, 'drop']),
  ];
  for (const [line, action] of steps) {
    if (total() <= budgets.maxContextTokens) break;
    if (line.mode === 'dropped' || (action === 'compact' && line.mode !== 'full')) continue;
    apply(line, action, 'budget');
  }
  const totalTokens = total();
  // Seed 002's snapshot says trimmed when the context is not its sources whole, whichever bound
  // trimmed it; `actions` is the trace of what went and why.
  const trimmed = actions.length > 0;
  const trim: TurnTrimNote = {
    trimmed,
    tokensBeforeTrim,
    overBudget: totalTokens > budgets.maxContextTokens,
    actions,
  };
  const parts: TurnPart[] = all.map((line) => {
    const { full, summary } = line;
    return withLazyHash(
      { source: line.source, id: line.id, mode: line.mode, tokens: live(line) },
      () => hashValue([full, summary]),
    );
  });
  const text = render(all, false);
  const hashed = {
    builder: TURN_BUILDER_VERSION,
    tokenizer: input.tokenizer,
    budgets: { ...budgets },
    text,
    parts: parts.map(({ source, id, mode }) => ({ source, id, mode })),
  };
  let contextHash: string | undefined;
  const hashOfContext = () => {
    contextHash ??= `ctx_${hashValue(hashed)}`;
    return contextHash;
  };
  const kept = (source: TurnSource) =>
    all.filter((line) => line.source === source && line.mode !== 'dropped').length;
  // The placeholders keep each object's key order (JSON, the turn log's lines) as it was.
  const snapshot = lazyField(
    {
      sessionId: input.sessionId,
      turnId: input.turnId,
      contextHash: '',
      sourceCounts: {
        messages: kept('messages'),
        memoryPointers: kept('memoryPointers'),
        toolSnippets: kept('toolSnippets'),
      },
      trimmed,
      timestampMs,
    },
    'contextHash',
    hashOfContext,
  );
  return lazyField(
    { text, injection: render(all, true), totalTokens, contextHash: '', parts, trim, snapshot },
    'contextHash',
    hashOfContext,
  );
}

/**
 * `target` with `key` computed on first read and kept (an enumerable property, as if it had
 * been set: JSON, spreads and equality see the value). The hashes of a turn are SHA-256 in
 * JavaScript, ~30 per turn: a hook, a process per call, pays milliseconds of CPU for them
 * (measured), and only a snapshot (seed 002's log) or a caller that looks reads them.
 */
function lazyField<T extends object, K extends string>(
  target: T,
  key: K,
  compute: () => string,
): T & Record<K, string> {
  // Defined over an existing key, a property keeps its place in the key order.
  return Object.defineProperty(target, key, {
    enumerable: true,
    configurable: true,
    get() {
      const value = compute();
      Object.defineProperty(target, key, { value, enumerable: true, writable: true });
      return value;
    },
    set(value: string) {
      Object.defineProperty(target, key, { value, enumerable: true, writable: true });
    },
  }) as T & Record<K, string>;
}

function withLazyHash(part: Omit<TurnPart, 'hash'>, compute: () => string): TurnPart {
  return lazyField({ ...part, hash: '' }, 'hash', compute);
}

/** The record a snapshot file stores for one built turn. */
export function turnContextRecord(
  input: TurnContextInput,
  built: BuiltTurnContext,
): TurnContextRecord {
  return {
    kind: 'turn',
    version: TURN_BUILDER_VERSION,
    agentId: input.agentId,
    snapshot: built.snapshot,
    input,
    trace: { parts: built.parts, trim: built.trim },
  };
}

export type TurnBuildResult =
  | { ok: true; context: BuiltTurnContext }
  | { ok: false; failure: ContextBuildFailure };

/** Builds, or classifies the failure as `context_build_error` with a recovery step. Never throws. */
export function tryBuildTurnContext(
  input: TurnContextInput,
  counter: TokenCounter,
  timestampMs: number,
): TurnBuildResult {
  try {
    return { ok: true, context: buildTurnContext(input, counter, timestampMs) };
  } catch (error) {
    const text = (value: unknown) => (typeof value === 'string' && value ? value : 'unknown');
    return {
      ok: false,
      failure: {
        kind: 'failure',
        code: 'context_build_error',
        status: 'failed',
        agentId: text(input?.agentId),
        sessionId: text(input?.sessionId),
        turnId: text(input?.turnId),
        message: error instanceof Error ? error.message : String(error),
        nextAction:
          'the turn ran without its built context; check the session sources named in the message, then retry the turn (or `ctxbus replay <session>` to inspect earlier turns)',
        timestampMs,
      },
    };
  }
}
