// Whether a model request starts with an earlier one: what a provider's prompt cache needs to
// reuse the earlier request's tokens. Providers cache a request's prefix in the order they
// render it, tools, then the system part, then the conversation; so a request "starts with" an
// earlier one when its tools and its system part (`system`, Responses `instructions`) are equal
// and the earlier conversation (`messages`, Responses `input`) is a prefix of its own, item by
// item. Two spellings that render the same count as equal:
// - a string content and a content of one text block (`text`, `input_text`, `output_text`)
//   with nothing else in it (INTEGRATIONS.md: Claude Code resends its own strings as blocks);
// - Anthropic's `cache_control` marks, which say where to cache, not what is sent (Claude Code
//   moves its breakpoint to the newest message every turn);
// - a Responses input item without `type` that has a `role` is a `message`;
// - the order of an object's keys.

/** The wire formats of the scripted models: Anthropic Messages, Chat Completions, Responses. */
export type WireFormat = 'anthropic-messages' | 'chat-completions' | 'responses';

export interface PrefixVerdict {
  /** Whether the later request starts with the earlier one. */
  starts: boolean;
  /** Where it stopped doing so: `tools`, `system`, `instructions`, or `messages[3]`. */
  part?: string;
  /** The two values at that place from their first difference, shortened. */
  detail?: string;
}

const HEAD: Record<WireFormat, readonly string[]> = {
  'anthropic-messages': ['tools', 'system'],
  'chat-completions': ['tools'],
  responses: ['tools', 'instructions'],
};
const LIST: Record<WireFormat, string> = {
  'anthropic-messages': 'messages',
  'chat-completions': 'messages',
  responses: 'input',
};
const TEXT_BLOCKS = new Set(['text', 'input_text', 'output_text']);

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** One value in the form compared: the equal spellings above made one. */
function normal(value: unknown, format: WireFormat): Json {
  if (Array.isArray(value)) return value.map((entry) => normal(entry, format));
  if (value === null || typeof value !== 'object') return (value ?? null) as Json;
  const out: { [key: string]: Json } = {};
  for (const key of Object.keys(value).sort()) {
    if (key === 'cache_control') continue;
    const entry = (value as Record<string, unknown>)[key];
    if (entry === undefined) continue;
    out[key] = key === 'content' ? content(entry, format) : normal(entry, format);
  }
  if (format === 'responses' && out.role !== undefined && out.type === undefined) {
    out.type = 'message';
  }
  return out;
}

/** A content of one bare text block is its text. */
function content(value: unknown, format: WireFormat): Json {
  const parts = normal(value, format);
  if (!Array.isArray(parts) || parts.length !== 1) return parts;
  const [only] = parts;
  if (only === null || typeof only !== 'object' || Array.isArray(only)) return parts;
  const keys = Object.keys(only);
  const bare = keys.length === 2 && keys.includes('type') && keys.includes('text');
  return bare && TEXT_BLOCKS.has(String(only.type)) && typeof only.text === 'string'
    ? only.text
    : parts;
}

/** Both values from their first different character, 80 characters of each. */
function difference(earlier: string, later: string): string {
  let at = 0;
  while (at < earlier.length && earlier[at] === later[at]) at++;
  const from = Math.max(0, at - 20);
  return `earlier: ${earlier.slice(from, at + 60)} | later: ${later.slice(from, at + 60)}`;
}

/**
 * Whether `later` starts with `earlier` (two request bodies of `format`), and if not, where it
 * stopped: the first of tools, system part and conversation items that differs.
 */
export function requestStartsWith(
  format: WireFormat,
  earlier: Record<string, unknown>,
  later: Record<string, unknown>,
): PrefixVerdict {
  for (const part of HEAD[format]) {
    const before = JSON.stringify(normal(earlier[part], format));
    const after = JSON.stringify(normal(later[part], format));
    if (before !== after) return { starts: false, part, detail: difference(before, after) };
  }
  const list = LIST[format];
  const before = (earlier[list] ?? []) as unknown[];
  const after = (later[list] ?? []) as unknown[];
  for (const [index, item] of before.entries()) {
    const one = JSON.stringify(normal(item, format));
    const other = index < after.length ? JSON.stringify(normal(after[index], format)) : '';
    if (one !== other) {
      return { starts: false, part: `${list}[${index}]`, detail: difference(one, other) };
    }
  }
  return { starts: true };
}
