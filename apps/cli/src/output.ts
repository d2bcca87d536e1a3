import type { ContextItem } from '@ctxbus/core/contract';
import { CtxbusError, visibleText } from '@ctxbus/core/light';

/** Exit codes, documented in `ctxbus --help`. */
export const EXIT = {
  ok: 0,
  failure: 1,
  usage: 2,
  auth: 3,
  notFound: 4,
  conflict: 5,
  unavailable: 6,
} as const;

export function exitCodeFor(error: unknown): number {
  if (!CtxbusError.isInstance(error)) return EXIT.failure;
  switch (error.code) {
    case 'validation_failed':
    case 'bad_json':
    case 'unknown_runtime':
    case 'invalid_reference':
    case 'endpoint_not_allowed':
    case 'payload_too_large':
      return EXIT.usage;
    case 'unauthorized':
    case 'forbidden':
      return EXIT.auth;
    case 'not_found':
      return EXIT.notFound;
    case 'conflict':
      return EXIT.conflict;
    case 'unavailable':
      return EXIT.unavailable;
    default:
      return EXIT.failure;
  }
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/**
 * Text other runtimes wrote, made safe to show on a terminal: control characters (all but
 * newline and tab: escape sequences that recolour, conceal or move the cursor, OSC 52
 * clipboard writes) and the bidirectional overrides that reorder what is displayed become
 * visible escapes (`\x1b`, `\u202e`). An agent's title never hides the command on the
 * approve screen, nor drives the person's terminal.
 */
export function terminalSafe(text: string): string {
  return visibleText(text);
}

/** Request fields whose flag has another name. */
const FLAG_OF_FIELD: Record<string, string> = {
  relevanceTags: 'tags',
  scopes: 'scope',
  types: 'type',
  expiresAfterSeconds: 'ttl',
  tokenBudget: 'budget',
  'source.taskId': 'task',
  'source.threadId': 'thread',
  'source.agentId': 'agent',
};

/**
 * The hub names a refused request's fields (`query.minUrgency`, `body.items[0].type`,
 * `params.id`); the person typed flags and arguments: the message names those (`--min-urgency`,
 * `--type`, `<id>`).
 */
export function asFlags(message: string): string {
  return message
    .replace(
      /\b(?:query|body)(?:\.items\[\d+\])?\.([A-Za-z]+)(\.[A-Za-z]+)?\b/g,
      (_match, field: string, nested = '') => {
        const flag = FLAG_OF_FIELD[`${field}${nested}`];
        const name = flag ?? FLAG_OF_FIELD[field] ?? field;
        const rest = flag ? '' : nested;
        return `--${name.replace(/[A-Z]/g, (upper) => `-${upper.toLowerCase()}`)}${rest}`;
      },
    )
    .replace(/\bparams\.([A-Za-z]+)\b/g, (_match, field: string) => `<${field}>`);
}

/** One line for a person (or a pipe): what other runtimes wrote is shown, never obeyed. */
export function printLine(line: string): void {
  process.stdout.write(`${terminalSafe(line)}\n`);
}

/** An agent's text on one line (a newline in it cannot forge another line of ours). */
export const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim().slice(0, 500);

/** One line per item: `#seq type [urgency] title — summary (runtime, date) id`. */
export function itemLine(item: ContextItem): string {
  const urgency = item.urgency === 'background' ? '' : ` [${item.urgency}]`;
  const summary = item.summary && item.summary !== item.title ? ` — ${oneLine(item.summary)}` : '';
  return `#${item.seq} ${item.type}${urgency} ${oneLine(item.title)}${summary} (${item.source.runtime}, ${item.createdAt.slice(0, 16).replace('T', ' ')}) ${item.id}`;
}
