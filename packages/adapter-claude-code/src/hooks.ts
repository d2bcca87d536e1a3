import { basename } from 'node:path';
import type { HubApi, HubItem } from '@ctxbus/client/light';
import { flushOutbox, pendingCount, queueItems } from '@ctxbus/client/outbox';
import { recordTurn } from '@ctxbus/client/turn-log';
import type { ContextItemInput } from '@ctxbus/core/contract';
import type { TokenCounter, TurnContextInput } from '@ctxbus/core/light';
import { estimateTokenCounter, extractDecisions, stableId } from '@ctxbus/core/light';
import { pendingResume } from '@ctxbus/handoff/light';
import type { HookInput } from './hook-input.js';
import type { SessionState } from './session-state.js';
import {
  readHandoffSeen,
  readSessionState,
  writeHandoffSeen,
  writeSessionState,
} from './session-state.js';

/** Claude Code caps injected hook output at 10,000 characters; stay clear of it. */
export const MAX_INJECTED_CHARS = 9_500;
/** The shared context's default budget for a session start. */
export const SESSION_START_TOKEN_BUDGET = 2_000;
const PROMPT_UPDATE_ITEMS = 12;
/**
 * The turn context's budget, in estimated tokens (3.5 characters each: the hook never loads the
 * o200k tokenizer, and Claude Code's cap is in characters anyway): about 8,400 characters.
 */
export const PROMPT_TOKEN_BUDGET = 2_400;
/** The agent id Claude Code's turn contexts are recorded under (`<data>/agents/claude-code/`). */
export const TURN_AGENT_ID = 'claude-code';

/** Seed 002's local turn log: snapshots when enabled; a failed build is always audited. */
export interface TurnLogOptions {
  /** The ctxbus data directory, or null to write nothing. */
  dataDir: string | null;
  snapshots: boolean;
  /** The token counter (default: the estimate, which keeps the tokenizer out of the hook). */
  counter?: TokenCounter;
}

export interface HookContext {
  /** The hub, or null when no URL/token is configured. */
  client: HubApi | null;
  stateDir: string;
  now: () => Date;
  turnLog?: TurnLogOptions;
}

/** What the hook prints: context for the model, and/or a one-line notice for the user. */
export interface HookOutput {
  additionalContext?: string;
  systemMessage?: string;
}

const TOOL_HINT =
  'Share what others should know with the ctxbus MCP tools (mcp__ctxbus__context_write, context_search, memory_write). A line "Decision: ..." in your reply is recorded as a team decision.';

function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(0, max - 1);
  return `${cut.slice(0, Math.max(cut.lastIndexOf('\n'), max / 2))}\n…`;
}

const URGENCY_RANK = { background: 0, attention: 1, blocking: 2 } as const;

async function send(client: HubApi, items: ContextItemInput[]): Promise<void> {
  await client.write(items);
}

/** Flushes the outbox, then sends `items`, queueing them when the hub is unreachable. */
async function deliver(context: HookContext, items: ContextItemInput[]): Promise<boolean> {
  const { client } = context;
  if (!client) {
    queueItems(context.stateDir, items);
    return false;
  }
  try {
    await flushOutbox(context.stateDir, (batch) => send(client, batch));
    if (items.length > 0) await send(client, items);
    return true;
  } catch {
    queueItems(context.stateDir, items);
    return false;
  }
}

function unreachable(context: HookContext, state: SessionState): HookOutput {
  if (state.warnedUnreachable) return {};
  state.warnedUnreachable = true;
  const where = context.client
    ? context.client.url
    : 'no hub configured (CTXBUS_URL, CTXBUS_TOKEN)';
  return { systemMessage: `ctxbus: hub unreachable (${where}); continuing without shared context` };
}

async function newestSeq(client: HubApi): Promise<number> {
  const items = await client.list(0, 1);
  return items[0]?.seq ?? 0;
}

async function sessionStart(context: HookContext, state: SessionState): Promise<HookOutput> {
  const { client } = context;
  if (!client) return unreachable(context, state);
  try {
    await flushOutbox(context.stateDir, (batch) => send(client, batch)).catch(() => 0);
    let budget = SESSION_START_TOKEN_BUDGET;
    let bundle = await client.shared(budget);
    // The budget is in tokens and the cap in characters: shrink until the text fits.
    for (let attempt = 0; bundle.formatted.length > MAX_INJECTED_CHARS && attempt < 3; attempt++) {
      budget = Math.floor((budget * MAX_INJECTED_CHARS * 0.9) / bundle.formatted.length);
      bundle = await client.shared(budget);
    }
    state.lastSeenSeq = Math.max(state.lastSeenSeq, await newestSeq(client));
    state.warnedUnreachable = false;
    return { additionalContext: clip(`${bundle.formatted}\n\n${TOOL_HINT}`, MAX_INJECTED_CHARS) };
  } catch {
    return unreachable(context, state);
  }
}

function updateLine(item: HubItem): string {
  const urgency = item.urgency === 'background' ? '' : `[${item.urgency}] `;
  const summary = item.summary && item.summary !== item.title ? `: ${item.summary}` : '';
  return `- ${urgency}**${item.title}**${summary} _(${item.type} from ${item.source.runtime})_`;
}

/** The prompt's turn context inputs (seed 002): the bus's news as the chat window, the session's state. */
function promptTurnInput(
  input: Extract<HookInput, { hook_event_name: 'UserPromptSubmit' }>,
  state: SessionState,
  items: readonly HubItem[],
  pending: number,
): TurnContextInput {
  // Least urgent and oldest first: trimming drops from the front, so the urgent stay longest.
  const ordered = [...items].sort(
    (a, b) => URGENCY_RANK[a.urgency] - URGENCY_RANK[b.urgency] || a.seq - b.seq,
  );
  return {
    agentId: TURN_AGENT_ID,
    sessionId: input.session_id,
    turnId: `prompt-${state.prompts}`,
    tokenizer: estimateTokenCounter.name,
    budgets: {
      maxContextTokens: PROMPT_TOKEN_BUDGET,
      maxRecentMessages: PROMPT_UPDATE_ITEMS,
      maxToolSnippetTokens: 0,
    },
    sources: {
      recentMessages: ordered.map((item) => ({
        id: `#${item.seq}`,
        direction: 'inbound',
        sender: { id: item.source.runtime },
        text: updateLine(item).slice(2),
      })),
      runtimeState: {
        ...(state.lastReply && {
          lastCheckpointSummary: `turn ${state.turns}: ${state.lastReply}`,
        }),
        ...(pending > 0 && { pendingQueueSummary: `${pending} writes wait for the hub` }),
        ...(state.lastStatus && { lastTerminalStatus: state.lastStatus }),
      },
      memoryPointers: state.filesTouched
        .slice(-5)
        .map((file) => ({ id: file, text: `edited ${file}` })),
      toolSnippets: [],
      currentInput: {
        id: `prompt-${state.prompts}`,
        sender: { id: 'user', kind: 'human' },
        text: input.prompt,
      },
    },
  };
}

/** The plain list of changes: what the hook injects when the turn context cannot be built. */
function updatesList(items: readonly HubItem[]): string {
  const ordered = [...items].sort(
    (a, b) => URGENCY_RANK[b.urgency] - URGENCY_RANK[a.urgency] || b.seq - a.seq,
  );
  const shown = ordered.slice(0, PROMPT_UPDATE_ITEMS);
  const more = items.length - shown.length;
  return [
    '## New in the shared context (ctxbus) since your last prompt',
    ...shown.map(updateLine),
    ...(more > 0 ? [`- …and ${more} more (mcp__ctxbus__context_read)`] : []),
  ].join('\n');
}

/**
 * Each prompt's context, built by core's turn builder (and recorded when snapshots are on):
 * injected when the bus has news since the session last looked. The hub being down leaves the
 * local flow (the session's own state, the snapshot) working; a failed build falls back to the
 * plain list and reports its `context_build_error` with the next action.
 */
async function userPromptSubmit(
  context: HookContext,
  input: Extract<HookInput, { hook_event_name: 'UserPromptSubmit' }>,
  state: SessionState,
): Promise<HookOutput> {
  const { client } = context;
  state.prompts += 1;
  let items: HubItem[] = [];
  let notice: HookOutput = {};
  if (!client) notice = unreachable(context, state);
  else {
    try {
      await flushOutbox(context.stateDir, (batch) => send(client, batch)).catch(() => 0);
      items = await client.list(state.lastSeenSeq, 100);
    } catch {
      notice = unreachable(context, state);
    }
  }
  if (items.length > 0) {
    state.lastSeenSeq = Math.max(state.lastSeenSeq, ...items.map((item) => item.seq));
  }
  const log = context.turnLog ?? { dataDir: null, snapshots: false };
  const turn = recordTurn({
    input: promptTurnInput(input, state, items, pendingCount(context.stateDir)),
    counter: log.counter ?? estimateTokenCounter,
    now: () => context.now().getTime(),
    dataDir: log.dataDir,
    snapshots: log.snapshots,
  });
  if (!turn.ok) {
    const { message, nextAction } = turn.failure;
    return {
      ...(items.length > 0 && { additionalContext: clip(updatesList(items), MAX_INJECTED_CHARS) }),
      systemMessage: `ctxbus: context_build_error (turn failed): ${message}; next: ${nextAction}`,
    };
  }
  if (items.length === 0) return notice;
  const more = items.length - turn.context.snapshot.sourceCounts.messages;
  const text = [
    '## Your turn context (ctxbus): new in the shared context since your last prompt',
    turn.context.injection,
    ...(more > 0 ? [`…and ${more} more changes (mcp__ctxbus__context_read)`] : []),
  ].join('\n\n');
  return { ...notice, additionalContext: clip(text, MAX_INJECTED_CHARS) };
}

const EDIT_TOOLS = new Set(['Edit', 'Write', 'MultiEdit', 'NotebookEdit']);

function postToolUse(
  input: Extract<HookInput, { hook_event_name: 'PostToolUse' }>,
  state: SessionState,
): HookOutput {
  if (!EDIT_TOOLS.has(input.tool_name)) return {};
  const path = input.tool_input.file_path ?? input.tool_input.notebook_path;
  if (typeof path !== 'string' || path === '') return {};
  state.filesTouched = [...state.filesTouched.filter((file) => file !== path), path].slice(-50);
  return {};
}

function statusItem(
  input: HookInput,
  state: SessionState,
  content: string,
  ttlSeconds: number,
): ContextItemInput {
  const project = basename(input.cwd) || input.cwd || 'a project';
  const files = state.filesTouched.length
    ? `\n\nFiles touched: ${state.filesTouched.slice(-10).join(', ')}`
    : '';
  return {
    id: stableId(
      'claude-code-status',
      input.session_id,
      String(state.turns),
      input.hook_event_name,
    ),
    type: 'status',
    title: `Claude Code session in ${project}`,
    content: `${content}${files}`.trim(),
    key: `sessions/claude-code/${input.session_id}`,
    source: { threadId: input.session_id },
    relevanceTags: ['claude-code', 'session'],
    expiresAfterSeconds: ttlSeconds,
  };
}

async function stop(
  context: HookContext,
  input: Extract<HookInput, { hook_event_name: 'Stop' }>,
  state: SessionState,
): Promise<HookOutput> {
  state.turns += 1;
  const message = input.last_assistant_message.trim();
  const decisions: ContextItemInput[] = extractDecisions(message).map((decision) => ({
    id: stableId('claude-code-decision', input.session_id, decision),
    type: 'decision',
    title: decision.length > 120 ? `${decision.slice(0, 117)}…` : decision,
    content: decision,
    source: { threadId: input.session_id },
    relevanceTags: ['claude-code'],
  }));
  const summary = message.split('\n').find((line) => line.trim() !== '') ?? 'working';
  state.lastReply = clip(summary, 300);
  state.lastStatus = `turn ${state.turns} completed`;
  const status = statusItem(input, state, `Last reply: ${state.lastReply}`, 7 * 24 * 3600);
  await deliver(context, [...decisions, status]);
  return {};
}

async function sessionEnd(
  context: HookContext,
  input: Extract<HookInput, { hook_event_name: 'SessionEnd' }>,
  state: SessionState,
): Promise<HookOutput> {
  state.turns += 1;
  state.lastStatus = `session ended (${input.reason})`;
  await deliver(context, [statusItem(input, state, `Session ended (${input.reason}).`, 24 * 3600)]);
  return {};
}

/**
 * Seed 003's resume note: when the project holds a `.context-bus/` handoff whose newest switch
 * no session here has been told about, the note comes first ("Continuing from X's work on
 * ..."), once per switch. Local files only, so it comes even when the hub is down; a damaged
 * handoff is one notice, never a failed hook.
 */
function withHandoff(output: HookOutput, cwd: string, context: HookContext): HookOutput {
  if (!cwd) return output;
  try {
    const pending = pendingResume(cwd, readHandoffSeen(context.stateDir, cwd));
    if (!pending) return output;
    writeHandoffSeen(context.stateDir, cwd, pending.switchSequence);
    if ('problem' in pending) {
      const notice = `ctxbus: the model-switch handoff is unusable: ${pending.problem}`;
      return {
        ...output,
        systemMessage: output.systemMessage ? `${output.systemMessage}\n${notice}` : notice,
      };
    }
    const note = `## Model switch (ctxbus handoff)\n${pending.note}`;
    return {
      ...output,
      additionalContext: clip(
        output.additionalContext ? `${note}\n\n${output.additionalContext}` : note,
        MAX_INJECTED_CHARS,
      ),
    };
  } catch {
    return output; // the handoff is a convenience; it must not fail the hook
  }
}

/**
 * Runs one hook event. Never throws: a hub that is down, slow or misconfigured means no
 * context (and one notice per session), never a failed Claude Code turn.
 */
export async function runHookEvent(input: HookInput, context: HookContext): Promise<HookOutput> {
  const state = readSessionState(context.stateDir, input.session_id);
  let output: HookOutput = {};
  try {
    switch (input.hook_event_name) {
      case 'SessionStart':
        output = withHandoff(await sessionStart(context, state), input.cwd, context);
        break;
      case 'UserPromptSubmit':
        output = withHandoff(await userPromptSubmit(context, input, state), input.cwd, context);
        break;
      case 'PostToolUse':
        output = postToolUse(input, state);
        break;
      case 'Stop':
        output = await stop(context, input, state);
        break;
      case 'SessionEnd':
        output = await sessionEnd(context, input, state);
        break;
    }
  } finally {
    try {
      writeSessionState(context.stateDir, input.session_id, state);
    } catch {
      // state is a convenience; losing it must not fail the hook
    }
  }
  return output;
}
