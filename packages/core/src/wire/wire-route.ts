import type { z } from 'zod';

export type HttpMethod = 'GET' | 'POST' | 'DELETE';

/** Who may call a route: a runtime token, an admin token, any token, or anyone (health). */
export type RouteAuth = 'runtime' | 'admin' | 'any-token' | 'public';

/**
 * The wire half of a route: what a client needs to call it and to check the answer. The hub
 * adds the other half (docs and handler) by operation id; clients derive their calls from it.
 */
export interface WireRoute {
  method: HttpMethod;
  /** The path, with `:name` for each path parameter (`/api/tasks/:id`). */
  path: string;
  auth: RouteAuth;
  params?: z.ZodType;
  query?: z.ZodType;
  body?: z.ZodType;
  /** The body of each success status (for a stream: each event's data). */
  responses: Readonly<Partial<Record<number, z.ZodType>>>;
  /** The success media type when it is not JSON (`text/event-stream`). */
  contentType?: string;
}

/** A table of wire routes, each carrying its key as `operationId`. */
export type WireTable<T extends Record<string, WireRoute>> = {
  readonly [K in keyof T]: T[K] & { readonly operationId: K };
};

/** Gives each route of the table its key as `operationId`, so the id is written once. */
export function defineWireTable<const T extends Record<string, WireRoute>>(
  routes: T,
): WireTable<T> {
  return Object.fromEntries(
    Object.entries(routes).map(([operationId, route]) => [operationId, { operationId, ...route }]),
  ) as WireTable<T>;
}
