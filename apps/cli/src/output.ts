import type { ContextItem } from '@ctxbus/core/contract';
import { CtxbusError } from '@ctxbus/core/light';

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

export function printLine(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** One line per item: `#seq type [urgency] title — summary (runtime, date) id`. */
export function itemLine(item: ContextItem): string {
  const urgency = item.urgency === 'background' ? '' : ` [${item.urgency}]`;
  const summary = item.summary && item.summary !== item.title ? ` — ${item.summary}` : '';
  return `#${item.seq} ${item.type}${urgency} ${item.title}${summary} (${item.source.runtime}, ${item.createdAt.slice(0, 16).replace('T', ' ')}) ${item.id}`;
}
