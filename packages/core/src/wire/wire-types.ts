import type { z } from 'zod';
import type { QueryValue } from './wire-request.js';
import type { WireOperationId, WireRoutes } from './wire-routes.js';

type Field<
  Id extends WireOperationId,
  F extends 'params' | 'query' | 'body',
> = WireRoutes[Id] extends { readonly [K in F]: infer S extends z.ZodType } ? S : never;

/** The path parameters of an operation, as strings. */
export type WireParams<Id extends WireOperationId> = {
  [K in keyof z.input<Field<Id, 'params'>>]: string;
};

/** The query of an operation as a client passes it (lists become comma lists). */
export type WireQuery<Id extends WireOperationId> = {
  [K in keyof z.input<Field<Id, 'query'>>]?: QueryValue;
};

/** The JSON body of an operation. */
export type WireBody<Id extends WireOperationId> = z.input<Field<Id, 'body'>>;

/** What a call of an operation sends: its path parameters, query and body, as it has them. */
export type WireInput<Id extends WireOperationId> = ([Field<Id, 'params'>] extends [never]
  ? { params?: undefined }
  : { params: WireParams<Id> }) &
  ([Field<Id, 'query'>] extends [never] ? { query?: undefined } : { query?: WireQuery<Id> }) &
  ([Field<Id, 'body'>] extends [never] ? { body?: undefined } : { body: WireBody<Id> });

/** The answer of an operation (any of its success statuses), as its schema gives it. */
export type WireOutput<Id extends WireOperationId> = z.output<
  NonNullable<WireRoutes[Id]['responses'][keyof WireRoutes[Id]['responses']]>
>;
