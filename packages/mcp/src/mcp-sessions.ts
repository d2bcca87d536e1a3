import type { Logger } from '@ctxbus/core/contract';
import type { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { jsonRpcErrorResponse } from './http-responses.js';

export interface Session {
  transport: WebStandardStreamableHTTPServerTransport;
  digest: Buffer;
  /** The digest as hex: sessions of one token share it. */
  owner: string;
  lastSeen: number;
  /** Requests whose responses are still being sent (an open GET event stream included). */
  busy: number;
  /** The token's team, when `verifyToken` says (null: not counted per team). */
  team: string | null;
}

export interface SessionLimits {
  /** Sessions open at once on the endpoint. */
  total: number;
  /** Sessions one token may hold (it makes room by closing its own idle ones). */
  perToken: number;
  /** Sessions the tokens of one team may hold together. */
  perTeam: number;
}

/**
 * The endpoint's open sessions and the `initialize` requests under way, counted against the
 * limits. An initialize becomes a session (or fails) only once the transport has answered it,
 * so the limits count the ones under way beforehand: without that, concurrent initializes
 * would all pass the checks before any of them is a session.
 */
export class McpSessions {
  readonly open = new Map<string, Session>();
  private readonly starting = new Map<string, number>();
  private readonly startingTeams = new Map<string, number>();
  private startingTotal = 0;

  constructor(
    private readonly limits: SessionLimits,
    private readonly logger: Logger,
  ) {}

  /**
   * Room for one more session of `owner` (a token's digest) in `team`: a release function for
   * the reservation (call it once the session exists or the initialize failed), or the refusal.
   * Nothing here awaits, so concurrent initializes are counted in turn.
   */
  reserve(owner: string, team: string | null): Response | (() => void) {
    const refusal = this.refusal(owner, team);
    if (refusal) return refusal;
    bump(this.starting, owner, 1);
    if (team !== null) bump(this.startingTeams, team, 1);
    this.startingTotal += 1;
    let reserved = true;
    return () => {
      if (!reserved) return;
      reserved = false;
      this.startingTotal -= 1;
      bump(this.starting, owner, -1);
      if (team !== null) bump(this.startingTeams, team, -1);
    };
  }

  /** Per token first (only a token's own sessions make room for it), then team and endpoint. */
  private refusal(owner: string, team: string | null): Response | null {
    const { perToken, perTeam, total } = this.limits;
    const mine = this.sessionsOf(owner);
    const pending = this.starting.get(owner) ?? 0;
    const idle = mine.filter((session) => session.busy === 0).length;
    // Room: free places under the limit, and idle sessions a new one may replace, less what
    // the initializes under way will take.
    if (Math.max(0, perToken - mine.length) + idle - pending <= 0) {
      return jsonRpcErrorResponse(
        429,
        `this token already holds or is opening ${perToken} MCP sessions, none of them idle (each has a request in progress or an open event stream); end one (DELETE /mcp) or retry when one is idle`,
        { ctxbusCode: 'limit_reached' },
      );
    }
    // A session that will replace one of the token's own adds none to the team or endpoint.
    const grows = mine.length + pending < perToken;
    if (grows && team !== null && this.teamCount(team) >= perTeam) {
      return jsonRpcErrorResponse(
        429,
        `team ${team} already holds or is opening ${perTeam} MCP sessions across its tokens; end one (DELETE /mcp) or retry later`,
        { ctxbusCode: 'limit_reached' },
      );
    }
    if (grows && this.open.size + this.startingTotal >= total) {
      return jsonRpcErrorResponse(503, `too many open MCP sessions (${total}); retry later`, {
        ctxbusCode: 'unavailable',
      });
    }
    return null;
  }

  /**
   * A token past its limit (a new session just initialized) closes its least recently used
   * idle session. Done once the new session exists, so a request that starts none evicts none.
   */
  trim(owner: string, keep: Session): void {
    const mine = this.sessionsOf(owner);
    if (mine.length <= this.limits.perToken) return;
    const idle = mine.find((session) => session !== keep && session.busy === 0);
    if (!idle) return;
    this.logger.info(
      { sessionId: idle.transport.sessionId },
      'closing the least recently used MCP session of a token at its session limit',
    );
    void idle.transport.close();
  }

  /** Closes every session of one token (`owner`: its digest in hex), streams and all. */
  closeOwner(owner: string): void {
    for (const [id, session] of this.open) {
      if (session.owner !== owner) continue;
      this.logger.info({ sessionId: id }, 'closing the MCP session of a revoked token');
      void session.transport.close();
    }
  }

  /** Closes the sessions with no request and no open stream for longer than `idleMs`. */
  closeIdle(idleMs: number, now = Date.now()): void {
    for (const [id, session] of this.open) {
      if (session.busy === 0 && now - session.lastSeen > idleMs) {
        this.logger.info({ sessionId: id }, 'closing idle MCP session');
        void session.transport.close();
      }
    }
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.open.values()].map((session) => session.transport.close()));
    this.open.clear();
  }

  /** The sessions a team holds or is opening. */
  private teamCount(team: string): number {
    const open = [...this.open.values()].filter((session) => session.team === team).length;
    return open + (this.startingTeams.get(team) ?? 0);
  }

  /** The sessions of one token, least recently used first. */
  private sessionsOf(owner: string): Session[] {
    return [...this.open.values()]
      .filter((session) => session.owner === owner)
      .sort((a, b) => a.lastSeen - b.lastSeen);
  }
}

function bump(counts: Map<string, number>, key: string, by: number): void {
  const next = (counts.get(key) ?? 0) + by;
  if (next > 0) counts.set(key, next);
  else counts.delete(key);
}
