import type {
  HttpMethod,
  RouteAuth,
  Viewer,
  WireOperationId,
  WireRoute,
  WireRoutes,
} from '@ctxbus/core';
import { wireRoutes } from '@ctxbus/core';
import type { Context } from 'hono';
import type { z } from 'zod';
import type { AdminCaller, Caller, RuntimeCaller } from './caller.js';
import type { HubServices } from './hub-services.js';

export type { HttpMethod, RouteAuth };

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
 * The hub's half of a route: its docs and its handler. The wire half (method, path, auth,
 * schemas) comes from core's table by operation id.
 */
export interface RouteImplementation<
  P extends z.ZodType = z.ZodType,
  Q extends z.ZodType = z.ZodType,
  B extends z.ZodType = z.ZodType,
  A extends RouteAuth = RouteAuth,
> {
  summary: string;
  description?: string;
  tags: string[];
  /** Custom body parsing (after JSON decoding) when one schema cannot give good errors. */
  parseBody?: (body: unknown) => z.output<B>;
  /**
   * Runs once the caller and the params are known, before the body is read: a refusal that
   * must not wait for a well-formed body (an agent's approval, refused and audited as one).
   */
  beforeBody?(
    input: { params: z.output<P>; services: HubServices } & RouteIdentity[A],
  ): Promise<void>;
  /** Extra headers the route reads, for the docs. */
  headers?: { name: string; description: string }[];
  /** What each status means, for the docs: every success status of the wire route, and refusals. */
  statuses: Record<number, string>;
  handler(
    input: RouteInput<z.output<P>, z.output<Q>, z.output<B>, A>,
  ): Promise<RouteResult> | RouteResult;
}

/**
 * A route as data: the wire half and the hub's half. The same table drives registration,
 * validation, the OpenAPI document and the route tests.
 */
export type RouteDefinition<
  P extends z.ZodType = z.ZodType,
  Q extends z.ZodType = z.ZodType,
  B extends z.ZodType = z.ZodType,
  A extends RouteAuth = RouteAuth,
> = Omit<WireRoute, 'auth' | 'params' | 'query' | 'body'> & {
  operationId: string;
  auth: A;
  params?: P;
  query?: Q;
  body?: B;
} & RouteImplementation<P, Q, B, A>;

/** A route in the table, its handler's input still paired with its auth. */
export type AnyRouteDefinition = {
  [A in RouteAuth]: RouteDefinition<z.ZodType, z.ZodType, z.ZodType, A>;
}[RouteAuth];

/** The schema of a wire route's field, or `undefined`'s when the route has none. */
type WireField<
  Id extends WireOperationId,
  F extends 'params' | 'query' | 'body',
> = WireRoutes[Id] extends { readonly [K in F]: infer S extends z.ZodType } ? S : z.ZodUndefined;

/** Implements the wire route `operationId`: its handler is typed from the table's schemas. */
export function implement<Id extends WireOperationId>(
  operationId: Id,
  route: RouteImplementation<
    WireField<Id, 'params'>,
    WireField<Id, 'query'>,
    WireField<Id, 'body'>,
    WireRoutes[Id]['auth']
  >,
): AnyRouteDefinition {
  return { ...wireRoutes[operationId], ...route } as unknown as AnyRouteDefinition;
}
