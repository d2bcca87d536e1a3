import type { Viewer } from '@ctxbus/core';
import type { Context } from 'hono';
import type { z } from 'zod';
import type { AdminCaller, Caller, RuntimeCaller } from './caller.js';
import type { HubServices } from './hub-services.js';

export type HttpMethod = 'GET' | 'POST' | 'DELETE';

/** Who may call a route: a runtime token, an admin token, any token, or anyone (health). */
export type RouteAuth = 'runtime' | 'admin' | 'any-token' | 'public';

/**
 * What a handler learns about its caller, by the route's auth: a public route nothing, an
 * admin route its admin caller, a runtime route its caller and the viewer it reads as.
 */
export interface RouteIdentity {
  public: Record<never, never>;
  'any-token': { caller: Caller };
  admin: { caller: AdminCaller };
  runtime: { caller: RuntimeCaller; viewer: Viewer };
}

export interface RouteResponse {
  description: string;
  schema?: z.ZodType;
  /** Media type when not JSON (e.g. text/event-stream). */
  contentType?: string;
}

export interface RouteRequest<P, Q, B> {
  params: P;
  query: Q;
  body: B;
  services: HubServices;
  context: Context;
}

export type RouteInput<P, Q, B, A extends RouteAuth> = RouteRequest<P, Q, B> & RouteIdentity[A];

export type RouteResult = { status: number; body: unknown } | Response;

/**
 * A route as data: its method, path, schemas and handler. The same table drives
 * registration, validation, the OpenAPI document and the route tests.
 */
export interface RouteDefinition<
  P extends z.ZodType = z.ZodType,
  Q extends z.ZodType = z.ZodType,
  B extends z.ZodType = z.ZodType,
  A extends RouteAuth = RouteAuth,
> {
  method: HttpMethod;
  /** Hono path syntax (`/api/context/:id`). */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  auth: A;
  params?: P;
  query?: Q;
  body?: B;
  /** Custom body parsing (after JSON decoding) when one schema cannot give good errors. */
  parseBody?: (body: unknown) => z.output<B>;
  /** Extra headers the route reads, for the docs. */
  headers?: { name: string; description: string }[];
  responses: Record<number, RouteResponse>;
  handler(
    input: RouteInput<z.output<P>, z.output<Q>, z.output<B>, A>,
  ): Promise<RouteResult> | RouteResult;
}

/** A route in the table, its handler's input still paired with its auth. */
export type AnyRouteDefinition = {
  [A in RouteAuth]: RouteDefinition<z.ZodType, z.ZodType, z.ZodType, A>;
}[RouteAuth];

/** Declares a route with its handler typed from its schemas and its auth. */
export function defineRoute<
  A extends RouteAuth,
  P extends z.ZodType = z.ZodUndefined,
  Q extends z.ZodType = z.ZodUndefined,
  B extends z.ZodType = z.ZodUndefined,
>(route: RouteDefinition<P, Q, B, A>): AnyRouteDefinition {
  return route as unknown as AnyRouteDefinition;
}
