import type { CtxbusClient } from '@ctxbus/client';
import type { SessionHub, SessionKernel } from '@ctxbus/client/session';
import { bundleCacheKey, byUrgencyDescending, oneLine, openSession } from '@ctxbus/client/session';
import type { ContextItem, ContextItemInput } from '@ctxbus/core/contract';
import type { TokenCounter } from '@ctxbus/core/light';
import { extractDecisions, stableId } from '@ctxbus/core/light';
import { agentStateFile } from './agent-state.js';
import { blockSession } from './context-engine.js';
import { readLiveState } from './live-state.js';
import type {
  AfterToolCallEvent,
  AgentEndEvent,
  AgentHookContext,
  BeforeMessageWriteEvent,
  BeforeMessageWriteResult,
  BeforePromptBuildEvent,
  BeforePromptBuildResult,
  PluginLogger,
  ToolHookContext,
} from './openclaw-sdk.js';
import type { AgentSettings, ResolvedConfig } from './plugin-config.js';
import { handoffResume } from './resume-note.js';
import { readSentBlocks, recordSentBlock, withSentBlocks } from './sent-blocks.js';

/** The agent id OpenClaw's default agent has, used when a hook context names none. */
export const DEFAULT_AGENT_ID = 'main';
const UPDATE_ITEMS = 12;
/** The "changed since your last turn" list takes at most this share of the budget. */
const UPDATES_SHARE = 0.3;
/**
 * A later turn of a session carries only what changed since the last, within this share of the
 * budget: the session's first block (the bundle) stays in its history, unchanged (issue 29).
 */
const LATER_TURN_SHARE = 0.1;
export const BLOCK_OPEN = '<team-context source="ctxbus">';
const BLOCK_CLOSE = '</team-context>';

/** `text` with the block's own tags made inert (`<\/team-context>`), so none closes it. */
function inertTags(text: string): string {
  return text.replace(/<(\/?)team-context/gi, '<\\$1team-context');
}
/** Raw tool output a turn context keeps (seed 002's maxToolSnippetTokens), as a budget share. */
const TOOL_SNIPPET_SHARE = 0.15;
/**
 * The hub counts the bundle in exact o200k tokens; the turn builder here estimates (3.5
 * characters a token, about 15% above o200k for English), so the bundle is asked for at this
 * share of what it may take, and fits the builder's budget without being trimmed.
 */
const ESTIMATE_HEADROOM = 0.85;

/**
 * Tokens of a text, estimated on the safe side (3.5 characters a token; English under o200k_base
 * averages about 4). The hub counts its bundle exactly; the plugin only sizes the short list it
 * puts before it, and skipping the tokenizer keeps the plugin a fraction of its size.
 */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 3.5);
}

export interface HookDeps {
  /** The hub, or null when no token is configured. */
  client: CtxbusClient | null;
  config: ResolvedConfig;
  logger: PluginLogger;
  now: () => Date;
  /** Local text to inject whatever the hub does (the shared-context directory's priorities). */
  localContext?: () => Promise<string | null>;
  /** The turn builder's token counter (default: the estimate, which keeps the tokenizer out). */
  turnCounter?: TokenCounter;
  /**
   * Whether OpenClaw's selected context engine is ctxbus's (context-engine.ts), which shows each
   * earlier user message with the block it was sent with, whatever the history holds.
   */
  contextEngine?: boolean;
}

/** Static guidance, sent as system context so providers can cache it. */
export const TOOL_GUIDE = [
  'ctxbus shares context between the agents of this team (other OpenClaw agents, Claude Code, the web UI).',
  'Record what others should know with context_write (decisions, discoveries, status, requests); find things with context_search and context_read; keep long-lived knowledge under path-like keys with memory_query and memory_write.',
  "Share the swarm's scratch (task results, notes, created URLs, active routines, completed tasks) on the blackboard with update_swarm_shared_state; keep what the team will reuse as typed resources (notes, routines, API records, knowledge) with resource_manage.",
  'For work you cannot do here (run tests or commands, touch files on a machine), call capability_request: the hub routes it to a runtime that can and you get the result.',
  'A line "Decision: ..." in your reply is recorded as a team decision.',
].join('\n');

export function agentOf(context: { agentId?: string | undefined }): string {
  return context.agentId?.trim() || DEFAULT_AGENT_ID;
}

export function agentSettings(config: ResolvedConfig, agentId: string): AgentSettings {
  return config.agents[agentId] ?? {};
}

function updateLine(item: ContextItem): string {
  const urgency = item.urgency === 'background' ? '' : `[${item.urgency}] `;
  const summary = item.summary && item.summary !== item.title ? `: ${item.summary}` : '';
  const who = item.source.agentId
    ? `${item.source.runtime}/${item.source.agentId}`
    : item.source.runtime;
  return `- ${urgency}${oneLine(`${item.title}${summary}`, 240)} (${item.type} from ${who})`;
}

/** Items that changed since the agent's last turn, most urgent and newest first, within `maxTokens`. */
function updatesSection(
  items: readonly ContextItem[],
  maxTokens: number,
): { text: string; shown: ContextItem[] } {
  const none = { text: '', shown: [] };
  if (items.length === 0) return none;
  const ordered = byUrgencyDescending(items);
  const lines = ['Changed since your last turn:'];
  let used = estimateTokens(lines[0] as string);
  const shown: ContextItem[] = [];
  for (const item of ordered.slice(0, UPDATE_ITEMS)) {
    const line = updateLine(item);
    const cost = estimateTokens(line) + 1;
    if (used + cost > maxTokens) break;
    lines.push(line);
    used += cost;
    shown.push(item);
  }
  if (shown.length === 0) return none;
  if (items.length > shown.length) {
    lines.push(`- …and ${items.length - shown.length} more (context_read)`);
  }
  return { text: lines.join('\n'), shown };
}

export interface TurnContext {
  /** What goes before the prompt (prependContext). */
  text: string;
  /** Its size in tokens, estimated (see estimateTokens). */
  tokens: number;
  /** Whether the hub answered (false: only local context, or none). */
  fromHub: boolean;
  /** The turn context's hash (seed 002), or null when the build failed and the plain parts went in. */
  contextHash: string | null;
}

/** The hub as the session kernel reads it for one agent (its watched tags, if any). */
function sessionHub(
  client: CtxbusClient,
  config: ResolvedConfig,
  settings: AgentSettings,
): SessionHub<ContextItem> {
  const tags = settings.watchTags;
  return {
    url: client.url,
    // The last good bundle is kept per runtime and token (one team), beside the agents' state.
    ...(config.token && { cacheKey: bundleCacheKey('openclaw', config.token) }),
    filtered: Boolean(tags),
    changes: async (since, limit) =>
      (await client.list({ since, limit, ...(tags && { tags }) })).items,
    newestSeq: async () => (await client.list({ limit: 1 })).items[0]?.seq ?? 0,
    shared: async (tokenBudget) =>
      (await client.shared({ runtime: 'openclaw', tokenBudget })).formatted,
    write: async (items) => {
      await client.write([...items]);
    },
    reportInjections: async (itemIds) => {
      await client.reportInjections(itemIds);
    },
  };
}

/** The decision item a "Decision: ..." line of an agent's reply records (a stable id). */
function decisionItem(
  deps: HookDeps,
  agentId: string,
  thread: string | undefined,
  decision: string,
): ContextItemInput {
  const tags = [...new Set(['openclaw', ...(agentSettings(deps.config, agentId).tags ?? [])])];
  return {
    id: stableId('openclaw-decision', agentId, thread ?? '', decision),
    type: 'decision',
    title: decision.length > 120 ? `${decision.slice(0, 117)}…` : decision,
    content: decision,
    source: { agentId, ...(thread && { threadId: thread.slice(0, 200) }) },
    relevanceTags: tags,
  };
}

/** The session kernel for one session of an OpenClaw agent: its state file, outbox and handoff. */
export function agentSession(
  deps: HookDeps,
  agentId: string,
  turn: { sessionId?: string; workspaceDir?: string } = {},
): SessionKernel<ContextItem> {
  const { client, config, logger } = deps;
  const settings = agentSettings(config, agentId);
  const { workspaceDir } = turn;
  // What the live push already queued into this session is not news to it either.
  const pushed = new Set(readLiveState(config.stateDir).delivered[turn.sessionId ?? ''] ?? []);
  return openSession<ContextItem>({
    hub: client ? sessionHub(client, config, settings) : null,
    stateDir: config.stateDir,
    stateFile: agentStateFile(config.stateDir, agentId, turn.sessionId),
    agentId,
    sessionId: turn.sessionId ?? agentId,
    now: deps.now,
    turnLog: {
      dataDir: config.turnLog.dataDir,
      snapshots: config.turnLog.snapshots,
      ...(deps.turnCounter && { counter: deps.turnCounter }),
    },
    budget: {
      maxContextTokens: config.tokenBudget,
      maxRecentMessages: UPDATE_ITEMS,
      maxToolSnippetTokens: Math.floor(config.tokenBudget * TOOL_SNIPPET_SHARE),
    },
    message: (item) => ({
      id: item.id,
      sender: item.source.agentId
        ? `${item.source.runtime}/${item.source.agentId}`
        : item.source.runtime,
      text: updateLine(item).slice(2),
    }),
    own: (item) =>
      (item.source.runtime === 'openclaw' && item.source.agentId === agentId) ||
      pushed.has(item.id),
    decision: (decision) => decisionItem(deps, agentId, turn.sessionId, decision),
    // The first turn after a model switch starts with whose work it continues (seed 003).
    checkpoint: 'resume',
    ...(workspaceDir && {
      resume: { pending: (seen: number) => handoffResume(workspaceDir, seen, logger) },
    }),
    // The registration warned once already that no token is configured.
    hubless: null,
    fallback: ({ resume, changes, bundle, memory }) =>
      [
        resume ?? '',
        updatesSection(changes, config.tokenBudget - estimateTokens(bundle) - 8).text,
        bundle,
        ...memory.map((pointer) => pointer.text),
      ]
        .filter((part) => part !== '')
        .join('\n\n'),
  });
}

/**
 * The context one agent turn starts with, from the session kernel (seed 002's turn context):
 * the bus's changes since the agent's last turn as the chat window (without its own writes),
 * the session's state (the handoff's resume note as the latest checkpoint, the outbox, how the
 * last turn ended), the team's shared bundle and the local shared-context priorities as memory,
 * and the prompt; all within the token budget, trimmed oldest change first. Recorded under the
 * data directory when `turnSnapshots` is on. Never throws: a slow or absent hub means no hub
 * context (and one warning until it answers again); a failed build is logged as a
 * `context_build_error` with its next action, audited, and the parts go in unbuilt.
 */
export async function buildTurnContext(
  deps: HookDeps,
  agentId: string,
  workspaceDir?: string,
  turn: { prompt?: string; sessionId?: string; runId?: string; later?: boolean } = {},
): Promise<TurnContext> {
  const { config, logger } = deps;
  const local = safeLocal(deps);
  const session = agentSession(deps, agentId, {
    ...(turn.sessionId && { sessionId: turn.sessionId }),
    ...(workspaceDir && { workspaceDir }),
  });
  const bundleShare = (first: boolean) =>
    Math.floor(config.tokenBudget * (first ? 1 : 1 - UPDATES_SHARE) * ESTIMATE_HEADROOM);
  const result = await session.beforeTurn({
    prompt: turn.prompt ?? '',
    ...(turn.runId && { turnId: turn.runId }),
    offline: agentSettings(config, agentId).inject === false,
    // A later turn shows its own list of the changes (below), and notes what it showed.
    noteInjections: !turn.later,
    // A later turn of a session: its history holds the first bundle; only the changes are news.
    ...(!turn.later && {
      // The bundle leaves room for the changes after the first turn.
      bundle: { tokens: bundleShare },
      memory: local.then((text) =>
        text?.trim() ? [{ id: 'shared-context', text: text.trim() }] : [],
      ),
    }),
  });
  for (const line of [...(result.notice?.split('\n') ?? []), ...result.warnings]) logger.warn(line);
  const wrapper = estimateTokens(`${BLOCK_OPEN}\n\n${BLOCK_CLOSE}`);
  let text = result.injection;
  if (turn.later) {
    const budget = Math.floor(config.tokenBudget * LATER_TURN_SHARE) - wrapper;
    const updates = updatesSection(result.changes, budget);
    text = updates.text;
    // What this turn showed of the changes, for the hub's analytics (not the kernel's build).
    session.noteInjected(updates.shown.map((item) => item.id));
  }
  return {
    text,
    tokens: text ? estimateTokens(text) : 0,
    fromHub: result.fromHub,
    contextHash: result.snapshot?.contextHash ?? null,
  };
}

/** The local context, started at once and never failing the turn. */
async function safeLocal(deps: HookDeps): Promise<string | null> {
  try {
    return (await deps.localContext?.()) ?? null;
  } catch (error) {
    deps.logger.warn(`ctxbus: shared-context directory unreadable: ${(error as Error).message}`);
    return null;
  }
}

/** Whether the session's history already holds a team-context block: this is a later turn. */
export function injectedBefore(messages: readonly unknown[] | undefined): boolean {
  return (messages ?? []).some(
    (message) =>
      (message as { role?: unknown } | null)?.role === 'user' &&
      messageText(message).includes(BLOCK_OPEN),
  );
}

/**
 * `before_prompt_build`: the tool guide in the system prompt (static, cacheable) and the team
 * context before the prompt. The session's first turn gets the whole turn context; a later turn
 * (its history holds a block already) only what changed since, within 10% of the budget. Each
 * block is written into the history with its prompt (before_message_write), so every turn's
 * request starts with what the last one sent.
 */
export async function beforePromptBuild(
  deps: HookDeps,
  context: AgentHookContext,
  event?: BeforePromptBuildEvent,
): Promise<BeforePromptBuildResult> {
  const session = context.sessionKey ?? context.sessionId;
  const blocksOf = blockSession(context);
  const later = injectedBefore(event?.messages) || sentBefore(deps, blocksOf, event?.messages);
  const turn = await buildTurnContext(deps, agentOf(context), context.workspaceDir, {
    ...(event && { prompt: event.prompt }),
    ...(session && { sessionId: session }),
    ...(context.runId && { runId: context.runId }),
    later,
  });
  // What the block holds is the team's data: nothing in it may close the block early.
  const block = turn.text ? `${BLOCK_OPEN}\n${inertTags(turn.text)}\n${BLOCK_CLOSE}` : '';
  // What each turn got, for `openclaw gateway run --verbose` (a turn without news has no block).
  deps.logger.debug?.(
    `ctxbus: turn of ${session ?? agentOf(context)}: ${later ? 'a later turn' : 'a first turn'}, ${turn.fromHub ? 'hub read' : 'no hub read'}, block of ${turn.tokens} tokens`,
  );
  // OpenClaw sends prependContext before this turn's prompt but writes the bare prompt to the
  // session's history: the block waits here for before_message_write, which persists it.
  injected.set(historyKey(context), { block, prompt: event?.prompt ?? '' });
  // Through the gateway the history's user message is written before this hook and keeps the
  // bare prompt; the ctxbus context engine shows it with this block in later requests.
  if (deps.contextEngine && blocksOf && block && event?.prompt) {
    try {
      recordSentBlock(deps.config.stateDir, blocksOf, { prompt: event.prompt, block });
    } catch (error) {
      deps.logger.warn(`ctxbus: the turn's block was not recorded: ${(error as Error).message}`);
    }
  }
  return {
    prependSystemContext: TOOL_GUIDE,
    ...(block && { prependContext: block }),
  };
}

/**
 * Whether the session's history holds a user message the ctxbus context engine will show with
 * the block it was sent with (a gateway turn's history holds the bare prompt): a later turn.
 */
function sentBefore(
  deps: HookDeps,
  session: string | undefined,
  messages: readonly unknown[] | undefined,
): boolean {
  if (!deps.contextEngine || !session || !messages?.length) return false;
  const blocks = readSentBlocks(deps.config.stateDir, session);
  return blocks.length > 0 && withSentBlocks(messages, blocks, BLOCK_OPEN).matched > 0;
}

/** What before_prompt_build injected, per session, until the turn's user message is written. */
const injected = new Map<string, { block: string; prompt: string }>();

function historyKey(context: { agentId?: string | undefined; sessionKey?: string | undefined }) {
  return `${agentOf(context)}\u0000${context.sessionKey ?? ''}`;
}

/**
 * `before_message_write`: the turn's user message goes into the session's history exactly as
 * the model got it (the team-context block, a blank line, the prompt), so the next turn's
 * request starts with what this one sent (the provider's prompt cache stays warm).
 */
export function beforeMessageWrite(
  event: BeforeMessageWriteEvent,
  context: { agentId?: string; sessionKey?: string },
): BeforeMessageWriteResult | undefined {
  const message = event.message as { role?: unknown; content?: unknown } | null;
  if (message?.role !== 'user') return undefined;
  const key = historyKey({
    agentId: event.agentId ?? context.agentId,
    sessionKey: event.sessionKey ?? context.sessionKey,
  });
  const turn = injected.get(key);
  // Only the prompt the block was made for: through the gateway a turn's user message is written
  // when the turn is admitted, before its before_prompt_build, so the message written then is
  // the next turn's and must not get this turn's block (the ctxbus engine restores the blocks).
  if (turn?.prompt && !messageText(message).trimEnd().endsWith(turn.prompt.trimEnd()))
    return undefined;
  injected.delete(key);
  const block = turn?.block;
  if (!block) return undefined;
  const { content } = message;
  if (typeof content === 'string')
    return { message: { ...message, content: `${block}\n\n${content}` } };
  if (!Array.isArray(content)) return undefined;
  let done = false;
  const next = content.map((part) => {
    if (
      done ||
      part === null ||
      typeof part !== 'object' ||
      (part as { type?: unknown }).type !== 'text'
    )
      return part;
    done = true;
    return { ...part, text: `${block}\n\n${(part as { text: string }).text}` };
  });
  return done ? { message: { ...message, content: next } } : undefined;
}

/** The text of a message in OpenClaw's transcript (string content or text blocks). */
function messageText(message: unknown): string {
  if (message === null || typeof message !== 'object') return '';
  const content = (message as { content?: unknown }).content;
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((block) =>
      block !== null &&
      typeof block === 'object' &&
      (block as { type?: unknown }).type === 'text' &&
      typeof (block as { text?: unknown }).text === 'string'
        ? (block as { text: string }).text
        : '',
    )
    .filter((text) => text !== '')
    .join('\n');
}

/** The turn's final reply: the last assistant message with text. */
export function lastAssistantText(messages: readonly unknown[]): string {
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message = messages[index];
    if ((message as { role?: unknown } | null)?.role !== 'assistant') continue;
    const text = messageText(message).trim();
    if (text) return text;
  }
  return '';
}

/** The agent's status after a turn: how it ended and the reply's first lines, keyed per agent. */
function statusItem(
  deps: HookDeps,
  event: AgentEndEvent,
  context: AgentHookContext,
  turn: number,
): ContextItemInput {
  const agentId = agentOf(context);
  const settings = agentSettings(deps.config, agentId);
  const thread = context.sessionKey ?? context.sessionId;
  const runRef = event.runId ?? context.runId ?? `${thread ?? 'session'}#${turn}`;
  const tags = [...new Set(['openclaw', ...(settings.tags ?? [])])];
  const reply = lastAssistantText(event.messages);
  const outcome = event.success
    ? 'Turn completed.'
    : `Turn failed: ${oneLine(event.error ?? 'unknown error', 300)}`;
  const firstLines = reply ? `\n\nLast reply: ${oneLine(reply, 600)}` : '';
  return {
    id: stableId('openclaw-status', agentId, runRef),
    type: 'status',
    title: `OpenClaw agent ${agentId}`,
    content: `${outcome}${firstLines}`,
    key: `sessions/openclaw/${agentId.replace(/[^A-Za-z0-9._-]/g, '_')}`,
    source: { agentId, ...(thread && { threadId: thread.slice(0, 200) }) },
    relevanceTags: [...tags, 'session'],
    ...(!event.success && { urgency: 'attention' as const }),
    expiresAfterSeconds: 7 * 24 * 3600,
  };
}

/**
 * What a finished turn leaves on the bus: its explicit decisions and the agent's status (how the
 * turn ended, the reply's first lines), keyed per agent so the newest supersedes the last.
 * Ids derive from the agent, session and run, so recording a turn twice stores it once.
 */
export function turnItems(
  deps: HookDeps,
  event: AgentEndEvent,
  context: AgentHookContext,
  turn: number,
): ContextItemInput[] {
  const agentId = agentOf(context);
  const thread = context.sessionKey ?? context.sessionId;
  const decisions = deps.config.captureDecisions
    ? extractDecisions(lastAssistantText(event.messages)).map((decision) =>
        decisionItem(deps, agentId, thread, decision),
      )
    : [];
  return [...decisions, statusItem(deps, event, context, turn)];
}

/**
 * Sends what is waiting in the outbox, then `items`; whatever the hub does not take waits in the
 * outbox (one JSON line per item, crash-safe by rename) for the next turn.
 */
export async function deliver(deps: HookDeps, items: ContextItemInput[]): Promise<boolean> {
  return agentSession(deps, DEFAULT_AGENT_ID).deliver(items);
}

/** `agent_end`: records the turn through the outbox. Never throws. */
export async function agentEnd(
  deps: HookDeps,
  event: AgentEndEvent,
  context: AgentHookContext,
): Promise<void> {
  const thread = context.sessionKey ?? context.sessionId;
  const session = agentSession(deps, agentOf(context), { ...(thread && { sessionId: thread }) });
  await session.afterTurn(lastAssistantText(event.messages), {
    ok: event.success,
    ...(event.error !== undefined && { error: event.error }),
    decisions: deps.config.captureDecisions,
    status: (state) => statusItem(deps, event, context, state.turns),
  });
}

/** A tool result's text: its text blocks (`{ content: [{ type: 'text', text }] }`), or its JSON. */
export function toolResultText(result: unknown): string {
  if (typeof result === 'string') return result;
  if (result === null || result === undefined) return '';
  const content = (result as { content?: unknown }).content;
  if (Array.isArray(content)) return messageText({ content });
  if (typeof content === 'string') return content;
  return JSON.stringify(result).slice(0, 4_000);
}

/**
 * `after_tool_call`: the result goes to the session's tool snippets (seed 002's source 4), for
 * the agent's next turns. Synchronous and never throwing: the host does not wait for it.
 */
export function afterToolCall(
  deps: HookDeps,
  event: AfterToolCallEvent,
  context: ToolHookContext,
): void {
  const thread = context.sessionKey ?? context.sessionId;
  const session = agentSession(deps, agentOf(context), { ...(thread && { sessionId: thread }) });
  const output = toolResultText(event.result).slice(0, 8_000);
  session.noteTool({
    id: event.toolCallId ?? context.toolCallId ?? stableId(event.toolName, output),
    tool: event.toolName,
    output,
    ...(event.error !== undefined && { error: event.error }),
  });
}
