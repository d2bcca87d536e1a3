// The cache section's loop, the same for every runtime: before each turn another runtime (a
// plain client with a token of its own) writes one new item with a marker; the runtime's real
// CLI runs the turn in one session; the request its model got is compared with the previous
// turn's (`requestStartsWith`: tools, system part, earlier conversation as a prefix), searched
// for the marker, and what ctxbus added to it is counted in tokens.
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { countTokens } from '@ctxbus/core';
import type { HubProcess } from '@ctxbus/test-kit';
import { call } from '@ctxbus/test-kit';
import type { PrefixVerdict, WireFormat } from '@ctxbus/test-kit/request-prefix';
import { requestStartsWith } from '@ctxbus/test-kit/request-prefix';

/** One runtime session driven through its real CLI, its model a scripted server. */
export interface CacheSession {
  runtime: string;
  format: WireFormat;
  /** Runs one turn with this prompt; answers the conversation request the model got for it. */
  turn(prompt: string): Promise<Record<string, unknown>>;
  /** The part of a text in the request that ctxbus injected ('' when none). */
  ours(text: string): string;
  /**
   * A conversation item the runtime itself ends a request with and does not keep in the
   * session's history (OpenClaw's runtime context): the turns are compared again without it.
   */
  unkept?(item: Message): boolean;
  close(): Promise<void>;
}

/** What one turn measured. */
export interface CacheTurn {
  /** Whether this turn's request started with the previous turn's (null on the first turn). */
  verdict: PrefixVerdict | null;
  /** The same, the previous request less a trailing item the runtime does not keep (`unkept`). */
  keptVerdict: PrefixVerdict | null;
  /** Whether the item written just before the turn was in its request. */
  reached: boolean;
  /** Tokens of what ctxbus added to the request this turn. */
  injectedTokens: number;
}

export type Message = { role?: string; content?: unknown };

/** The text of a content value: a string, or the `text` of its parts. */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part: { text?: unknown; content?: unknown }) =>
      typeof part?.text === 'string' ? part.text : contentText(part?.content),
    )
    .join('\n');
}

/** The text of the last message with role `user`. */
export function lastUserText(messages: readonly Message[]): string {
  return contentText(messages.findLast((message) => message.role === 'user')?.content);
}

const LIST: Record<WireFormat, 'messages' | 'input'> = {
  'anthropic-messages': 'messages',
  'chat-completions': 'messages',
  responses: 'input',
};

/** The conversation items `request` added after the previous turn's request. */
export function addedItems(
  format: WireFormat,
  request: Record<string, unknown>,
  previous: Record<string, unknown> | undefined,
): Message[] {
  const list = (request[LIST[format]] ?? []) as Message[];
  const before = (previous?.[LIST[format]] ?? []) as Message[];
  return list.slice(before.length);
}

/**
 * What ctxbus added to a turn: in the turn's new items other than the model's own (its replies,
 * tool calls), the part of each text that `ours` says ctxbus wrote (the runtimes add text of
 * their own too: Codex its permissions and environment, OpenClaw its runtime context).
 */
export function injectedText(items: readonly Message[], ours: (text: string) => string): string {
  return items
    .filter((item) => item.role !== 'assistant')
    .flatMap((item) => textParts(item.content))
    .map(ours)
    .filter((text) => text !== '')
    .join('\n');
}

function textParts(content: unknown): string[] {
  if (typeof content === 'string') return [content];
  if (!Array.isArray(content)) return [];
  return content
    .map((part: { type?: string; text?: unknown }) =>
      typeof part?.text === 'string' && part.type !== 'tool_result' ? part.text : '',
    )
    .filter(Boolean);
}

export interface CacheRunOptions {
  turns: number;
  /** A token of the writing runtime (a plain client). */
  writer: string;
  /** A directory to write each turn's request into (`CTXBUS_BENCH_CACHE_DUMP`). */
  dump?: string;
  log: (line: string) => void;
}

/** Runs `turns` turns of `session`, one new item written before each. */
export async function runCacheSession(
  hub: HubProcess,
  session: CacheSession,
  options: CacheRunOptions,
): Promise<CacheTurn[]> {
  const results: CacheTurn[] = [];
  let previous: Record<string, unknown> | undefined;
  for (let turn = 1; turn <= options.turns; turn++) {
    const marker = `cache-${turn}-${randomUUID().slice(0, 8)}`;
    const written = await call(hub.url, 'POST', '/api/context', {
      token: options.writer,
      body: { type: 'status', title: `Deploy step ${turn} finished (marker ${marker})` },
    });
    if (written.status !== 201) throw new Error(`write failed: ${written.status}`);
    const prompt = `Question ${turn}: what changed?`;
    const request = await session.turn(prompt);
    const added = addedItems(session.format, request, previous);
    const injected = injectedText(added, (text) => session.ours(text));
    results.push({
      verdict: previous ? requestStartsWith(session.format, previous, request) : null,
      keptVerdict:
        previous && session.unkept
          ? requestStartsWith(session.format, withoutUnkept(session, previous), request)
          : null,
      reached: JSON.stringify(request).includes(marker),
      injectedTokens: countTokens(injected),
    });
    if (options.dump) dumpTurn(options.dump, session.runtime, turn, request, injected);
    const verdict = results.at(-1)?.verdict;
    if (verdict && !verdict.starts) {
      options.log(`  ${session.runtime} turn ${turn}: ${verdict.part} changed: ${verdict.detail}`);
    }
    previous = request;
  }
  return results;
}

/** `request` less its last conversation item when the runtime does not keep that one. */
function withoutUnkept(
  session: CacheSession,
  request: Record<string, unknown>,
): Record<string, unknown> {
  const list = LIST[session.format];
  const items = (request[list] ?? []) as Message[];
  const last = items.at(-1);
  return last && session.unkept?.(last) ? { ...request, [list]: items.slice(0, -1) } : request;
}

function dumpTurn(
  dir: string,
  runtime: string,
  turn: number,
  request: Record<string, unknown>,
  injected: string,
): void {
  const folder = join(dir, runtime.toLowerCase().replaceAll(/[^a-z0-9]+/g, '-'));
  mkdirSync(folder, { recursive: true });
  writeFileSync(join(folder, `turn-${turn}.json`), JSON.stringify(request, null, 2));
  writeFileSync(join(folder, `turn-${turn}-injected.txt`), injected);
}
