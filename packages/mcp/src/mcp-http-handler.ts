import { randomUUID } from 'node:crypto';
import type { Logger } from '@ctxbus/core/contract';
import { DEFAULT_MAX_BODY_BYTES, silentLogger } from '@ctxbus/core/contract';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { ContextBackend } from './context-backend.js';
import type { CtxbusMcpServerOptions } from './create-ctxbus-mcp-server.js';
import { createCtxbusMcpServer } from './create-ctxbus-mcp-server.js';
import {
  bearerToken,
  hostNameOf,
  LOCALHOST_NAMES,
  sameDigest,
  tokenDigest,
} from './http-guards.js';
import { jsonRpcErrorResponse, refusal, WWW_AUTHENTICATE, watchBody } from './http-responses.js';
import type { Session } from './mcp-sessions.js';
import { McpSessions } from './mcp-sessions.js';
import { refuseInvalidParams } from './request-params.js';
import { checkedRpcRequest } from './rpc-body.js';

export interface McpHttpHandlerOptions {
  /**
   * The backend a new session works through, acting as the token's team and runtime. Called
   * once per session, at `initialize`; a `CtxbusError` with code `unauthorized` or `forbidden`
   * answers 401 or 403.
   */
  createBackend(token: string): ContextBackend | Promise<ContextBackend>;
  /**
   * Checks the bearer token on every request, so a revoked token stops a running session at
   * once (inside the hub: the hub's token verifier). Throw a `CtxbusError` to refuse. Without
   * it, requests of a session must carry the token that opened it, and the backend's own
   * checks apply to every call.
   */
  verifyToken?(token: string): unknown;
  /**
   * Whether the token with this SHA-256 (hex) still works, asked every `tokenCheckMs` for each
   * token holding sessions (inside the hub: its verifier's `stillValid`). The sessions of a
   * token that no longer does are closed, their event streams ended and their places in the
   * limits freed: requests alone would never end a session that only holds a stream open.
   */
  tokenStillValid?(digestHex: string): boolean | Promise<boolean>;
  /** How often `tokenStillValid` is asked (default 5 s). */
  tokenCheckMs?: number;
  /**
   * Host names (no port; IPv6 in brackets) the endpoint answers to: a request whose Host header
   * names another is refused with 403, the defence against DNS rebinding. Default: localhost,
   * 127.0.0.1 and [::1]. Add the names clients use when the hub listens beyond loopback.
   */
  allowedHosts?: readonly string[];
  /**
   * When set, a request with an Origin header that is neither in this list nor the endpoint's
   * own origin (the Host it was sent to) is refused with 403.
   */
  allowedOrigins?: readonly string[];
  logger?: Logger;
  /** A session with no request and no open event stream for this long is closed (30 min). */
  idleTimeoutMs?: number;
  /**
   * Sessions open at once on the endpoint, a memory bound (default 1,000): an `initialize` that
   * would add one past it gets 503 `unavailable`. One that replaces a session of its own token
   * (see `maxSessionsPerToken`) is not refused by it.
   */
  maxSessions?: number;
  /**
   * Sessions one token may hold (default 32). A token at its limit that opens another closes
   * its own least recently used idle session (no request in progress, no open event stream);
   * when none of them is idle, the new one is refused with 429 `limit_reached`. Sessions of
   * other tokens are never closed or counted for it.
   */
  maxSessionsPerToken?: number;
  /**
   * Sessions the tokens of one team may hold together (default 128), so that one team's many
   * tokens cannot fill the endpoint for the others: past it a new session that adds one to the
   * team is refused with 429 `limit_reached`. The team is what `verifyToken` returns
   * (`{ teamId }`); without it, teams are not counted.
   */
  maxSessionsPerTeam?: number;
  /** Largest POST body (default 1 MiB, the hub's own limit). */
  maxRequestBodyBytes?: number;
  /**
   * Bytes a session's GET event stream may hold that its reader has not read (default 1 MiB).
   * Past it, the stream is ended and its queue dropped: the client may open another (resource
   * updates are hints to read again). Without it, a client that stops reading keeps every
   * notification queued for as long as its session lives.
   */
  maxUnreadStreamBytes?: number;
  /** SSE keep-alive comment interval (default 15 s). */
  keepAliveMs?: number;
  /** Resource-update tuning for every session's server. */
  updates?: CtxbusMcpServerOptions['updates'];
}

export interface McpHttpHandler {
  /**
   * Serves one request to the MCP endpoint (POST, GET or DELETE, Streamable HTTP, session
   * mode). Never throws: every failure is a JSON response.
   */
  handle(request: Request): Promise<Response>;
  /** Sessions currently open. */
  readonly sessionCount: number;
  /** Closes every session and stops the idle sweep. */
  close(): Promise<void>;
}

const DEFAULT_IDLE_TIMEOUT_MS = 30 * 60_000;
const DEFAULT_MAX_SESSIONS = 1_000;
const DEFAULT_MAX_SESSIONS_PER_TOKEN = 32;
const DEFAULT_MAX_SESSIONS_PER_TEAM = 128;
const DEFAULT_MAX_UNREAD_STREAM_BYTES = 1024 * 1024;

/** The team a token verdict names (`{ teamId }`), or null. */
function teamOf(verdict: unknown): string | null {
  if (typeof verdict !== 'object' || verdict === null || !('teamId' in verdict)) return null;
  const { teamId } = verdict as { teamId: unknown };
  return typeof teamId === 'string' ? teamId : null;
}

/** What every request must pass before it reaches a session. */
interface Gate {
  allowedHosts: ReadonlySet<string>;
  allowedOrigins: ReadonlySet<string> | undefined;
  verifyToken: McpHttpHandlerOptions['verifyToken'];
  logger: Logger;
}

/** An Origin in the list, or the endpoint's own (a page the hub served: same host and port). */
function allowedOrigin(origin: string, hostHeader: string | null, gate: Gate): boolean {
  if (gate.allowedOrigins?.has(origin)) return true;
  try {
    return hostHeader !== null && new URL(origin).host === hostHeader.toLowerCase();
  } catch {
    return false;
  }
}

/**
 * Host (DNS rebinding), Origin, method and bearer token, then the token verifier: the caller's
 * token and team, or the refusal.
 */
async function admit(
  request: Request,
  gate: Gate,
): Promise<Response | { token: string; team: string | null }> {
  const hostHeader = request.headers.get('host');
  const host = hostNameOf(hostHeader);
  if (host === undefined || !gate.allowedHosts.has(host)) {
    gate.logger.warn({ host: hostHeader }, 'MCP request refused: host not allowed');
    return jsonRpcErrorResponse(403, `Invalid Host header: ${hostHeader ?? '(none)'}`, {
      ctxbusCode: 'forbidden',
    });
  }
  const origin = request.headers.get('origin');
  if (origin !== null && gate.allowedOrigins && !allowedOrigin(origin, hostHeader, gate)) {
    return jsonRpcErrorResponse(403, `Invalid Origin header: ${origin}`, {
      ctxbusCode: 'forbidden',
    });
  }
  if (request.method !== 'POST' && request.method !== 'GET' && request.method !== 'DELETE') {
    return jsonRpcErrorResponse(405, `${request.method} is not allowed; use POST, GET or DELETE`, {
      ctxbusCode: 'method_not_allowed',
      headers: { allow: 'POST, GET, DELETE' },
    });
  }
  const token = bearerToken(request.headers.get('authorization'));
  if (token === undefined) {
    return jsonRpcErrorResponse(
      401,
      'missing or malformed Authorization header; send "Authorization: Bearer <token>"',
      { ctxbusCode: 'unauthorized', headers: WWW_AUTHENTICATE },
    );
  }
  if (!gate.verifyToken) return { token, team: null };
  try {
    return { token, team: teamOf(await gate.verifyToken(token)) };
  } catch (error) {
    return refusal(error, gate.logger);
  }
}

/** How often the tokens holding sessions are checked (tokenStillValid). */
const DEFAULT_TOKEN_CHECK_MS = 5_000;

/** Closes the sessions of every token that no longer works (a failed check is tried again). */
async function closeRevoked(
  sessions: McpSessions,
  stillValid: ((digestHex: string) => boolean | Promise<boolean>) | undefined,
  logger: Logger,
): Promise<void> {
  if (!stillValid) return;
  for (const owner of new Set([...sessions.open.values()].map((session) => session.owner))) {
    try {
      if (!(await stillValid(owner))) sessions.closeOwner(owner);
    } catch (error) {
      logger.warn({ err: error }, 'MCP session token check failed; tried again at the next');
    }
  }
}

/** What bounds a session's GET event stream (see McpHttpHandlerOptions.maxUnreadStreamBytes). */
interface StreamBound {
  maxUnreadBytes: number;
  logger: Logger;
}

/**
 * The session counts as busy until the response has been sent (or the reader left). A GET
 * event stream (`bound`) is ended once its reader leaves too much unread.
 */
function untilSent(session: Session, response: Response, bound?: StreamBound): Response {
  const eventStream = response.headers.get('content-type')?.startsWith('text/event-stream');
  return watchBody(
    response,
    () => {
      session.busy -= 1;
      session.lastSeen = Date.now();
    },
    bound && eventStream
      ? {
          maxUnreadBytes: bound.maxUnreadBytes,
          onOverflow: () =>
            bound.logger.warn(
              { maxUnreadBytes: bound.maxUnreadBytes },
              'MCP event stream ended: its reader left too much unread (it may open another)',
            ),
        }
      : undefined,
  );
}

/** A request of an open session, which must carry the token that opened it. */
async function inSession(
  request: Request,
  session: Session | undefined,
  token: string,
  bound: StreamBound,
  maxBodyBytes: number,
): Promise<Response> {
  if (!session) {
    // 404 tells a client to start a new session (MCP Streamable HTTP).
    return jsonRpcErrorResponse(404, 'Session not found', { code: -32001 });
  }
  if (!sameDigest(session.digest, tokenDigest(token))) {
    return jsonRpcErrorResponse(403, 'this MCP session was opened with another token', {
      ctxbusCode: 'forbidden',
    });
  }
  session.lastSeen = Date.now();
  session.busy += 1;
  let response: Response;
  try {
    const checked = await checkedRpcRequest(request, maxBodyBytes);
    if (checked instanceof Response) {
      session.busy -= 1;
      return checked;
    }
    response = await session.transport.handleRequest(checked);
  } catch (error) {
    session.busy -= 1;
    throw error;
  }
  return untilSent(session, response, request.method === 'GET' ? bound : undefined);
}

/**
 * The MCP endpoint for a hub, over the SDK's web-standard Streamable HTTP transport: a session
 * per `initialize` (a map of session id to transport), server-to-client notifications on the GET
 * stream, DELETE to end a session. Requests must carry `Authorization: Bearer <token>` (401
 * otherwise) and a Host header naming an allowed host (403 otherwise). Idle sessions are closed.
 * Sessions are limited per token (a token makes room only by closing its own least recently
 * used idle session) and on the endpoint as a whole.
 *
 * Mount it on one path, e.g. in Hono: `app.all('/mcp', (c) => mcp.handle(c.req.raw))`.
 */
export function createMcpHttpHandler(options: McpHttpHandlerOptions): McpHttpHandler {
  const logger = options.logger ?? silentLogger;
  const gate: Gate = {
    allowedHosts: new Set((options.allowedHosts ?? LOCALHOST_NAMES).map((h) => h.toLowerCase())),
    allowedOrigins: options.allowedOrigins ? new Set(options.allowedOrigins) : undefined,
    verifyToken: options.verifyToken?.bind(options),
    logger,
  };
  const sessions = new McpSessions(
    {
      total: options.maxSessions ?? DEFAULT_MAX_SESSIONS,
      perToken: options.maxSessionsPerToken ?? DEFAULT_MAX_SESSIONS_PER_TOKEN,
      perTeam: options.maxSessionsPerTeam ?? DEFAULT_MAX_SESSIONS_PER_TEAM,
    },
    logger,
  );
  const idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
  const maxBodyBytes = options.maxRequestBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const streamBound: StreamBound = {
    maxUnreadBytes: options.maxUnreadStreamBytes ?? DEFAULT_MAX_UNREAD_STREAM_BYTES,
    logger,
  };
  const sweep = setInterval(
    () => sessions.closeIdle(idleTimeoutMs),
    Math.max(50, Math.min(idleTimeoutMs / 2, 60_000)),
  );
  // The sweep must not keep a process alive on its own.
  sweep.unref();
  const tokenCheck = options.tokenStillValid
    ? setInterval(
        () => void closeRevoked(sessions, options.tokenStillValid?.bind(options), logger),
        options.tokenCheckMs ?? DEFAULT_TOKEN_CHECK_MS,
      )
    : null;
  tokenCheck?.unref();
  let closed = false;

  async function startSession(
    request: Request,
    token: string,
    team: string | null,
  ): Promise<Response> {
    let backend: ContextBackend;
    try {
      backend = await options.createBackend(token);
    } catch (error) {
      return refusal(error, logger);
    }
    const digest = tokenDigest(token);
    const owner = digest.toString('hex');
    const release = sessions.reserve(owner, team);
    if (release instanceof Response) return release;
    try {
      // The body is read once the request holds its place (a slow upload counts against it).
      const checked = await checkedRpcRequest(request, maxBodyBytes);
      if (checked instanceof Response) return checked;
      return await initialize(checked, backend, { digest, owner, team }, release);
    } finally {
      release();
    }
  }

  async function initialize(
    request: Request,
    backend: ContextBackend,
    who: Pick<Session, 'digest' | 'owner' | 'team'>,
    release: () => void,
  ): Promise<Response> {
    const server = createCtxbusMcpServer({
      backend,
      logger,
      ...(options.updates && { updates: options.updates }),
    });
    const session: Session = {
      transport: new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          sessions.open.set(id, session);
          // Once the session exists, it no longer counts as under way.
          release();
          sessions.trim(who.owner, session);
          logger.debug({ sessionId: id }, 'MCP session opened');
        },
        maxRequestBodySize: maxBodyBytes,
        ...(options.keepAliveMs !== undefined && { keepAliveMs: options.keepAliveMs }),
      }),
      ...who,
      lastSeen: Date.now(),
      // The initialize request itself, until its response is sent.
      busy: 1,
    };
    const { transport } = session;
    // Whatever closes the transport (DELETE, idle sweep, close()) forgets the session; the
    // server, chained behind this by connect(), then stops its live stream.
    transport.onclose = () => {
      if (transport.sessionId !== undefined) sessions.open.delete(transport.sessionId);
      logger.debug({ sessionId: transport.sessionId }, 'MCP session closed');
    };
    await server.connect(transport);
    refuseInvalidParams(transport);
    let response: Response;
    try {
      response = await transport.handleRequest(request);
    } catch (error) {
      await transport.close();
      throw error;
    }
    // Anything but a valid initialize leaves the transport without a session: drop it.
    if (transport.sessionId === undefined) await transport.close();
    return untilSent(session, response);
  }

  async function handleRequest(request: Request): Promise<Response> {
    if (closed) {
      return jsonRpcErrorResponse(503, 'the MCP endpoint is shutting down', {
        ctxbusCode: 'unavailable',
      });
    }
    const admitted = await admit(request, gate);
    if (admitted instanceof Response) return admitted;
    const sessionId = request.headers.get('mcp-session-id');
    if (sessionId !== null) {
      return inSession(
        request,
        sessions.open.get(sessionId),
        admitted.token,
        streamBound,
        maxBodyBytes,
      );
    }
    if (request.method !== 'POST') {
      return jsonRpcErrorResponse(
        400,
        'Bad Request: Mcp-Session-Id header is required; start a session with an initialize POST',
      );
    }
    return startSession(request, admitted.token, admitted.team);
  }

  return {
    async handle(request) {
      try {
        return await handleRequest(request);
      } catch (error) {
        return refusal(error, logger);
      }
    },
    get sessionCount() {
      return sessions.open.size;
    },
    async close() {
      closed = true;
      clearInterval(sweep);
      if (tokenCheck) clearInterval(tokenCheck);
      await sessions.closeAll();
    },
  };
}
