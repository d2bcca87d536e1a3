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
 * A validation error that names the offending field(s): `body.items[2].title: Too small…`.
 * `where` is the part of the request that was checked (body, query, params).
 */
export function validationError(error: z.ZodError, where: string): CtxbusError {
  const issues: ValidationIssue[] = error.issues.map((issue) => ({
    path: pathOf(where, issue.path),
    message: issue.message,
  }));
  const first = issues[0];
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : '';
  const message = first ? `${first.path}: ${first.message}${more}` : `${where} is invalid`;
  return new CtxbusError('validation_failed', message, { details: { issues } });
}

/** Parses with a schema, throwing a `validation_failed` CtxbusError that names the field. */
export function parseOrThrow<T extends z.ZodType>(
  schema: T,
  value: unknown,
  where: string,
): z.output<T> {
  const result = schema.safeParse(value);
  if (!result.success) throw validationError(result.error, where);
  return result.data;
}
