import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { SESSIONS_KEPT, writeSessionFile } from '@ctxbus/client/session';

// The team-context blocks a session's turns were sent with, kept so that later requests can
// show each earlier user message as the model got it. Through OpenClaw's gateway (2026.9.x) the
// user message is written to the session's history when the turn is admitted, before
// before_prompt_build, and the embedded runner then skips before_message_write for it: the
// history keeps the bare prompt. The ctxbus context engine (context-engine.ts) puts each block
// back into its message when the next turn's request is assembled, so that request starts with
// the previous one (the provider's prompt cache). One file per session, beside the plugin state.

/** One turn's block and the prompt it went before (the text the block was prepended to). */
export interface SentBlock {
  prompt: string;
  block: string;
}

/** A session keeps at most this many blocks (the oldest go first; compaction drops them anyway). */
const BLOCKS_KEPT = 200;

/** At most this many sessions' parsed blocks are kept in memory (their files: SESSIONS_KEPT). */
const PARSED_KEPT = SESSIONS_KEPT;

/** The file that holds `session`'s blocks. */
export function sentBlocksFile(stateDir: string, session: string): string {
  const name = createHash('sha256').update(session).digest('hex').slice(0, 32);
  return join(stateDir, 'sent-blocks', `${name}.json`);
}

/**
 * Parsed files by path, with the modification time and size they were read at: the context
 * engine reads a session's blocks for every model request of a turn (its tool loop included),
 * so a file is parsed again only when it changed. At most PARSED_KEPT entries.
 */
const parsed = new Map<string, { mtimeMs: number; size: number; blocks: readonly SentBlock[] }>();

function parseBlocks(text: string): SentBlock[] {
  const raw = JSON.parse(text) as unknown;
  if (!Array.isArray(raw)) return [];
  return raw.filter(
    (entry): entry is SentBlock =>
      entry !== null &&
      typeof entry === 'object' &&
      typeof (entry as SentBlock).prompt === 'string' &&
      typeof (entry as SentBlock).block === 'string',
  );
}

/** A session's blocks, oldest first; a missing or damaged file is none. */
export function readSentBlocks(stateDir: string, session: string): SentBlock[] {
  const file = sentBlocksFile(stateDir, session);
  try {
    const { mtimeMs, size } = statSync(file);
    const known = parsed.get(file);
    if (known && known.mtimeMs === mtimeMs && known.size === size) return [...known.blocks];
    const blocks = parseBlocks(readFileSync(file, 'utf8'));
    parsed.delete(file);
    parsed.set(file, { mtimeMs, size, blocks });
    if (parsed.size > PARSED_KEPT) parsed.delete(parsed.keys().next().value as string);
    return [...blocks];
  } catch {
    parsed.delete(file);
    return [];
  }
}

/** Records the block a turn of `session` was sent with. */
export function recordSentBlock(stateDir: string, session: string, sent: SentBlock): void {
  if (!sent.block || !sent.prompt) return;
  const blocks = [...readSentBlocks(stateDir, session), sent].slice(-BLOCKS_KEPT);
  // A session's first record keeps the directory bounded (SESSIONS_KEPT, SESSION_MAX_AGE_MS).
  writeSessionFile(sentBlocksFile(stateDir, session), JSON.stringify(blocks));
}

type TextPart = { type: 'text'; text: string };

function isTextPart(part: unknown): part is TextPart {
  return (
    part !== null &&
    typeof part === 'object' &&
    (part as { type?: unknown }).type === 'text' &&
    typeof (part as { text?: unknown }).text === 'string'
  );
}

/** The message's text parts (a string content is one). */
function textsOf(message: { content?: unknown }): string[] {
  const { content } = message;
  if (typeof content === 'string') return [content];
  return Array.isArray(content) ? content.filter(isTextPart).map((part) => part.text) : [];
}

/** `text` with `block` before its last occurrence of `prompt` (what the model was sent). */
function withBlock(text: string, prompt: string, block: string): string {
  const at = text.lastIndexOf(prompt.trimEnd());
  return `${text.slice(0, at)}${block}\n\n${text.slice(at)}`;
}

/**
 * The session's messages with each user message that went to the model behind a team-context
 * block shown with it again, as that turn's request had it: the block and a blank line before
 * the prompt (after anything OpenClaw put before the prompt, such as its timestamp). Blocks are
 * matched to user messages in order, each by its prompt ending the message; a message already
 * holding its block (written so by before_message_write, `openclaw agent --local`) is left as
 * it is. `open` is the block's first line.
 */
export function withSentBlocks(
  messages: readonly unknown[],
  blocks: readonly SentBlock[],
  open: string,
): { messages: unknown[]; restored: number; matched: number } {
  let next = 0;
  let restored = 0;
  let matched = 0;
  const out = messages.map((message) => {
    if (next >= blocks.length) return message;
    const user = message as { role?: unknown; content?: unknown } | null;
    if (user?.role !== 'user') return message;
    const texts = textsOf(user);
    for (let index = next; index < blocks.length; index += 1) {
      const { prompt, block } = blocks[index] as SentBlock;
      const text = texts.find((candidate) => candidate.trimEnd().endsWith(prompt.trimEnd()));
      if (text === undefined) continue;
      next = index + 1;
      matched += 1;
      if (texts.some((candidate) => candidate.includes(open))) return message;
      restored += 1;
      const { content } = user;
      if (typeof content === 'string')
        return { ...user, content: withBlock(content, prompt, block) };
      let done = false;
      return {
        ...user,
        content: (content as unknown[]).map((part) => {
          if (done || !isTextPart(part) || part.text !== text) return part;
          done = true;
          return { ...part, text: withBlock(part.text, prompt, block) };
        }),
      };
    }
    return message;
  });
  return { messages: out, restored, matched };
}
