import { v7 as uuidv7 } from 'uuid';
import { hashValue } from '../shared/canonical-hash.js';
import { countTokens } from '../shared/tokens.js';
import type { ContextItem, ContextItemInput, Redaction, Scope } from './context-item.js';
import { contextItemInputSchema, expiresAfterOf, sourceOf } from './context-item.js';
import { assertNoSecret, redactJson, redactSecrets } from './redact-secrets.js';

/** Who is writing: every token belongs to one team and one runtime. */
export interface Writer {
  teamId: string;
  runtime: string;
}

/**
 * An item ready for a store: everything but the store-assigned fields (seq, supersededBy,
 * consumption). `inputHash` identifies the write so a repeated id can be told apart from a
 * different item reusing the id.
 */
export type NewContextItem = Omit<
  ContextItem,
  'seq' | 'supersededBy' | 'consumed' | 'consumedBy'
> & {
  inputHash: string;
};

export interface PrepareOptions {
  now: Date;
  newId?: () => string;
}

const SUMMARY_CHARS = 200;

/** Newest-first UUIDv7 for items written without an id. */
export function newItemId(): string {
  return uuidv7();
}

/** One line that says what an item is about, derived when the writer gave no summary. */
export function deriveSummary(title: string, content: string): string {
  const text = content.trim();
  if (text.length === 0) return title;
  const firstLine = text.split(/\r?\n/, 1)[0]?.trim() ?? '';
  const sentence = /^(.{20,}?[.!?])(\s|$)/u.exec(firstLine)?.[1] ?? firstLine;
  if (sentence.length <= SUMMARY_CHARS) return sentence;
  const cut = sentence.slice(0, SUMMARY_CHARS - 1);
  const space = cut.lastIndexOf(' ');
  return `${(space > SUMMARY_CHARS / 2 ? cut.slice(0, space) : cut).trimEnd()}…`;
}

function normalizeTags(tags: readonly string[] | undefined): string[] {
  const seen = new Set<string>();
  for (const tag of tags ?? []) seen.add(tag.toLowerCase());
  return [...seen];
}

function defaultScopeKey(scope: Scope, taskId?: string, threadId?: string): string | null {
  if (scope === 'task' && taskId) return `task:${taskId}`;
  if (scope === 'thread' && threadId) return `thread:${threadId}`;
  return null;
}

/**
 * Validates a client's item, applies defaults, redacts secrets and counts tokens.
 * Throws a ZodError on invalid input (the caller turns it into a validation error).
 */
export function prepareItem(raw: unknown, writer: Writer, options: PrepareOptions): NewContextItem {
  const input = contextItemInputSchema.parse(raw);
  return prepareParsedItem(input, writer, options);
}

/** The identifiers of an item: never rewritten, so a secret in one is refused. */
function assertNoSecrets(
  input: ContextItemInput,
  source: { agentId: string | null; taskId: string | null; threadId: string | null },
  scopeKey: string | null,
): void {
  assertNoSecret(input.key, 'key');
  assertNoSecret(scopeKey, 'scopeKey');
  assertNoSecret(source.agentId, 'sourceAgentId');
  assertNoSecret(source.taskId, 'sourceTaskId');
  assertNoSecret(source.threadId, 'sourceThreadId');
  for (const [index, tag] of (input.relevanceTags ?? []).entries()) {
    assertNoSecret(tag, `relevanceTags[${index}]`);
  }
}

export function prepareParsedItem(
  input: ContextItemInput,
  writer: Writer,
  options: PrepareOptions,
): NewContextItem {
  const redactions: Redaction[] = [];
  const redact = (text: string, field: string): string => {
    const result = redactSecrets(text, field);
    redactions.push(...result.redactions);
    return result.text;
  };

  const title = redact(input.title.trim(), 'title');
  const content = redact(input.content ?? '', 'content');
  const summary = input.summary ? redact(input.summary, 'summary') : deriveSummary(title, content);
  let runtimeOptions: Record<string, unknown> = {};
  if (input.runtimeOptions) {
    const result = redactJson(input.runtimeOptions, 'runtimeOptions');
    runtimeOptions = result.value as Record<string, unknown>;
    redactions.push(...result.redactions);
  }

  const scopeKeyPrefix = input.scopeKey?.split(':', 1)[0];
  const scope: Scope =
    input.scope ??
    (scopeKeyPrefix === 'task' || scopeKeyPrefix === 'thread' ? scopeKeyPrefix : 'global');
  const given = sourceOf(input, writer.runtime);
  const source = {
    runtime: writer.runtime,
    agentId: given.agentId ?? null,
    taskId: given.taskId ?? null,
    threadId: given.threadId ?? null,
  };
  const scopeKey =
    input.scopeKey ??
    defaultScopeKey(scope, source.taskId ?? undefined, source.threadId ?? undefined);
  assertNoSecrets(input, source, scopeKey);

  const expiresAfterSeconds = expiresAfterOf(input);
  let expiresAt: string | null = null;
  if (input.expiresAt !== undefined) expiresAt = new Date(input.expiresAt).toISOString();
  else if (expiresAfterSeconds !== undefined) {
    expiresAt = new Date(options.now.getTime() + expiresAfterSeconds * 1000).toISOString();
  }

  const item = {
    id: input.id ?? (options.newId ?? newItemId)(),
    teamId: writer.teamId,
    type: input.type,
    title,
    content,
    summary,
    source,
    scope,
    scopeKey,
    relevanceTags: normalizeTags(input.relevanceTags),
    urgency: input.urgency ?? 'background',
    visibility: input.visibility ?? 'team',
    createdAt: options.now.toISOString(),
    expiresAt,
    supersedes: input.supersedes ?? null,
    key: input.key ?? null,
    runtimeOptions: runtimeOptions as ContextItem['runtimeOptions'],
    redactions,
    tokens: countTokens(content ? `${title}\n${content}` : title),
  };
  // The hash covers what the writer chose, not when: a retry minutes later is the same write.
  const { createdAt: _createdAt, expiresAt: _expiresAt, ...chosen } = item;
  const inputHash = hashValue({
    ...chosen,
    expiresAt: input.expiresAt ?? null,
    expiresAfterSeconds: expiresAfterSeconds ?? null,
  });
  return { ...item, inputHash };
}
