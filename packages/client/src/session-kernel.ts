import type { ContextItemInput } from '@ctxbus/core/contract';
import type {
  ContextBuildFailure,
  TokenCounter,
  TurnContextInput,
  TurnMemoryPointer,
  TurnSnapshot,
} from '@ctxbus/core/light';
import { estimateTokenCounter, extractDecisions } from '@ctxbus/core/light';
import { ageText, readCachedBundle, writeCachedBundle } from './bundle-cache.js';
import type { HubApi, HubItem } from './hub-lite.js';
import { flushOutbox, pendingCount, queueItems, sendOrSetAside } from './outbox.js';
import type { SessionState, ToolEntry } from './session-state.js';
import { readSessionState, updateSessionState, writeSessionState } from './session-state.js';
import { recordTurn } from './turn-log.js';

// The runtime-neutral session loop (`@ctxbus/client/session`) every adapter runs: the session's
// state file, `lastSeenSeq`, the outbox, the handoff's resume note, the turn context (seed 002)
// and failing open, with one notice per outage. An adapter maps its runtime's events onto
// `beforeTurn` and `afterTurn` and renders the result within its runtime's cap. No zod, no
// tokenizer: a hook that is a process per call loads this on every call.

export type Urgency = 'background' | 'attention' | 'blocking';

/** What the kernel reads of an item; an adapter's items carry more for its rendering. */
export interface SessionItem {
  id: string;
  seq: number;
  urgency: Urgency;
}

/** The hub as the kernel uses it: the adapter wraps whichever client it has. */
export interface SessionHub<Item extends SessionItem> {
  /** Where the hub is, for the notice. */
  readonly url: string;
  /** Items created after `since`, newest first. */
  changes(since: number, limit: number): Promise<Item[]>;
  /** The newest sequence on the bus (0 when it is empty). */
  newestSeq(): Promise<number>;
  /** The team's shared bundle, formatted for the runtime, within `tokenBudget`. */
  shared(tokenBudget: number): Promise<string>;
  write(items: readonly ContextItemInput[]): Promise<void>;
  /** Whether `changes` leaves items out (a tag filter), so it cannot tell the newest sequence. */
  readonly filtered?: boolean;
  /** The bundle cache's key for this runtime and team (`bundleCacheKey`), if it keeps one. */
  readonly cacheKey?: string;
  /** Tells the hub which of `changes`' items went into turn contexts (the analytics). */
  reportInjections?(itemIds: readonly string[]): Promise<void>;
}

/** The light client (`@ctxbus/client/light`) as a session hub. */
export function liteSessionHub(api: HubApi): SessionHub<HubItem> {
  return {
    url: api.url,
    ...(api.cacheKey && { cacheKey: api.cacheKey }),
    changes: (since, limit) => api.list(since, limit),
    newestSeq: async () => (await api.list(0, 1))[0]?.seq ?? 0,
    shared: async (tokenBudget) => (await api.shared(tokenBudget)).formatted,
    write: (items) => api.write(items),
    reportInjections: (itemIds) => api.reportInjections(itemIds),
  };
}

/** Seed 003's pending model switch, as the adapter's handoff reader finds it. */
export type PendingResume =
  | { switchSequence: number; note: string }
  | { switchSequence: number; problem: string };

export interface ResumeSource {
  /** The switch newer than `seen` with its resume note (or why it is unusable), or null. */
  pending(seen: number): PendingResume | null;
  /**
   * Where the newest announced switch is kept when not in the session's state (Claude Code keeps
   * it per workspace, so a switch is told once to whichever session looks first).
   */
  seen?: { read(): number; write(sequence: number): void };
}

/** The parts a turn had, for the adapter's plain rendering when the turn context fails. */
export interface FallbackParts<Item> {
  resume: string | null;
  changes: readonly Item[];
  bundle: string;
  memory: readonly TurnMemoryPointer[];
}

export interface SessionOptions<Item extends SessionItem> {
  /** The hub, or null when none is configured. */
  hub: SessionHub<Item> | null;
  /** The outbox's directory (shared by the runtime's sessions on this machine). */
  stateDir: string;
  /** This session's state file. */
  stateFile: string;
  /** Who the turn contexts are recorded under (`<data>/agents/<agentId>/`) and for which session. */
  agentId: string;
  sessionId: string;
  now?: () => Date;
  /** Seed 002's local turn log; a failed build is audited whenever `dataDir` is set. */
  turnLog?: { dataDir: string | null; snapshots: boolean; counter?: TokenCounter };
  /**
   * The turn context's budgets, in the counter's tokens: the chat window (the session's own
   * prompts and replies and the bus's changes) and the raw tool output (default 400).
   */
  budget: { maxContextTokens: number; maxRecentMessages: number; maxToolSnippetTokens?: number };
  /**
   * The last good bundle, kept per runtime and team (`bundleCacheKey`) beside the session state,
   * for turns the hub does not answer: default the hub's `cacheKey`; null keeps none.
   */
  cache?: { key: string; maxBytes?: number } | null;
  /** One change as a line of the turn's chat window. */
  message(item: Item): { id: string; sender: string; text: string };
  /** Whether an item is this session's own write (never shown back to it as news). */
  own?(item: Item): boolean;
  /** A "Decision: ..." line of a reply as the item that records it (a stable id). */
  decision(text: string): ContextItemInput;
  /**
   * The turn's checkpoint: the handoff's resume note (OpenClaw: the note rides in the turn
   * context), or the last reply (Claude Code: the note is returned for the adapter to place).
   */
  checkpoint: 'resume' | 'last-reply';
  resume?: ResumeSource;
  /** The plain text injected when the turn context cannot be built. */
  fallback(parts: FallbackParts<Item>): string;
  /** What the notice names when no hub is configured; null gives no notice for that. */
  hubless?: string | null;
}

export interface BeforeTurnInput {
  /** The user's prompt; without one (a session start) the hub is read but no turn is built. */
  prompt?: string;
  /** The runtime's id for the turn (default `prompt-<n>`). */
  turnId?: string;
  /**
   * Ask the hub for the team's bundle within `tokens` (or `tokens(first)`, first: the session
   * has not looked yet); `maxChars` asks again, smaller, until it fits.
   */
  bundle?: {
    tokens: number | ((first: boolean) => number);
    maxChars?: number;
    /** What `maxChars` counts (default characters; a cap in UTF-8 bytes counts those). */
    measure?: (text: string) => number;
  };
  /** Read what changed since the session last looked (default true). */
  changes?: boolean;
  /** Leave the hub alone this turn (an agent that takes no team context). */
  offline?: boolean;
  /** Local memory that is news in itself (the shared-context directory), read beside the hub. */
  memory?: readonly TurnMemoryPointer[] | Promise<readonly TurnMemoryPointer[]>;
  /** Memory shown only alongside news (the files the session edited). */
  background?: readonly TurnMemoryPointer[];
  /**
   * Note the changes the built turn kept as injected (default true). False when the adapter
   * injects its own rendering of `changes` instead: it tells the kernel what it showed
   * (`noteInjected`).
   */
  noteInjections?: boolean;
}

export interface BeforeTurnResult<Item> {
  /** The turn context's text for the model ('' when there is nothing new). */
  injection: string;
  /** The built turn's snapshot, or null (no turn built, or the build failed). */
  snapshot: TurnSnapshot | null;
  /** One line for the user: the hub's outage (once), an unusable handoff, a failed build. */
  notice: string | null;
  /** Lines for the log only (a turn snapshot that could not be written). */
  warnings: string[];
  /** The changes shown, the session's own writes left out. */
  changes: Item[];
  /** The bundle, when asked for and the hub answered. */
  bundle: string;
  /** The token budget the bundle was built at: below the one asked for when `maxChars` cut it. */
  bundleTokens: number;
  /** The resume note when `checkpoint` is `last-reply`: the adapter places it. */
  resume: string | null;
  /** Whether the hub answered this turn. */
  fromHub: boolean;
  /** The bundle came from the local cache (the hub did not answer): when the hub gave it. */
  stale: { savedAtMs: number; age: string } | null;
  failure: ContextBuildFailure | null;
}

/** A tool's result as the runtime reports it, for the turn context's tool snippets. */
export interface ToolResultInput {
  /** The runtime's id for the call (unique in the session). */
  id: string;
  tool: string;
  output: string;
  /** The call failed (its error message). */
  error?: string;
}

export interface TurnOutcome {
  /** Whether the turn succeeded (default true). */
  ok?: boolean;
  error?: string;
  /** The session ended (its reason) rather than a turn. */
  ended?: string;
  /** Record the reply's "Decision: ..." lines (default true). */
  decisions?: boolean;
  /** The session's status item for this turn, from the state after it. */
  status?(state: Readonly<SessionState>): ContextItemInput | null;
}

export interface SessionKernel<Item extends SessionItem> {
  beforeTurn(input: BeforeTurnInput): Promise<BeforeTurnResult<Item>>;
  /** Records the turn (decisions, status) through the outbox. Never throws. */
  afterTurn(
    reply: string,
    outcome?: TurnOutcome,
  ): Promise<{ items: ContextItemInput[]; delivered: boolean }>;
  /** Sends the outbox, then `items`; what the hub does not take waits in the outbox. */
  deliver(items: readonly ContextItemInput[]): Promise<boolean>;
  /** Notes a file the session edited (shown to later turns). */
  touchFile(path: string): void;
  /** Notes bus items the adapter put into the turn's context itself, for the hub's analytics. */
  noteInjected(itemIds: readonly string[]): void;
  /** Notes a tool's result (seed 002's source 4: later turns' tool snippets). Never throws. */
  noteTool(result: ToolResultInput): void;
  /** The session's state as saved. */
  state(): SessionState;
}

/** Changes read per turn at most; the rest are counted, not shown. */
export const CHANGES_LIMIT = 100;
/** The session's own messages kept for the chat window, and the characters each keeps. */
export const CHAT_KEPT = 24;
const CHAT_TEXT_MAX = 600;
/** Tool results kept for the turn context, the raw output each keeps, and its summary. */
export const TOOLS_KEPT = 8;
const TOOL_OUTPUT_MAX = 2_000;
const TOOL_SUMMARY_MAX = 200;
/** The share of the turn budget a stale bundle may take (the rest: the local state, the chat). */
const STALE_BUNDLE_SHARE = 0.6;

/** A tool result as kept: its output clipped, its summary one line with the output's size. */
export function toolEntry(result: ToolResultInput): ToolEntry {
  const output = (result.error ? `error: ${result.error}\n${result.output}` : result.output).trim();
  const lines = output === '' ? 0 : output.split('\n').length;
  const head = output.split('\n').find((line) => line.trim() !== '') ?? '(no output)';
  return {
    id: result.id,
    tool: result.tool,
    output: clipText(output, TOOL_OUTPUT_MAX),
    summary: oneLine(`${head} (${lines} lines, ${output.length} chars)`, TOOL_SUMMARY_MAX),
  };
}

/** The state's chat and tools belong to `sessionId`: another session's are cleared. */
function ownSession(state: SessionState, sessionId: string): void {
  if (state.chatSession === sessionId) return;
  state.chatSession = sessionId;
  state.chat = [];
  state.tools = [];
}

/** `text` cut (at line ends where near) until `counter` counts at most `limit` tokens. */
function fitTokens(text: string, limit: number, counter: TokenCounter): string {
  let fitted = text;
  for (let count = counter.count(fitted); count > limit && fitted.length > 1; ) {
    fitted = clipText(fitted, Math.max(1, Math.floor((fitted.length * limit * 0.95) / count)));
    count = counter.count(fitted);
  }
  return fitted;
}

/** Whether the hub refused this runtime (a token it does not know or no longer takes). */
const refused = (error: unknown): boolean => {
  const status = (error as { status?: unknown } | null)?.status;
  return status === 401 || status === 403;
};

const URGENCY_RANK: Record<Urgency, number> = { background: 0, attention: 1, blocking: 2 };

/** Least urgent and oldest first: trimming drops from the front, so the urgent stay longest. */
export function byUrgencyAscending<Item extends SessionItem>(items: readonly Item[]): Item[] {
  return [...items].sort(
    (a, b) => URGENCY_RANK[a.urgency] - URGENCY_RANK[b.urgency] || a.seq - b.seq,
  );
}

/** Most urgent and newest first: the order of a plain list of changes. */
export function byUrgencyDescending<Item extends SessionItem>(items: readonly Item[]): Item[] {
  return [...items].sort(
    (a, b) => URGENCY_RANK[b.urgency] - URGENCY_RANK[a.urgency] || b.seq - a.seq,
  );
}

/** `text` within `max` characters, cut at a line end where one is near. */
export function clipText(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(0, max - 1);
  return `${cut.slice(0, Math.max(cut.lastIndexOf('\n'), max / 2))}\n…`;
}

/** `text` on one line within `max` characters. */
export function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

const errorText = (error: unknown): string =>
  error instanceof Error ? error.message : String(error);

/**
 * Opens a session's kernel: each call reads the session's state file and saves it back, so a
 * runtime whose hook is a process per call keeps its session across calls.
 */
export function openSession<Item extends SessionItem>(
  given: SessionOptions<Item>,
): SessionKernel<Item> {
  const cacheKey = given.hub?.cacheKey;
  const options: SessionOptions<Item> = {
    ...given,
    cache: given.cache === undefined ? (cacheKey ? { key: cacheKey } : null) : given.cache,
  };
  return {
    beforeTurn: (input) => beforeTurn(options, input),
    afterTurn: (reply, outcome) => afterTurn(options, reply, outcome),
    deliver: (items) => deliver(options, items),
    touchFile: (path) => touchFile(options, path),
    noteInjected: (itemIds) => {
      const state = loadState(options);
      addInjected(state, itemIds);
      saveState(options, state);
    },
    noteTool: (result) => noteTool(options, result),
    state: () => loadState(options),
  };
}

// The state file and the outbox.

function loadState(options: SessionOptions<SessionItem>): SessionState {
  return readSessionState(options.stateFile);
}

function saveState(options: SessionOptions<SessionItem>, state: SessionState): void {
  try {
    writeSessionState(options.stateFile, state);
  } catch {
    // state is a convenience; losing it must not fail the turn
  }
}

/** Sends the outbox, then `items`; what the hub does not take waits in the outbox. */
async function deliver(
  { hub, stateDir }: SessionOptions<SessionItem>,
  items: readonly ContextItemInput[],
): Promise<boolean> {
  try {
    if (!hub) {
      queueItems(stateDir, items);
      return false;
    }
    try {
      await flushOutbox(stateDir, (batch) => hub.write(batch));
      if (items.length > 0) await sendOrSetAside(stateDir, [...items], (batch) => hub.write(batch));
      return true;
    } catch {
      queueItems(stateDir, items);
      return false;
    }
  } catch {
    return false; // an unwritable outbox loses the write, never the turn
  }
}

function touchFile(options: SessionOptions<SessionItem>, path: string): void {
  try {
    updateSessionState(options.stateFile, (state) => {
      state.filesTouched = [...state.filesTouched.filter((file) => file !== path), path].slice(-50);
    });
  } catch {
    // state is a convenience; losing it must not fail the tool call
  }
}

function noteTool(options: SessionOptions<SessionItem>, result: ToolResultInput): void {
  try {
    const entry = toolEntry(result);
    updateSessionState(options.stateFile, (state) => {
      ownSession(state, options.sessionId);
      state.tools = [...state.tools.filter((kept) => kept.id !== entry.id), entry].slice(
        -TOOLS_KEPT,
      );
    });
  } catch {
    // a tool snippet is a convenience; it must not fail the tool call
  }
}

/** One message of the session's own chat, kept for the next turns' window. */
function remember(state: SessionState, entry: SessionState['chat'][number]): void {
  const text = clipText(entry.text.trim(), CHAT_TEXT_MAX);
  if (text === '') return;
  state.chat = [...state.chat.filter((kept) => kept.id !== entry.id), { ...entry, text }].slice(
    -CHAT_KEPT,
  );
}

// Failing open: one notice per outage, and the last good bundle while the hub is away.

/** The outage's notice, once: null while the session has been told already. */
function unreachable(state: SessionState, where: string, error: unknown): string | null {
  if (state.warnedUnreachable) return null;
  state.warnedUnreachable = true;
  const why = error === null ? '' : `: ${errorText(error)}`;
  return `ctxbus: hub unreachable (${where})${why}; continuing without shared context`;
}

function nowMs(options: SessionOptions<SessionItem>): number {
  return (options.now ?? (() => new Date()))().getTime();
}

function saveBundle(options: SessionOptions<SessionItem>, text: string): void {
  if (!options.cache) return;
  try {
    writeCachedBundle(
      options.stateDir,
      options.cache.key,
      { text, savedAtMs: nowMs(options) },
      options.cache.maxBytes,
    );
  } catch {
    // the cache is a convenience; an unwritable one must not fail the turn
  }
}

type Stale = BeforeTurnResult<SessionItem>['stale'];

/** The cached bundle into `found`, marked as possibly stale with its age. */
function staleBundle(options: SessionOptions<SessionItem>, found: { bundle: string }): Stale {
  if (!options.cache) return null;
  try {
    const cached = readCachedBundle(options.stateDir, options.cache.key);
    if (!cached) return null;
    const age = ageText(nowMs(options) - cached.savedAtMs);
    found.bundle = `(shared context from ${age}; the hub is unreachable, so it may be out of date)\n${cached.text}`;
    return { savedAtMs: cached.savedAtMs, age };
  } catch {
    return null;
  }
}

// The resume note of a model switch.

/** The pending switch's note, marking it told; a problem becomes a notice. */
function readResume(
  source: ResumeSource | undefined,
  state: SessionState,
  notices: string[],
): string | null {
  if (!source) return null;
  try {
    const seen = source.seen ? source.seen.read() : state.handoffSwitchSeen;
    const pending = source.pending(seen);
    if (!pending) return null;
    if (source.seen) source.seen.write(pending.switchSequence);
    else state.handoffSwitchSeen = pending.switchSequence;
    if ('problem' in pending) {
      notices.push(`ctxbus: the model-switch handoff is unusable: ${pending.problem}`);
      return null;
    }
    return pending.note;
  } catch {
    return null; // the handoff is a convenience; it must not fail the turn
  }
}

// Reading the hub for a turn.

/** What a turn found on the hub (or, failing open, in the bundle cache). */
interface HubRead<Item> {
  changes: Item[];
  bundle: string;
  bundleTokens: number;
  fromHub: boolean;
  stale: Stale;
}

/** What the turn asks the hub for: its changes, and the bundle at a token budget. */
interface HubAsk {
  readChanges: boolean;
  bundle: BeforeTurnInput['bundle'];
  budget: number;
}

function hubAsk(state: SessionState, input: BeforeTurnInput): HubAsk {
  const first = state.lastSeenSeq === 0;
  const { bundle } = input;
  const readChanges = input.changes !== false && !(first && bundle !== undefined);
  const budget = bundle
    ? typeof bundle.tokens === 'function'
      ? bundle.tokens(first)
      : bundle.tokens
    : 0;
  return { readChanges, bundle, budget };
}

/** The turn's hub read, failing open: an outage gives a notice (once) and the cached bundle. */
async function readHub<Item extends SessionItem>(
  options: SessionOptions<Item>,
  state: SessionState,
  input: BeforeTurnInput,
  notices: string[],
): Promise<HubRead<Item>> {
  const found: HubRead<Item> = {
    changes: [],
    bundle: '',
    bundleTokens: 0,
    fromHub: false,
    stale: null,
  };
  const { hub } = options;
  if (input.offline) return found;
  if (!hub) {
    const notice =
      options.hubless === null
        ? null
        : unreachable(state, options.hubless ?? 'no hub configured', null);
    if (notice) notices.push(notice);
    return found;
  }
  const ask = hubAsk(state, input);
  try {
    Object.assign(found, await askHub(options, hub, state, ask), { fromHub: true });
  } catch (error) {
    const notice = unreachable(state, hub.url, error);
    if (notice) notices.push(notice);
    // The last good bundle, when the turn asked for one or the outage starts now.
    if ((ask.bundle || notice) && !refused(error)) found.stale = staleBundle(options, found);
  }
  return found;
}

/** How many reported injections a session keeps waiting for the hub (its per-request limit). */
const INJECTED_KEPT = 100;

/**
 * Tells the hub which bus items turn contexts took (each once: sent ids leave the state);
 * kept for the next try when the hub does not answer. Never fails the turn.
 */
async function reportInjected(hub: SessionHub<SessionItem>, state: SessionState): Promise<void> {
  const sent = state.injected.slice(0, INJECTED_KEPT);
  if (sent.length === 0 || !hub.reportInjections) return;
  try {
    await hub.reportInjections(sent);
    state.injected = state.injected.filter((id) => !sent.includes(id));
  } catch {
    // kept for the next turn
  }
}

/** Notes the bus items a built turn put into its context (whole or summarised). */
function noteInjected<Item extends SessionItem>(
  options: SessionOptions<Item>,
  state: SessionState,
  changes: readonly Item[],
  parts: readonly { source: string; id: string; mode: string }[],
): void {
  const kept = new Set(
    parts.filter((part) => part.source === 'messages' && part.mode !== 'dropped').map((p) => p.id),
  );
  const ids = changes.filter((item) => kept.has(options.message(item).id)).map((item) => item.id);
  addInjected(state, ids);
}

/** Adds items to those waiting to be reported, each once, the newest INJECTED_KEPT kept. */
function addInjected(state: SessionState, itemIds: readonly string[]): void {
  const fresh = [...new Set(itemIds)].filter((id) => !state.injected.includes(id));
  state.injected = [...state.injected, ...fresh].slice(-INJECTED_KEPT);
}

/** Every hub request of a turn at once: the outbox, the changes, the newest sequence, the bundle. */
async function askHub<Item extends SessionItem>(
  options: SessionOptions<Item>,
  hub: SessionHub<Item>,
  state: SessionState,
  { readChanges, bundle, budget }: HubAsk,
): Promise<Pick<HubRead<Item>, 'changes' | 'bundle' | 'bundleTokens'>> {
  const [, page, newest, formatted] = await Promise.all([
    flushOutbox(options.stateDir, (batch) => hub.write(batch)).catch(() => 0),
    readChanges ? hub.changes(state.lastSeenSeq, CHANGES_LIMIT) : [],
    !readChanges || hub.filtered ? hub.newestSeq() : 0,
    bundle ? hub.shared(budget) : '',
    // What earlier turns injected and the hub was not told yet (afterTurn tells it first).
    reportInjected(hub, state),
  ]);
  const fitted = await fitBundle(hub, formatted, budget, bundle?.maxChars, bundle?.measure);
  state.lastSeenSeq = Math.max(state.lastSeenSeq, newest, ...page.map((item) => item.seq));
  state.warnedUnreachable = false;
  const changes = page.filter((item) => !options.own?.(item));
  const text = fitted.text.trim();
  if (text) saveBundle(options, text);
  return { changes, bundle: text, bundleTokens: fitted.budget };
}

/**
 * The bundle within `maxChars`: the budget is in tokens and a runtime's cap may be in
 * characters, so the hub is asked again, smaller, until it fits (three tries).
 */
async function fitBundle(
  hub: SessionHub<SessionItem>,
  formatted: string,
  budget: number,
  maxChars: number | undefined,
  measure: (text: string) => number = (text) => text.length,
): Promise<{ text: string; budget: number }> {
  let text = formatted;
  let fitted = budget;
  for (let attempt = 0; maxChars && measure(text) > maxChars && attempt < 3; attempt++) {
    fitted = Math.floor((fitted * maxChars * 0.9) / measure(text));
    text = await hub.shared(fitted);
  }
  return { text, budget: fitted };
}

// The turn: its context input, its injection.

async function beforeTurn<Item extends SessionItem>(
  options: SessionOptions<Item>,
  input: BeforeTurnInput,
): Promise<BeforeTurnResult<Item>> {
  const state = loadState(options);
  const notices: string[] = [];
  const building = input.prompt !== undefined;
  ownSession(state, options.sessionId);
  if (building) state.prompts += 1;
  const [found, memory] = await Promise.all([
    readHub(options, state, input, notices),
    Promise.resolve(input.memory ?? []).catch(() => []),
  ]);
  const resume = readResume(options.resume, state, notices);
  const result: BeforeTurnResult<Item> = {
    injection: '',
    snapshot: null,
    notice: null,
    warnings: [],
    changes: found.changes,
    bundle: found.bundle,
    bundleTokens: found.bundleTokens,
    resume: options.checkpoint === 'resume' ? null : resume,
    fromHub: found.fromHub,
    stale: found.stale,
    failure: null,
  };
  if (building) buildTurn(options, state, input, { ...found, resume, memory }, result, notices);
  if (building && input.prompt) {
    remember(state, { id: `in:${state.prompts}`, direction: 'inbound', text: input.prompt });
  }
  result.notice = notices.length > 0 ? notices.join('\n') : null;
  saveState(options, state);
  return result;
}

/** What goes into a turn's context beside the session's state. */
interface TurnParts<Item> {
  changes: Item[];
  bundle: string;
  stale: Stale;
  /** The resume note: in the turn's context when `checkpoint` is `resume`. */
  resume: string | null;
  memory: readonly TurnMemoryPointer[];
}

/**
 * Builds and records the turn's context into `result`: its injection when there is news, or
 * the adapter's plain fallback (and a notice) when the build fails.
 */
function buildTurn<Item extends SessionItem>(
  options: SessionOptions<Item>,
  state: SessionState,
  input: BeforeTurnInput,
  parts: TurnParts<Item>,
  result: BeforeTurnResult<Item>,
  notices: string[],
): void {
  const inTurn = options.checkpoint === 'resume' ? parts.resume : null;
  const log = options.turnLog ?? { dataDir: null, snapshots: false };
  const turnId = input.turnId ?? `prompt-${state.prompts}`;
  const counter = log.counter ?? estimateTokenCounter;
  const built = recordTurn({
    input: turnInput(options, state, input, { ...parts, resume: inTurn }, turnId, counter),
    counter,
    now: () => nowMs(options),
    dataDir: log.dataDir,
    snapshots: log.snapshots,
  });
  if (built.writeError) {
    result.warnings.push(`ctxbus: turn snapshot not written: ${built.writeError}`);
  }
  const { changes, bundle, memory } = parts;
  const news = changes.length > 0 || bundle !== '' || memory.length > 0 || inTurn !== null;
  if (built.ok) {
    result.snapshot = built.context.snapshot;
    if (news) {
      result.injection = built.context.injection;
      if (input.noteInjections !== false) {
        noteInjected(options, state, changes, built.context.parts);
      }
    }
    return;
  }
  const { message, nextAction } = built.failure;
  result.failure = built.failure;
  notices.push(`ctxbus: context_build_error (turn failed): ${message}; next: ${nextAction}`);
  result.injection = options.fallback({ resume: inTurn, changes, bundle, memory });
}

/** Seed 002's turn context input: the session's chat and tools, the bus's changes, memory. */
function turnInput<Item extends SessionItem>(
  options: SessionOptions<Item>,
  state: SessionState,
  input: BeforeTurnInput,
  parts: TurnParts<Item>,
  turnId: string,
  counter: TokenCounter,
): TurnContextInput {
  return {
    agentId: options.agentId,
    sessionId: options.sessionId,
    turnId,
    tokenizer: counter.name,
    budgets: {
      maxContextTokens: options.budget.maxContextTokens,
      maxRecentMessages: options.budget.maxRecentMessages,
      maxToolSnippetTokens: options.budget.maxToolSnippetTokens ?? 400,
    },
    sources: {
      recentMessages: recentMessages(options, state, parts.changes),
      runtimeState: runtimeState(options, state, parts.resume),
      memoryPointers: [
        ...bundlePointer(options, parts, counter),
        ...parts.memory,
        ...(input.background ?? []),
      ],
      toolSnippets: state.tools.map((tool) => ({ ...tool, held: true })),
      currentInput: { id: turnId, sender: { id: 'user', kind: 'human' }, text: input.prompt ?? '' },
    },
  };
}

type TurnSources = TurnContextInput['sources'];

/**
 * The session's own prompts and replies (already in the runtime's transcript: held), then what
 * changed on the bus since its last prompt, least urgent first.
 */
function recentMessages<Item extends SessionItem>(
  options: SessionOptions<Item>,
  state: SessionState,
  changes: readonly Item[],
): TurnSources['recentMessages'] {
  return [
    ...state.chat.map((entry) => ({
      id: entry.id,
      direction: entry.direction,
      sender: { id: entry.direction === 'inbound' ? 'user' : options.agentId },
      text: entry.text,
      held: true,
    })),
    ...byUrgencyAscending(changes).map((item) => {
      const { id, sender, text } = options.message(item);
      return { id, direction: 'inbound' as const, sender: { id: sender }, text };
    }),
  ];
}

/** The checkpoint (the resume note or the last reply), the outbox's backlog, the last outcome. */
function runtimeState(
  options: SessionOptions<SessionItem>,
  state: SessionState,
  resume: string | null,
): TurnSources['runtimeState'] {
  const pending = pendingCount(options.stateDir);
  const checkpoint =
    options.checkpoint === 'resume'
      ? resume
      : state.lastReply && `turn ${state.turns}: ${state.lastReply}`;
  return {
    ...(checkpoint && { lastCheckpointSummary: checkpoint }),
    ...(pending > 0 && { pendingQueueSummary: `${pending} writes wait for the hub` }),
    ...(state.lastOutcome && { lastTerminalStatus: state.lastOutcome }),
  };
}

/** The team's bundle as a memory pointer; a stale one cut to its share of the budget. */
function bundlePointer(
  options: SessionOptions<SessionItem>,
  { bundle, stale }: Pick<TurnParts<SessionItem>, 'bundle' | 'stale'>,
  counter: TokenCounter,
): TurnMemoryPointer[] {
  if (!bundle) return [];
  const share = Math.floor(options.budget.maxContextTokens * STALE_BUNDLE_SHARE);
  return [{ id: 'team-bundle', text: stale !== null ? fitTokens(bundle, share, counter) : bundle }];
}

// After the turn.

async function afterTurn<Item extends SessionItem>(
  options: SessionOptions<Item>,
  reply: string,
  outcome: TurnOutcome = {},
): Promise<{ items: ContextItemInput[]; delivered: boolean }> {
  const state = loadState(options);
  let items: ContextItemInput[] = [];
  try {
    ownSession(state, options.sessionId);
    recordOutcome(state, reply, outcome);
    const decisions =
      outcome.decisions === false || outcome.ended !== undefined
        ? []
        : extractDecisions(reply).map((text) => options.decision(text));
    const status = outcome.status?.(state) ?? null;
    items = [...decisions, ...(status ? [status] : [])];
    const [delivered] = await Promise.all([
      deliver(options, items),
      options.hub ? reportInjected(options.hub, state) : undefined,
    ]);
    return { items, delivered };
  } catch {
    return { items, delivered: false };
  } finally {
    saveState(options, state);
  }
}

/** The turn's count, its reply (first line, and into the chat window) and its outcome. */
function recordOutcome(state: SessionState, reply: string, outcome: TurnOutcome): void {
  state.turns += 1;
  if (outcome.ended !== undefined) {
    state.lastOutcome = `session ended (${outcome.ended})`;
    return;
  }
  const first = reply.split('\n').find((line) => line.trim() !== '') ?? 'working';
  state.lastReply = clipText(first, 300);
  remember(state, { id: `out:${state.turns}`, direction: 'outbound', text: reply });
  state.lastOutcome =
    outcome.ok === false
      ? `last turn failed: ${oneLine(outcome.error ?? 'unknown error', 200)}`
      : 'last turn completed';
}

export {
  BUNDLE_CACHE_MAX_BYTES,
  bundleCacheFile,
  bundleCacheKey,
  readCachedBundle,
} from './bundle-cache.js';
export type { ChatEntry, SessionState, ToolEntry } from './session-state.js';
export {
  readSessionState,
  SESSION_MAX_AGE_MS,
  SESSIONS_KEPT,
  workspaceResumeSeen,
  writeSessionFile,
  writeSessionState,
} from './session-state.js';
