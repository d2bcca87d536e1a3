import { CtxbusError, parseOrThrow, parseStrictJson, StrictJsonError } from '@ctxbus/core';
import type { Context } from 'hono';
import type { z } from 'zod';
import { adminCallerOf, runtimeCallerOf, viewerOf } from './caller.js';
import type { HubServices } from './hub-services.js';
import type { RouteAuth, RouteDefinition, RouteIdentity } from './route-definition.js';

export function errorBody(code: CtxbusError['code'], message: string, details?: unknown) {
  return new CtxbusError(code, message, details === undefined ? {} : { details });
}

/**
 * The query, one string per parameter: a repeated one joined with commas, which a list takes
 * as its values. A parameter that takes one value, refused only because it was repeated, is
 * told so (`window=7&window=8` read as "digits only" before).
 */
function parseQuery<T extends z.ZodType>(schema: T, context: Context): z.output<T> {
  const given = Object.entries(context.req.queries());
  // fromEntries defines own properties: a parameter named __proto__ stays a parameter.
  const joined = Object.fromEntries(given.map(([name, values]) => [name, values.join(',')]));
  try {
    return parseOrThrow(schema, joined, 'query');
  } catch (error) {
    for (const [name, values] of given) {
      if (values.length < 2) continue;
      const once = schema.safeParse({ ...joined, [name]: values[0] });
      if (once.success || once.error.issues.every((issue) => issue.path[0] !== name)) {
        throw new CtxbusError(
          'validation_failed',
          `query.${name}: given ${values.length} times; it takes one value`,
        );
      }
    }
    throw error;
  }
}

/** Whitespace alone (JSON's: space, tab, CR, LF), or nothing. */
function isBlank(bytes: Uint8Array): boolean {
  return bytes.every((byte) => byte === 32 || byte === 9 || byte === 10 || byte === 13);
}

async function readJsonBody(context: Context): Promise<unknown> {
  const type = context.req.header('content-type') ?? '';
  if (!/^application\/([\w.+-]*\+)?json\b/i.test(type.trim())) {
    throw errorBody(
      'unsupported_media_type',
      `send the body as application/json (got "${type || 'no content type'}")`,
    );
  }
  const bytes = new Uint8Array(await context.req.arrayBuffer());
  if (isBlank(bytes)) throw errorBody('bad_json', 'the request body is empty; send JSON');
  try {
    return parseStrictJson(bytes);
  } catch (error) {
    if (error instanceof StrictJsonError) throw errorBody('bad_json', error.message);
    throw error;
  }
}

/** Checks the bearer token for each kind of route and says who the handler serves. */
const identify: {
  [A in RouteAuth]: (services: HubServices, authorization?: string) => Promise<RouteIdentity[A]>;
} = {
  public: async () => ({}),
  'any-token': async (services, authorization) => ({
    caller: await services.verifier.verify(authorization),
  }),
  admin: async (services, authorization) => ({
    caller: adminCallerOf(await services.verifier.verify(authorization)),
  }),
  runtime: async (services, authorization) => {
    const caller = runtimeCallerOf(await services.verifier.verify(authorization));
    return { caller, viewer: viewerOf(caller) };
  },
};

/** Authenticates, parses and runs one request of a route, its handler typed by its auth. */
export async function handleRoute<A extends RouteAuth>(
  route: RouteDefinition<z.ZodType, z.ZodType, z.ZodType, A>,
  services: HubServices,
  context: Context,
): Promise<Response> {
  const identity = await identify[route.auth](services, context.req.header('authorization'));
  const params = route.params
    ? parseOrThrow(route.params, context.req.param(), 'params')
    : undefined;
  const query = route.query ? parseQuery(route.query, context) : undefined;
  await route.beforeBody?.({ params, services, ...identity });
  let body: unknown;
  if (route.body) {
    const json = await readJsonBody(context);
    body = route.parseBody ? route.parseBody(json) : parseOrThrow(route.body, json, 'body');
  }
  const result = await route.handler({ params, query, body, services, context, ...identity });
  if (result instanceof Response) return result;
  if (services.validateResponses) checkResponse(route, services, result);
  return context.json(result.body as object, result.status as 200);
}

/** Throws (and logs) when a handler's answer does not match the schema its route declares. */
function checkResponse(
  route: Pick<RouteDefinition, 'operationId' | 'responses'>,
  services: HubServices,
  result: { status: number; body: unknown },
): void {
  const schema = route.responses[result.status];
  const check = schema?.safeParse(result.body);
  if (schema && check?.success) return;
  services.logger.error(
    { route: route.operationId, status: result.status, issues: check?.error?.issues },
    'response does not match its declared schema',
  );
  throw errorBody(
    'internal',
    `response of ${route.operationId} (${result.status}) does not match its schema`,
  );
}
