import { basename } from 'node:path';
import type { HubApi, HubItem } from '@ctxbus/client/light';
import type { SessionKernel, SessionState } from '@ctxbus/client/session';
import {
  byUrgencyDescending,
  clipText,
  liteSessionHub,
  openSession,
  workspaceResumeSeen,
} from '@ctxbus/client/session';
import type { ContextItemInput } from '@ctxbus/core/contract';
import type { TokenCounter } from '@ctxbus/core/light';
import { inertInline, stableId } from '@ctxbus/core/light';
import { pendingResume } from '@ctxbus/handoff/light';
import type { HookInput } from './hook-input.js';
import { readDelivered } from './live-files.js';
import { isLivePush } from './live-start.js';
import { sessionStateFile } from './session-state.js';

/** Claude Code caps injected hook output at 10,000 characters; stay clear of it. */
export const MAX_INJECTED_CHARS = 9_500;
/** The shared context's budget for a session start: seed 002's layer plan (~4K tokens). */
export const SESSION_START_TOKEN_BUDGET = 4_000;
/** Where the whole bundle is when the cap cuts it (the ctxbus MCP server's resource). */
export const FULL_CONTEXT_URI = 'team-context://current';
/** 4000 as '4,000'. Not toLocaleString: at load, Intl's number format costs a hook run ~10 ms. */
const thousands = (value: number) => String(value).replace(/\B(?=(\d{3})+$)/g, ',');
const FULL_CONTEXT_POINTER = `_(ctxbus: the shared context is compacted to fit here; the MCP resource ${FULL_CONTEXT_URI} holds all of it, at ${thousands(SESSION_START_TOKEN_BUDGET)} tokens)_`;
const PROMPT_UPDATE_ITEMS = 12;
/** Raw tool output a turn context keeps (seed 002's maxToolSnippetTokens); older ones are summaries. */
export const TOOL_SNIPPET_TOKENS = 300;
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
  /**
   * How this session's model names the ctxbus MCP tools (default `mcp__ctxbus__`, the
   * installer's server; the plugin's server is `mcp__plugin_ctxbus_ctxbus__`).
   */
  toolPrefix?: string;
  now: () => Date;
  turnLog?: TurnLogOptions;
}

/** What the hook prints: context for the model, and/or a one-line notice for the user. */
export interface HookOutput {
  additionalContext?: string;
  systemMessage?: string;
}

/** The MCP tools' names as `ctxbus install claude-code` registers the server. */
export const INSTALLED_TOOL_PREFIX = 'mcp__ctxbus__';
/** The same tools under the Claude Code plugin: `mcp__plugin_<plugin>_<server>__<tool>`. */
export const PLUGIN_TOOL_PREFIX = 'mcp__plugin_ctxbus_ctxbus__';

const toolHint = (prefix: string): string =>
  `Share what others should know with the ctxbus MCP tools (${prefix}context_write, ${prefix}context_search, ${prefix}memory_write). A line "Decision: ..." in your reply is recorded as a team decision.`;

function updateLine(item: HubItem): string {
  const urgency = item.urgency === 'background' ? '' : `[${item.urgency}] `;
  // An agent's words, inert: they cannot close the bold or forge the source after them.
  const summary =
    item.summary && item.summary !== item.title ? `: ${inertInline(item.summary)}` : '';
  return `- ${urgency}**${inertInline(item.title)}**${summary} _(${item.type} from ${item.source.runtime})_`;
}

const prefix = (context: HookContext): string => context.toolPrefix ?? INSTALLED_TOOL_PREFIX;

/** The plain list of changes: what the hook injects when the turn context cannot be built. */
function updatesList(items: readonly HubItem[], prefix: string): string {
  if (items.length === 0) return '';
  const shown = byUrgencyDescending(items).slice(0, PROMPT_UPDATE_ITEMS);
  const more = items.length - shown.length;
  return [
    '## New in the shared context (ctxbus) since your last prompt',
    ...shown.map(updateLine),
    ...(more > 0 ? [`- …and ${more} more (${prefix}context_read)`] : []),
  ].join('\n');
}

/** The session kernel for one Claude Code session: its state file, the outbox, the handoff. */
function kernel(context: HookContext, input: HookInput): SessionKernel<HubItem> {
  const { cwd, session_id: sessionId } = input;
  // What the live push already put into this session's conversation is not news either.
  const pushed = new Set(readDelivered(context.stateDir, sessionId).seqs);
  return openSession<HubItem>({
    hub: context.client ? liteSessionHub(context.client) : null,
    stateDir: context.stateDir,
    stateFile: sessionStateFile(context.stateDir, sessionId),
    agentId: TURN_AGENT_ID,
    sessionId,
    now: context.now,
    turnLog: context.turnLog ?? { dataDir: null, snapshots: false },
    budget: {
      maxContextTokens: PROMPT_TOKEN_BUDGET,
      maxRecentMessages: PROMPT_UPDATE_ITEMS,
      maxToolSnippetTokens: TOOL_SNIPPET_TOKENS,
    },
    message: (item) => ({
      id: `#${item.seq}`,
      sender: item.source.runtime,
      text: updateLine(item).slice(2),
    }),
    // What this session wrote itself (its decisions and status) is not news to it.
    own: (item) =>
      (item.source.runtime === 'claude-code' && item.source.threadId === sessionId) ||
      pushed.has(item.seq),
    decision: (decision) => ({
      id: stableId('claude-code-decision', sessionId, decision),
      type: 'decision',
      title: decision.length > 120 ? `${decision.slice(0, 117)}…` : decision,
      content: decision,
      source: { threadId: sessionId },
      relevanceTags: ['claude-code'],
    }),
    checkpoint: 'last-reply',
    hubless:
      'no hub configured (CTXBUS_URL and CTXBUS_TOKEN, or ctxbus token create --runtime claude-code --save)',
    // Seed 003: a switch is told once per workspace, to whichever session looks first.
    ...(cwd && {
      resume: {
        pending: (seen: number) => pendingResume(cwd, seen),
        seen: workspaceResumeSeen(context.stateDir, cwd),
      },
    }),
    fallback: ({ changes }) => clipText(updatesList(changes, prefix(context)), MAX_INJECTED_CHARS),
  });
}

/** The hook's output: the resume note first, then the context, within Claude Code's cap. */
function output(context: string, resume: string | null, notice: string | null): HookOutput {
  const parts = [resume && `## Model switch (ctxbus handoff)\n${resume}`, context].filter(
    (part): part is string => Boolean(part),
  );
  return {
    ...(parts.length > 0 && {
      additionalContext: clipText(parts.join('\n\n'), MAX_INJECTED_CHARS),
    }),
    ...(notice && { systemMessage: notice }),
  };
}

/**
 * SessionStart: the team's shared bundle at the seed's budget (~4K tokens), and the tool hint.
 * Claude Code's cap is in characters: a bundle past it is asked for again, smaller (compact
 * entries, every section kept), and points to the MCP resource that holds all of it. With the
 * hub down, the last good bundle from the local cache (marked stale, with its age).
 */
async function sessionStart(
  session: SessionKernel<HubItem>,
  input: Extract<HookInput, { hook_event_name: 'SessionStart' }>,
  tools: string,
): Promise<HookOutput> {
  // A resumed session has its first bundle in the transcript Claude Code resends: injecting the
  // bundle again would grow every resumed turn by all of it. What changed since the session last
  // looked comes with the prompt (UserPromptSubmit), after what the transcript holds.
  if (input.source === 'resume' && session.state().lastSeenSeq > 0) return {};
  const hint = toolHint(tools);
  const room = MAX_INJECTED_CHARS - hint.length - FULL_CONTEXT_POINTER.length - 200;
  const turn = await session.beforeTurn({
    changes: false,
    bundle: { tokens: SESSION_START_TOKEN_BUDGET, maxChars: room },
  });
  if (!turn.fromHub && !turn.stale) return output('', turn.resume, turn.notice);
  const cut = turn.fromHub && turn.bundleTokens < SESSION_START_TOKEN_BUDGET;
  const bundle = cut ? `${turn.bundle}\n\n${FULL_CONTEXT_POINTER}` : turn.bundle;
  return output(`${bundle}\n\n${hint}`, turn.resume, turn.notice);
}

/**
 * Each prompt's context, built by the kernel's turn context (and recorded when snapshots are
 * on): injected when the bus has news since the session last looked.
 */
async function userPromptSubmit(
  session: SessionKernel<HubItem>,
  input: Extract<HookInput, { hook_event_name: 'UserPromptSubmit' }>,
  tools: string,
): Promise<HookOutput> {
  const files = session.state().filesTouched.slice(-5);
  const turn = await session.beforeTurn({
    prompt: input.prompt,
    background: files.map((file) => ({ id: file, text: `edited ${file}` })),
  });
  let context = turn.injection;
  if (turn.snapshot && context) {
    const more = turn.changes.length - turn.snapshot.sourceCounts.messages;
    context = [
      turn.stale
        ? `## Your turn context (ctxbus): the hub is unreachable; shared context from ${turn.stale.age}`
        : '## Your turn context (ctxbus): new in the shared context since your last prompt',
      context,
      ...(more > 0 ? [`…and ${more} more changes (${tools}context_read)`] : []),
    ].join('\n\n');
  }
  return output(context, turn.resume, turn.notice);
}

const EDIT_TOOLS = new Set(['Edit', 'Write', 'MultiEdit', 'NotebookEdit']);

/** A tool's response as text: a string, Bash's stdout and stderr, text blocks, or its JSON. */
export function toolResponseText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === null || value === undefined) return '';
  if (Array.isArray(value)) return value.map(toolResponseText).filter(Boolean).join('\n');
  if (typeof value !== 'object') return String(value);
  const record = value as Record<string, unknown>;
  if (typeof record.stdout === 'string' || typeof record.stderr === 'string') {
    const err =
      typeof record.stderr === 'string' && record.stderr ? `\nstderr: ${record.stderr}` : '';
    return `${typeof record.stdout === 'string' ? record.stdout : ''}${err}`;
  }
  if (record.type === 'text' && typeof record.text === 'string') return record.text;
  if (record.content !== undefined) return toolResponseText(record.content);
  if (record.file !== undefined) return toolResponseText(record.file);
  return JSON.stringify(value).slice(0, 4_000);
}

/** PostToolUse: the tool's result for later turns' tool snippets; an edit also notes its file. */
function postToolUse(
  session: SessionKernel<HubItem>,
  input: Extract<HookInput, { hook_event_name: 'PostToolUse' }>,
): HookOutput {
  const state = session.state();
  const output = toolResponseText(input.tool_response).slice(0, 8_000);
  session.noteTool({
    id: stableId('claude-code-tool', String(state.prompts), input.tool_name, output),
    tool: input.tool_name,
    output,
  });
  if (!EDIT_TOOLS.has(input.tool_name)) return {};
  const path = input.tool_input.file_path ?? input.tool_input.notebook_path;
  if (typeof path === 'string' && path !== '') session.touchFile(path);
  return {};
}

/** The session's live status, keyed per session so the newest supersedes the last. */
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

/**
 * Runs one hook event. Never throws: a hub that is down, slow or misconfigured means no
 * context (and one notice per outage), never a failed Claude Code turn.
 */
export async function runHookEvent(input: HookInput, context: HookContext): Promise<HookOutput> {
  try {
    // A live push that Claude Code's inbox queued comes as a prompt: the item is the message
    // (already labelled), so the hook adds nothing and records no turn.
    if (input.hook_event_name === 'UserPromptSubmit' && isLivePush(input.prompt)) return {};
    const session = kernel(context, input);
    switch (input.hook_event_name) {
      case 'SessionStart':
        return await sessionStart(session, input, prefix(context));
      case 'UserPromptSubmit':
        return await userPromptSubmit(session, input, prefix(context));
      case 'PostToolUse':
        return postToolUse(session, input);
      case 'Stop':
        await session.afterTurn(input.last_assistant_message.trim(), {
          status: (state) =>
            statusItem(input, state, `Last reply: ${state.lastReply}`, 7 * 24 * 3600),
        });
        return {};
      case 'SessionEnd':
        await session.afterTurn('', {
          ended: input.reason,
          // Only a session with a turn has a status line to close: `claude mcp list` and the
          // like end sessions too, and each would put a line in every runtime's feed.
          status: (state) =>
            state.turns > 1
              ? statusItem(input, state, `Session ended (${input.reason}).`, 24 * 3600)
              : null,
        });
        return {};
    }
  } catch {
    // the hook must not fail Claude Code
  }
  return {};
}
