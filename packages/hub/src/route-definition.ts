import type { Context } from 'hono';
import type { z } from 'zod';
import type { HubServices } from './hub-services.js';

export type HttpMethod = 'GET' | 'POST' | 'DELETE';

/** Who may call a route: a runtime token, an admin token, or anyone (health). */
export type RouteAuth = 'runtime' | 'admin' | 'any-token' | 'none';

export interface Caller {
  tokenId: string;
  role: 'admin' | 'runtime';
  teamId: string | null;
  runtime: string | null;
}

/** The caller of a runtime route, which always has a team and a runtime. */
export interface RuntimeCaller extends Caller {
  role: 'runtime';
  teamId: string;
  runtime: string;
}

export interface RouteResponse {
  description: string;
  schema?: z.ZodType;
  /** Media type when not JSON (e.g. text/event-stream). */
  contentType?: string;
}

export interface RouteInput<P, Q, B, A> {
  params: P;
  query: Q;
  body: B;
  caller: A;
  services: HubServices;
  context: Context;
}

export type RouteResult = { status: number; body: unknown } | Response;

/**
 * A route as data: its method, path, schemas and handler. The same table drives
 * registration, validation, the OpenAPI document and the route tests.
 */
export interface RouteDefinition<
  P extends z.ZodType = z.ZodType,
  Q extends z.ZodType = z.ZodType,
  B extends z.ZodType = z.ZodType,
> {
  method: HttpMethod;
  /** Hono path syntax (`/api/context/:id`). */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  auth: RouteAuth;
  params?: P;
  query?: Q;
  body?: B;
  /** Custom body parsing (after JSON decoding) when one schema cannot give good errors. */
  parseBody?: (body: unknown) => z.output<B>;
  /** Extra headers the route reads, for the docs. */
  headers?: { name: string; description: string }[];
  responses: Record<number, RouteResponse>;
  handler(
    input: RouteInput<z.output<P>, z.output<Q>, z.output<B>, Caller>,
  ): Promise<RouteResult> | RouteResult;
}

/** Declares a route with its handler typed from its schemas. */
export function defineRoute<
  P extends z.ZodType = z.ZodUndefined,
  Q extends z.ZodType = z.ZodUndefined,
  B extends z.ZodType = z.ZodUndefined,
>(route: RouteDefinition<P, Q, B>): RouteDefinition {
  return route as unknown as RouteDefinition;
}
