import type { ConflictReport, ContextEntry, ContextItem, Task } from '@ctxbus/core';
import { buildContext, getResolver, plainLine, shownJson, visibleText } from '@ctxbus/core';
import { TELEGRAM_MESSAGE_LIMIT } from './split-message.js';
import type { DigestEntry } from './state-file.js';

// What the bot says, as terse plain text (OpenClaw's style: the `openclaw` resolver's
// formatter, no Markdown, since the bot sends without parse_mode and nothing needs escaping).

const MAX_PUSH_BODY = 1_500;

function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(0, max);
  const space = cut.lastIndexOf(' ');
  return `${(space > max * 0.6 ? cut.slice(0, space) : cut).trimEnd()}…`;
}

function body(item: ContextItem): string {
  const text = (item.content ?? '').trim() || (item.summary ?? '').trim();
  return clip(text, MAX_PUSH_BODY);
}

function footer(item: ContextItem): string {
  const tags = item.relevanceTags.length > 0 ? ` · #${item.relevanceTags.join(' #')}` : '';
  return `— ${item.source.runtime}${tags}`;
}

/** A blocking item pushed at once. */
export function pushText(item: ContextItem): string {
  const lines = [`[${item.urgency.toUpperCase()}] ${item.type}: ${plainLine(item.title)}`];
  const text = body(item);
  if (text) lines.push(text);
  lines.push(footer(item));
  return visibleText(lines.join('\n'));
}

/** A conflict, pushed with one Keep button per value. */
export function conflictText(report: ConflictReport): string {
  const [older, newer] = report.values;
  const text = [
    `[CONFLICT] ${report.key}: two runtimes wrote different values`,
    `1. ${older.runtime} (${older.createdAt}): ${plainLine(older.title)}`,
    ...(older.summary ? [`   ${clip(plainLine(older.summary), 300)}`] : []),
    `2. ${newer.runtime} (${newer.createdAt}): ${plainLine(newer.title)} (holds the key now)`,
    ...(newer.summary ? [`   ${clip(plainLine(newer.summary), 300)}`] : []),
    'Keep one:',
  ].join('\n');
  // A person decides on what this says: nothing hidden or reordered (as approvals).
  return visibleText(text);
}

/** A request item, pushed with Approve / Deny buttons. */
export function requestText(item: ContextItem): string {
  const lines = [`Request from ${item.source.runtime}: ${plainLine(item.title)}`];
  const text = body(item);
  if (text) lines.push(text);
  lines.push(footer(item));
  return visibleText(lines.join('\n'));
}

interface ApprovalRequest {
  argv?: string[];
  cwd?: string;
  scriptHash?: string | null;
  because?: string;
  /** The asking runtime's own words (a Codex network request: `network-access <target>`). */
  reason?: string;
}

/** The most of a task's title an approval shows (the title is the origin's words). */
const MAX_TITLE = 200;

/** A task waiting in AUTH_REQUIRED for a human's approval of one exact command. */
export function approvalText(task: Task): string {
  const request = (task.approval?.request ?? {}) as ApprovalRequest;
  const lines = [
    // Quoted as JSON too: a title cannot pass for the command line below it.
    `Approval needed for the task ${shownJson(clip(plainLine(task.title), MAX_TITLE))}`,
    // Quoted as JSON: an argument's newlines and spaces show, and cannot forge the lines below.
    `Command: ${shownJson(request.argv ?? [])}`,
    `In: ${shownJson(request.cwd ?? '?')}`,
  ];
  if (request.reason) {
    lines.push(`Reason (${task.origin}'s words): ${clip(plainLine(request.reason), 300)}`);
  }
  if (request.scriptHash) lines.push(`Script sha256: ${request.scriptHash.slice(0, 16)}…`);
  lines.push(
    `From: ${task.origin}; run by ${task.approval?.requestedBy ?? task.targetRuntime ?? '?'}${request.because ? ` (${request.because.replaceAll('_', ' ')})` : ''}`,
    `Expires: ${task.approval?.expiresAt ?? '?'}`,
    `Task: ${task.id}`,
    'Allow once approves this command for this task only.',
  );
  // An agent's words, shown to the person who decides: nothing in them hidden or reordered.
  return visibleText(lines.join('\n'));
}

/**
 * What the bot sends for a pending approval: the whole text with the buttons, or, when it does
 * not fit one Telegram message, a pointer to where the whole command can be read, and no
 * buttons: a person never approves a command shown in parts (the buttons would sit under the
 * last part only, which shows the command's end).
 */
export function approvalMessage(task: Task): { text: string; buttons: boolean } {
  const text = approvalText(task);
  if (text.length <= TELEGRAM_MESSAGE_LIMIT) return { text, buttons: true };
  const request = (task.approval?.request ?? {}) as ApprovalRequest;
  const shown = shownJson(request.argv ?? []);
  const lines = [
    `Approval needed for the task ${shownJson(clip(plainLine(task.title), MAX_TITLE))}`,
    `Its command is ${shown.length} characters long, too long to show in one message, so it is not shown here in parts and cannot be approved here.`,
    `Read it whole and decide with: ctxbus approve ${task.id} (or ctxbus deny), or in the dashboard.`,
    `From: ${task.origin}; run by ${task.approval?.requestedBy ?? task.targetRuntime ?? '?'}`,
    `Expires: ${task.approval?.expiresAt ?? '?'}`,
    `Task: ${task.id}`,
  ];
  return { text: visibleText(lines.join('\n')), buttons: false };
}

/** The digest's entry for an attention item, kept in the state file until it goes out. */
export function digestEntry(seq: number, item: ContextItem): DigestEntry {
  return {
    seq,
    id: item.id,
    type: item.type,
    title: item.title,
    summary: clip((item.summary ?? item.content ?? '').trim(), 300),
    urgency: item.urgency,
    runtime: item.source.runtime,
    tags: item.relevanceTags,
    createdAt: item.createdAt,
  };
}

/** Digest budget, in tokens: long digests are compacted, then cut by the builder. */
const DIGEST_TOKEN_BUDGET = 3_000;

/** Attention items since the last digest, through the context builder and openclaw's formatter. */
export function digestText(entries: readonly DigestEntry[]): string {
  const resolver = getResolver('openclaw');
  const section = {
    id: 'attention',
    title: `Needs attention (${entries.length})`,
    entries: entries.map(
      (entry): ContextEntry => ({
        id: entry.id,
        refs: [{ id: entry.id, seq: entry.seq }],
        title: entry.title,
        body: entry.summary,
        summary: entry.summary,
        meta: {
          type: entry.type,
          urgency: entry.urgency,
          runtime: entry.runtime,
          createdAt: entry.createdAt,
          tags: entry.tags,
          label: `${entry.type} (${entry.runtime})`,
        },
      }),
    ),
  };
  return buildContext([section], resolver.formatter, {
    tokenBudget: DIGEST_TOKEN_BUDGET,
    safetyMargin: resolver.safetyMargin,
    trimOrder: [{ section: 'attention', action: 'compact' }],
    header: { title: 'ctxbus digest', lines: [] },
  }).text;
}

/** One line per task for /tasks. */
export function taskLine(task: Task): string {
  const who = task.targetRuntime ? ` -> ${task.targetRuntime}` : '';
  return visibleText(`- ${task.state} ${plainLine(task.title)} (${task.origin}${who}) ${task.id}`);
}

/** One line per search hit. */
export function itemLine(item: ContextItem): string {
  const urgent = item.urgency === 'background' ? '' : ` [${item.urgency}]`;
  const summary = item.summary ? `: ${clip(plainLine(item.summary), 200)}` : '';
  return visibleText(
    `- ${item.type}${urgent} ${plainLine(item.title)}${summary} (${item.source.runtime})`,
  );
}
