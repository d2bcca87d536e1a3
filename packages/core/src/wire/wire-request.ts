import { CtxbusError } from '../shared/errors.js';

/** A query parameter as a client passes it: lists become comma lists, absent values drop out. */
export type QueryValue =
  | string
  | number
  | boolean
  | readonly (string | number)[]
  | null
  | undefined;

/**
 * The query string of a hub request (no `?`): arrays become comma lists, absent values are
 * left out, names and values are URI-encoded.
 */
export function wireQueryString(query: object = {}): string {
  const parts: string[] = [];
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined || value === null) continue;
    const text = Array.isArray(value) ? value.join(',') : String(value);
    parts.push(`${encodeURIComponent(name)}=${encodeURIComponent(text)}`);
  }
  return parts.join('&');
}

/** The path of a route with its `:name` parameters filled in (each URI-encoded). */
export function wirePath(path: string, params: Readonly<Record<string, string>> = {}): string {
  return path.replace(/:([A-Za-z0-9_]+)/g, (_match, name: string) => {
    const value = Object.hasOwn(params, name) ? params[name] : undefined;
    if (value === undefined) {
      throw new CtxbusError('validation_failed', `params.${name}: required by ${path}`);
    }
    // An empty one would name another route (`/api/tasks/` for `/api/tasks/:id`).
    if (value === '') throw new CtxbusError('validation_failed', `${name} must not be empty`);
    return encodeURIComponent(value);
  });
}

/** The path and query string of a request (`/api/context?limit=5`). */
export function wireTarget(
  path: string,
  params?: Readonly<Record<string, string>>,
  query?: object,
): string {
  const search = wireQueryString(query);
  return search ? `${wirePath(path, params)}?${search}` : wirePath(path, params);
}
