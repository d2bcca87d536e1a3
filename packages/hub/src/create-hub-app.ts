import type { IncomingMessage } from 'node:http';
import { ServerResponse } from 'node:http';
import type { Logger } from '@ctxbus/core';
import { CtxbusError } from '@ctxbus/core';
import type { Store } from '@ctxbus/store';
import type { Context, MiddlewareHandler, NotFoundHandler } from 'hono';
import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { cors } from 'hono/cors';
import { HTTPException } from 'hono/http-exception';
import { bearerToken } from './auth.js';
import { clientGone } from './client-gone.js';
import { errorBody, handleRoute } from './handle-route.js';
import type { HubOptions } from './hub-options.js';
import type { HubServices } from './hub-services.js';
import type { AnyRouteDefinition } from './route-definition.js';
import { logStoreDamage } from './store-damage.js';

/** Headers a cross-origin page sends (the token, JSON bodies, the stream's resume point). */
const CORS_ALLOW_HEADERS = ['authorization', 'content-type', 'last-event-id'];

/**
 * The hub's HTTP app: CORS and body limits, `routes` mounted on `services`, then the
 * extensions, and the JSON answers for unknown routes and errors.
 */
export function createHubApp(
  services: HubServices,
  routes: readonly AnyRouteDefinition[],
  options: Pick<HubOptions, 'corsOrigins' | 'extensions'>,
): Hono {
  const app = new Hono();
  app.use('*', answersLimiter());
  app.use('*', askForBearer);
  if (options.corsOrigins && options.corsOrigins.length > 0) {
    allowCors(app, options.corsOrigins);
  }
  const limitBody = bodyLimiter(services.maxBodyBytes, async (authorization) => {
    // The team a body counts for; a token the hub does not take counts for none (its request
    // is answered 401 before its body is read).
    if (!authorization) return null;
    const caller = await services.verifier.verify(authorization).catch(() => null);
    return caller?.teamId ?? null;
  });
  // Every route that takes a body shares the one budget: /mcp's uploads too (an extension's).
  for (const path of ['/api/*', '/a2a', '/a2a/*', '/mcp', '/mcp/*']) {
    app.use(path, plainBodies);
    app.use(path, limitBody);
  }
  for (const route of routes) {
    app.on(route.method, route.path, (context) => handleRoute(route, services, context));
  }
  for (const extension of options.extensions ?? []) extension.mount(app, services);
  app.notFound(notFound(routes));
  app.onError(onError(services.logger, services.store));
  return app;
}

/**
 * A body the hub reads as sent: one with a Content-Encoding (gzip, say) is refused by name
 * (415), not read as bytes that are no JSON.
 */
const plainBodies: MiddlewareHandler = async (context, next) => {
  const encoding = context.req.header('content-encoding')?.trim().toLowerCase();
  if (encoding && encoding !== 'identity') {
    throw new CtxbusError(
      'unsupported_media_type',
      `the hub reads request bodies as sent: Content-Encoding ${encoding} is not supported`,
    );
  }
  await next();
};

/**
 * A 401 says how to authenticate (RFC 9110: `WWW-Authenticate`), whichever route answered it:
 * a bearer token.
 */
const askForBearer: MiddlewareHandler = async (context, next) => {
  await next();
  if (context.res.status === 401 && !context.res.headers.has('www-authenticate')) {
    context.res.headers.set('www-authenticate', 'Bearer realm="ctxbus"');
  }
};

/**
 * Exact origins only, no cookies (the token travels in the Authorization header): an origin
 * not listed gets no CORS headers, so the browser keeps the answer from its page.
 */
function allowCors(app: Hono, origins: readonly string[]): void {
  const allowCors = cors({
    origin: [...origins],
    allowMethods: ['GET', 'POST', 'DELETE'],
    allowHeaders: CORS_ALLOW_HEADERS,
    exposeHeaders: ['retry-after', 'allow'],
    maxAge: 600,
  });
  app.use('/api/*', allowCors);
  app.use('/health', allowCors);
}

/**
 * A refusal made before any route runs (limits), as the endpoint's clients read errors: a
 * JSON-RPC error (id null, the code in `data`) on the MCP endpoint, whose SDK clients expect
 * one, the API's error shape elsewhere. A 429 or 503 says when to come back.
 */
function refuse(context: Context, error: CtxbusError, status: 405 | 413 | 429 | 503): Response {
  if (status === 429 || status === 503) context.header('Retry-After', '1');
  const path = context.req.path;
  if (path === '/mcp' || path.startsWith('/mcp/')) {
    return context.json(
      {
        jsonrpc: '2.0',
        id: null,
        error: {
          code: -32000,
          message: error.message,
          data: {
            code: error.code,
            ...(error.details !== undefined && { details: error.details }),
          },
        },
      },
      status,
    );
  }
  return context.json(error.toJSON(), status);
}

/** Requests one connection may have under way at once (HTTP/1.1 pipelining). */
export const REQUESTS_PER_CONNECTION = 8;

/**
 * Bytes of answers one bearer token may leave unread: written by the hub, not yet taken by the
 * client (the socket's send queue), over all its connections.
 */
export const UNREAD_ANSWER_BYTES_PER_TOKEN = 16 * 1024 * 1024;

/**
 * What the hub holds for answers its clients have not taken, bounded two ways, each refused
 * with 429 at once. A request is under way until its answer has left the process (or the
 * connection closed); one pair of listeners per request keeps both counts.
 *
 * - Per connection, REQUESTS_PER_CONNECTION under way: HTTP/1.1 lets a client send request
 *   after request without reading an answer, and Node runs each one it has read (a client that
 *   pipelined hundreds of large reads and read nothing held 4 GB in 16 s).
 * - Per bearer token, UNREAD_ANSWER_BYTES_PER_TOKEN unread over all its connections: an answer
 *   stays in memory until the client reads it, and Node never gives up on a client that does
 *   not (twenty connections of one token each asking for a large list held 1.2 GB). With pages
 *   bounded in size (routes/page-budget.ts), what one token can make the hub hold is its
 *   budget plus the answers of the requests it has under way. SSE streams count too (each is
 *   also cut once it holds DEFAULT_MAX_STREAM_PENDING_BYTES).
 */
function answersLimiter(): Parameters<Hono['use']>[1] {
  const underWay = new WeakMap<object, number>();
  const byToken = new Map<string, Set<ServerResponse>>();
  return async (context, next) => {
    const env = context.env as { incoming?: IncomingMessage; outgoing?: ServerResponse };
    const socket = env?.incoming?.socket;
    const outgoing = env?.outgoing;
    // Served in process (app.request), or a WebSocket upgrade: no connection of its own here.
    if (!socket || !(outgoing instanceof ServerResponse)) return next();
    const count = underWay.get(socket) ?? 0;
    if (count >= REQUESTS_PER_CONNECTION) {
      return refuse(
        context,
        errorBody(
          'limit_reached',
          `this connection has ${REQUESTS_PER_CONNECTION} requests under way (pipelined): read their answers before sending more`,
        ),
        429,
      );
    }
    // No token: answered 401, or /health.
    const token = bearerToken(context.req.header('authorization'));
    const answers = token ? byToken.get(token) : undefined;
    if (answers && unreadBytes(answers) > UNREAD_ANSWER_BYTES_PER_TOKEN) {
      return refuse(
        context,
        errorBody(
          'limit_reached',
          `this token's earlier answers hold more than ${UNREAD_ANSWER_BYTES_PER_TOKEN} bytes its client has not read; read them before asking for more`,
          { limit: UNREAD_ANSWER_BYTES_PER_TOKEN },
        ),
        429,
      );
    }
    underWay.set(socket, count + 1);
    const held = token ? (answers ?? new Set<ServerResponse>()) : null;
    if (token && held) {
      held.add(outgoing);
      byToken.set(token, held);
    }
    let done = false;
    const release = () => {
      if (done) return;
      done = true;
      underWay.set(socket, (underWay.get(socket) ?? 1) - 1);
      if (!token || !held) return;
      held.delete(outgoing);
      if (held.size === 0 && byToken.get(token) === held) byToken.delete(token);
    };
    outgoing.once('finish', release);
    outgoing.once('close', release);
    await next();
  };
}

/** What `answers` hold unsent: each socket's send queue once, and each answer's own queue. */
function unreadBytes(answers: ReadonlySet<ServerResponse>): number {
  const sockets = new Set<object>();
  let bytes = 0;
  for (const answer of answers) {
    const socket = answer.socket;
    // An answer's writableLength counts its socket's queue too, when it has one.
    const queued = socket ? socket.writableLength : 0;
    bytes += answer.writableLength - queued;
    if (socket && !sockets.has(socket)) {
      sockets.add(socket);
      bytes += queued;
    }
  }
  return bytes;
}

/** Request bodies the hub receives at once, in bodies of the largest size allowed. */
export const BODIES_IN_FLIGHT = 32;

/** Of those, the bodies one bearer token's requests may hold at once. */
export const BODIES_PER_TOKEN = 8;

/** Of those, the bodies one team's tokens may hold at once: half, so no team holds them all. */
export const BODIES_PER_TEAM = 16;

/**
 * Refuses a body over `maxBytes` (413). A declared length is checked from the header alone;
 * only a body of unknown length is counted as it streams (hono's bodyLimit). Checking the
 * header first keeps the request body from being turned into a web stream before the route
 * reads it.
 *
 * Bodies being received hold memory until their requests end, and a client may send one
 * slowly: all of them together may hold BODIES_IN_FLIGHT x `maxBytes` (a body of unknown
 * length counts as `maxBytes`). Past it a request is answered 503 `unavailable` with
 * Retry-After at once, its body unread. One bearer token's requests may hold at most
 * BODIES_PER_TOKEN x `maxBytes` of it, and one team's tokens together BODIES_PER_TEAM x
 * `maxBytes` (past either, 429 `limit_reached`), so a client that stalls its uploads (a stuck
 * or hostile agent, or one team's many) cannot refuse every other runtime's or team's writes. A
 * request whose token is not valid holds its share only until it is answered 401.
 */
function bodyLimiter(
  maxBytes: number,
  teamOf: (authorization: string | undefined) => Promise<string | null>,
): Parameters<Hono['use']>[1] {
  const tooLarge = (context: Context) =>
    refuse(
      context,
      errorBody('payload_too_large', `the request body is larger than ${maxBytes} bytes`, {
        limit: maxBytes,
      }),
      413,
    );
  const limitStream = bodyLimit({ maxSize: maxBytes, onError: tooLarge });
  const budget = BODIES_IN_FLIGHT * maxBytes;
  const tokenBudget = BODIES_PER_TOKEN * maxBytes;
  const teamBudget = BODIES_PER_TEAM * maxBytes;
  let inFlight = 0;
  const heldByToken = new Map<string, number>();
  const heldByTeam = new Map<string, number>();
  const teamBusy = (context: Context) =>
    refuse(
      context,
      errorBody(
        'limit_reached',
        `this team's tokens have ${BODIES_PER_TEAM} request bodies arriving at once, the most one team may; finish sending those first`,
        { limit: BODIES_PER_TEAM },
      ),
      429,
    );
  const tokenBusy = (context: Context) =>
    refuse(
      context,
      errorBody(
        'limit_reached',
        `this token has ${BODIES_PER_TOKEN} request bodies arriving at once, the most one token may; finish sending those first`,
        { limit: BODIES_PER_TOKEN },
      ),
      429,
    );
  const busy = (context: Context) =>
    refuse(
      context,
      errorBody(
        'unavailable',
        'the hub is receiving as many request bodies as it holds at once; try again shortly',
      ),
      503,
    );
  return async (context, next) => {
    const length = context.req.header('content-length');
    const chunked = context.req.header('transfer-encoding') !== undefined;
    // From the wire, no length and no transfer coding is no body (a GET, a stream): going on at
    // once keeps the request from being turned into a web Request just to find that out. A
    // request made in process (app.request) may carry a body without either: counted below.
    const fromWire = (context.env as { incoming?: IncomingMessage } | undefined)?.incoming;
    if (length === undefined && !chunked && fromWire) return next();
    const streamed = chunked || length === undefined;
    if (!streamed && Number(length) > maxBytes) return tooLarge(context);
    const bytes = chunked ? maxBytes : Number(length ?? 0);
    if (!(bytes > 0)) return streamed ? limitStream(context, next) : next();
    const authorization = context.req.header('authorization');
    const token = bearerToken(authorization) ?? '';
    const team = (await teamOf(authorization)) ?? '';
    // Every share read after the wait for the team, then taken at once: concurrent requests of
    // one token or team each see the others' bodies.
    const held = heldByToken.get(token) ?? 0;
    if (held + bytes > tokenBudget) return tokenBusy(context);
    const teamHeld = team === '' ? 0 : (heldByTeam.get(team) ?? 0);
    if (teamHeld + bytes > teamBudget) return teamBusy(context);
    if (inFlight + bytes > budget) return busy(context);
    inFlight += bytes;
    heldByToken.set(token, held + bytes);
    if (team !== '') heldByTeam.set(team, teamHeld + bytes);
    let released = false;
    const releaseOnce = () => {
      if (released) return;
      released = true;
      inFlight -= bytes;
      release(heldByToken, token, bytes);
      if (team !== '') release(heldByTeam, team, bytes);
    };
    // A client that hangs up mid-body frees its share at once, whether or not the route (an
    // extension's, say) notices.
    fromWire?.once('close', releaseOnce);
    try {
      if (streamed) return await limitStream(context, next);
      await next();
    } finally {
      fromWire?.off('close', releaseOnce);
      releaseOnce();
    }
  };
}

/** Takes `bytes` off `key`'s share, forgetting a key that holds nothing. */
function release(held: Map<string, number>, key: string, bytes: number): void {
  const left = (held.get(key) ?? 0) - bytes;
  if (left > 0) held.set(key, left);
  else held.delete(key);
}

/** 405 with `Allow` when the path is a route's under another method, 404 otherwise. */
function notFound(routes: readonly AnyRouteDefinition[]): NotFoundHandler {
  return (context) => {
    const path = context.req.path;
    const allowed = routes
      .filter((route) => new RegExp(`^${route.path.replace(/:[^/]+/g, '[^/]+')}$`).test(path))
      .map((route) => route.method);
    if (allowed.length > 0) {
      context.header('Allow', [...new Set(allowed)].join(', '));
      return context.json(
        errorBody(
          'method_not_allowed',
          `${context.req.method} is not allowed on ${path}; use ${allowed.join(' or ')}`,
        ).toJSON(),
        405,
      );
    }
    return context.json(
      errorBody('not_found', `no route ${context.req.method} ${path}`).toJSON(),
      404,
    );
  };
}

/**
 * A typed error answers as itself; anything else is logged and answers 500. Only a fault of the
 * hub's own is an error with its stack: a refusal the hub meant (an `unavailable` answer such as
 * "no public URL for that Host", which any client can ask for) is one warning line, and a client
 * that hung up mid-body one info line, so no client fills the log with stacks.
 */
function onError(
  logger: Logger,
  store: Pick<Store, 'explainError' | 'damage'>,
): Parameters<Hono['onError']>[0] {
  return (thrown, context) => {
    // What the store can say of its own failures (a damaged database file: 503, named).
    const explained = store.explainError?.(thrown) ?? thrown;
    const error = explained instanceof Error ? explained : thrown;
    if (CtxbusError.isInstance(error)) {
      if (error.code === 'internal') logger.error({ err: error }, error.message);
      else if (error === store.damage?.()) logStoreDamage(logger, error);
      else if (error.status >= 500) {
        logger.warn({ code: error.code, path: context.req.path }, error.message);
      }
      return context.json(error.toJSON(), error.status as 400);
    }
    if (error instanceof HTTPException) {
      return context.json(errorBody('validation_failed', error.message).toJSON(), error.status);
    }
    if (clientGone(error)) {
      logger.info({ path: context.req.path }, 'the client closed the connection mid-request');
      return context.json(
        errorBody('validation_failed', 'the request was cut short').toJSON(),
        400,
      );
    }
    logger.error({ err: error, path: context.req.path }, 'unhandled error');
    return context.json(errorBody('internal', 'internal error; see the hub log').toJSON(), 500);
  };
}
