import { createHash, randomBytes } from 'node:crypto';
import type { TokenInfo } from '@ctxbus/core';
import { CONFLICT_WRITER, CtxbusError, redactSecrets } from '@ctxbus/core';
import type { Store, TokenRecord, TokenRole } from '@ctxbus/store';
import type { Caller } from './caller.js';
import { HUB_RUNTIME } from './tasks/task-status-item.js';

/** Every ctxbus token starts with this, so secret scanners (and our redactor) can spot it. */
export const TOKEN_PREFIX = 'cbx_';

export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

export interface MintTokenRequest {
  role: TokenRole;
  teamId: string | null;
  runtime: string | null;
  label?: string | null;
}

export interface MintedToken {
  /** The secret, to show once; only its hash is stored. */
  token: string;
  record: TokenRecord;
}

/**
 * Runtime names no token may carry: the hub writes as them (task sweeps as HUB_RUNTIME,
 * conflict items as CONFLICT_WRITER), and readers trust items by those names.
 */
export const RESERVED_RUNTIMES: readonly string[] = [HUB_RUNTIME, CONFLICT_WRITER];

/** Creates a token (32 random bytes) and stores its SHA-256 hash. */
export async function mintToken(
  store: Store,
  request: MintTokenRequest,
  now: Date = new Date(),
): Promise<MintedToken> {
  if (request.role === 'runtime' && (request.teamId === null || request.runtime === null)) {
    throw new CtxbusError('validation_failed', 'a runtime token needs a team and a runtime');
  }
  if (request.role === 'runtime' && RESERVED_RUNTIMES.includes(request.runtime ?? '')) {
    throw new CtxbusError(
      'validation_failed',
      `runtime ${request.runtime} is the hub's own name (it writes task sweeps and conflict items as it); pick another`,
      { details: { field: 'runtime', reserved: RESERVED_RUNTIMES } },
    );
  }
  const token = `${TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
  const record: TokenRecord = {
    id: `tok_${randomBytes(9).toString('base64url')}`,
    hash: hashToken(token),
    role: request.role,
    teamId: request.role === 'admin' ? null : request.teamId,
    runtime: request.role === 'admin' ? null : request.runtime,
    // A label is free text a person types: a secret pasted into it is redacted, not stored.
    label: request.label == null ? null : redactSecrets(request.label, 'label').text,
    createdAt: now.toISOString(),
    revokedAt: null,
  };
  await store.createToken(record);
  return { token, record };
}

/** A token record without its hash: what the API and the CLI show. */
export function tokenInfo(record: TokenRecord): TokenInfo {
  const { hash: _hash, ...info } = record;
  return info;
}

/** The token of a `Bearer <token>` header, or null when it is not one. */
export function bearerToken(authorization: string | undefined): string | null {
  return /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1] ?? null;
}

/** The hash of the token in a `Bearer <token>` header, or null when it is not one. */
export function bearerHash(authorization: string): string | null {
  const token = bearerToken(authorization);
  return token ? hashToken(token) : null;
}

interface CacheEntry {
  caller: Caller | null;
  until: number;
  /** A background re-read in flight (refresh-ahead). */
  refreshing?: boolean;
}

/** Verdicts this close to expiry are re-read in the background while still being served. */
const REFRESH_AHEAD_MS = 1_000;

/**
 * Checks bearer tokens against the store. Verdicts are cached briefly (default 5 s) so a busy
 * hub does not hit the store per request; a revocation through this hub takes effect at once,
 * one through another hub within the cache time.
 */
export class TokenVerifier {
  private readonly cache = new Map<string, CacheEntry>();
  /** Bumped by `forget`: a read that started before it must not cache its verdict. */
  private generation = 0;

  constructor(
    private readonly store: Store,
    readonly cacheMs = 5_000,
    /** The clock verdicts expire by (injected in tests). */
    private readonly now: () => number = Date.now,
  ) {}

  async verify(authorization: string | undefined): Promise<Caller> {
    if (!authorization) {
      throw new CtxbusError(
        'unauthorized',
        'missing Authorization header; send "Authorization: Bearer <token>"',
      );
    }
    const hash = bearerHash(authorization);
    if (hash === null) {
      throw new CtxbusError('unauthorized', 'the Authorization header must be "Bearer <token>"');
    }
    const now = this.now();
    let entry = this.cache.get(hash);
    if (!entry || entry.until < now) {
      entry = await this.load(hash, now);
    } else if (entry.until - now < REFRESH_AHEAD_MS && !entry.refreshing) {
      // A token in steady use never waits for the store: its verdict is re-read shortly
      // before it expires, so a revocation through another hub still applies within cacheMs.
      entry.refreshing = true;
      this.load(hash, now).catch(() => {
        if (entry) entry.refreshing = false;
      });
    }
    if (!entry.caller) throw new CtxbusError('unauthorized', 'the token is unknown or revoked');
    return entry.caller;
  }

  private async load(hash: string, now: number): Promise<CacheEntry> {
    const generation = this.generation;
    const record = await this.store.findTokenByHash(hash);
    const caller: Caller | null =
      record && record.revokedAt === null
        ? {
            tokenId: record.id,
            role: record.role,
            teamId: record.teamId,
            runtime: record.runtime,
          }
        : null;
    const entry: CacheEntry = { caller, until: now + this.cacheMs };
    if (generation !== this.generation) return entry;
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(hash, entry);
    return entry;
  }

  /**
   * Whether the token with this hash is still valid, read from the store now (not from the
   * cache), which refreshes its cached verdict too. Open streams are re-checked this way.
   */
  async stillValid(hash: string): Promise<boolean> {
    const entry = await this.load(hash, this.now());
    return entry.caller !== null;
  }

  /** Drops cached verdicts for a token (after its revocation). */
  forget(tokenId: string): void {
    this.generation += 1;
    for (const [hash, entry] of this.cache) {
      if (entry.caller?.tokenId === tokenId) this.cache.delete(hash);
    }
  }
}
