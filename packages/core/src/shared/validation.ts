import type { z } from 'zod';
import { CtxbusError } from './errors.js';

export interface ValidationIssue {
  path: string;
  message: string;
}

function pathOf(where: string, path: readonly PropertyKey[]): string {
  const parts = path.map((part) => (typeof part === 'number' ? `[${part}]` : `.${String(part)}`));
  return `${where}${parts.join('')}`.replace(/^\./, '');
}

/**
 * The issues to show for one: a union's own is zod's bare "Invalid input", so it stands for the
 * issues of the branch the value got furthest into (every issue inside it, else no top-level
 * type mismatch), their paths under the union's: `scope: Invalid option: expected one of …`.
 */
export function shownIssues(issue: z.core.$ZodIssue): z.core.$ZodIssue[] {
  // A union with a message of its own (a schema's `error`) says it better than any branch.
  if (issue.code !== 'invalid_union' || issue.message !== 'Invalid input') return [issue];
  const branches = issue.errors.filter((branch) => branch.length > 0);
  const fitting =
    branches.find((branch) => branch.every((inner) => inner.path.length > 0)) ??
    branches.find((branch) =>
      branch.every((inner) => inner.code !== 'invalid_type' || inner.path.length > 0),
    );
  if (!fitting) return [issue];
  return fitting.flatMap((inner) =>
    shownIssues({ ...inner, path: [...issue.path, ...inner.path] } as z.core.$ZodIssue),
  );
}

/**
 * A validation error that names the offending field(s): `body.items[2].title: Too small…`.
 * `where` is the part of the request that was checked (body, query, params).
 */
export function validationError(error: z.ZodError, where: string): CtxbusError {
  const issues: ValidationIssue[] = error.issues.flatMap(shownIssues).map((issue) => ({
    path: pathOf(where, issue.path),
    message: issue.message,
  }));
  const first = issues[0];
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : '';
  const message = first ? `${first.path}: ${first.message}${more}` : `${where} is invalid`;
  return new CtxbusError('validation_failed', message, { details: { issues } });
}

/**
 * How deep a request's JSON may nest (objects and arrays). Checked before any schema walks it,
 * so a value nested thousands of levels deep is a clear 400, never a stack overflow.
 */
export const MAX_JSON_DEPTH = 32;

/** An object or array on tooDeep's stack; its path is spelled out only for the answer. */
interface Nested {
  value: object;
  depth: number;
  parent: Nested | null;
  key: string;
  inArray: boolean;
}

const isNested = (value: unknown): value is object => value !== null && typeof value === 'object';

/** `.key` and `[index]` from the root down to `node`. */
function pathTo(node: Nested): string {
  let path = '';
  for (let at: Nested | null = node; at !== null && at.parent !== null; at = at.parent) {
    path = (at.inArray ? `[${at.key}]` : `.${at.key}`) + path;
  }
  return path;
}

/**
 * The first place in `value` nested deeper than `limit`, or null (iterative: no recursion).
 * Runs before every schema check, so it walks only objects and arrays and builds no path
 * until it has one to return.
 */
export function tooDeep(value: unknown, limit = MAX_JSON_DEPTH): string | null {
  if (!isNested(value)) return null;
  const stack: Nested[] = [{ value, depth: 0, parent: null, key: '', inArray: false }];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    if (next.depth >= limit) return pathTo(next) || '(root)';
    const inArray = Array.isArray(next.value);
    const fields = next.value as Record<string, unknown>;
    for (const key of Object.keys(fields)) {
      const child = fields[key];
      if (isNested(child)) {
        stack.push({ value: child, depth: next.depth + 1, parent: next, key, inArray });
      }
    }
  }
  return null;
}

/** Throws `validation_failed` when `value` nests deeper than MAX_JSON_DEPTH. */
export function assertJsonDepth(value: unknown, where: string): void {
  const path = tooDeep(value);
  if (path === null) return;
  throw new CtxbusError(
    'validation_failed',
    `${where}${path === '(root)' ? '' : path}: nested deeper than ${MAX_JSON_DEPTH} levels`,
    { details: { limit: MAX_JSON_DEPTH } },
  );
}

/**
 * The value with every lone surrogate (text that is not valid UTF-16, which no store can keep)
 * replaced by U+FFFD, in strings and object keys; the same object when there is none. Every
 * store then keeps, streams and returns exactly what the write returned.
 */
export function wellFormed<T>(value: T): T {
  if (typeof value === 'string') return (value.isWellFormed() ? value : value.toWellFormed()) as T;
  if (Array.isArray(value)) {
    const mapped = value.map(wellFormed);
    return (mapped.some((entry, index) => entry !== value[index]) ? mapped : value) as T;
  }
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value);
    const mapped = entries.map(([key, entry]) => [wellFormed(key), wellFormed(entry)] as const);
    const changed = mapped.some(([key, entry], index) => {
      const [oldKey, oldEntry] = entries[index] as [string, unknown];
      return key !== oldKey || entry !== oldEntry;
    });
    return (changed ? Object.fromEntries(mapped) : value) as T;
  }
  return value;
}

/**
 * Where `value` first holds a NUL character (in a string or an object key), or null. Iterative;
 * `value` is expected to be depth-checked already.
 */
export function firstNul(value: unknown): string | null {
  const stack: { value: unknown; path: string }[] = [{ value, path: '' }];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    if (typeof next.value === 'string') {
      if (next.value.includes('\u0000')) return next.path || '(root)';
      continue;
    }
    if (next.value === null || typeof next.value !== 'object') continue;
    for (const [key, child] of Object.entries(next.value)) {
      const path = Array.isArray(next.value) ? `${next.path}[${key}]` : `${next.path}.${key}`;
      if (key.includes('\u0000')) return path;
      stack.push({ value: child, path });
    }
  }
  return null;
}

/**
 * Parses with a schema, throwing a `validation_failed` CtxbusError that names the field. The
 * value is checked for depth first, lone surrogates become U+FFFD (`wellFormed`), and text
 * holding a NUL character is refused wherever it is (PostgreSQL cannot store it, and a filter
 * with it would be a 400 there but run on SQLite: refused alike on every store).
 */
export function parseOrThrow<T extends z.ZodType>(
  schema: T,
  value: unknown,
  where: string,
): z.output<T> {
  assertJsonDepth(value, where);
  const nul = firstNul(value);
  if (nul !== null) {
    throw new CtxbusError(
      'validation_failed',
      `${where}${nul === '(root)' ? '' : nul}: must not contain NUL characters (\\u0000)`,
    );
  }
  const result = schema.safeParse(wellFormed(value));
  if (!result.success) throw validationError(result.error, where);
  return result.data;
}
