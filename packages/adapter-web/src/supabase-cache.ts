import type { ContextItem, ErrorCode } from '@ctxbus/core/contract';
import { CtxbusError, itemMatches, URGENCY_RANK } from '@ctxbus/core/contract';
import type {
  RealtimeChannel,
  RealtimePostgresChangesPayload,
  SupabaseClient,
} from '@supabase/supabase-js';
import type { CacheFilter, ItemCache } from './item-cache.js';
import { toItemFilter } from './item-cache.js';
import type { LiveCache } from './live-cache.js';
import type { StreamState } from './live-stream.js';
import { ITEM_ROW_COLUMNS, itemFromSupabaseRow } from './supabase-rows.js';

/** The filters of `connectCache`, judged the same way (core's `itemMatches`). */
export type SupabaseCacheFilter = Pick<
  CacheFilter,
  'scope' | 'scopeKey' | 'type' | 'tags' | 'minUrgency'
>;

export interface SupabaseCacheOptions extends SupabaseCacheFilter {
  /** The ctxbus schema (`?schema=` of the hub's store; default `ctxbus`), exposed in the Data API. */
  schema?: string;
  /** Items listed into the cache (default: the cache's `maxItems`, at most 500). */
  initialLimit?: number;
  /** The Realtime channel's name (default `ctxbus-items-<schema>`). */
  channel?: string;
  signal?: AbortSignal;
  /**
   * `connecting`, `live` (subscribed and listed), `reconnecting` (the channel failed or timed
   * out: supabase-js rejoins by itself, and the cache lists again once it has), `closed`.
   */
  onState?: (state: StreamState, cause?: unknown) => void;
  /** An error that ends it for good: the Data API refused the user (`unauthorized`, `forbidden`). */
  onError?: (error: CtxbusError) => void;
}

type Row = Record<string, unknown>;
type Change = RealtimePostgresChangesPayload<Row>;

/** A Data API (PostgREST) error as a CtxbusError; auth and schema refusals are final. */
function dataApiError(error: { message: string; code?: string }, status: number): CtxbusError {
  const code: ErrorCode =
    status === 401
      ? 'unauthorized'
      : status === 403
        ? 'forbidden'
        : status === 404 || status === 406
          ? 'not_found'
          : status >= 500 || status === 0
            ? 'unavailable'
            : 'validation_failed';
  return new CtxbusError(code, `the Supabase Data API refused the listing: ${error.message}`, {
    details: { status, postgrestCode: error.code },
    retryable: code === 'unavailable',
  });
}

/**
 * Keeps `cache` current from Supabase instead of the hub: lists the newest matching items
 * through the Data API (`<schema>.items`, row-level security choosing the user's teams), then
 * subscribes to Realtime `postgres_changes` on that table. New rows are added; updated rows
 * (consumption, supersession) replace the held state when further along; deleted rows (the
 * hub's archive) leave. Realtime does not replay what a disconnected client missed, so the
 * cache lists again each time the channel is (re)subscribed.
 *
 * `supabase` is the page's client, signed in as a user whose JWT carries
 * `app_metadata.ctxbus_teams` (`ctxbus migrate --supabase` sets up the policy).
 */
export function connectSupabaseCache(
  supabase: SupabaseClient,
  cache: ItemCache,
  options: SupabaseCacheOptions = {},
): LiveCache {
  const { schema = 'ctxbus', initialLimit, signal, onState, onError, ...filter } = options;
  const itemFilter = { ...toItemFilter(filter), includeSuperseded: true };
  const limit = initialLimit ?? Math.min(cache.maxItems, 500);
  const matches = (item: ContextItem) =>
    itemMatches(
      item,
      { teamId: item.teamId, runtime: item.source.runtime },
      itemFilter,
      new Date(),
    );

  let channel: RealtimeChannel | undefined;
  let stopped = false;
  let finish: () => void = () => {};
  const done = new Promise<void>((resolve) => {
    finish = resolve;
  });
  let markLoaded: () => void = () => {};
  let failLoad: (error: unknown) => void = () => {};
  const loaded = new Promise<void>((resolve, reject) => {
    markLoaded = resolve;
    failLoad = reject;
  });
  loaded.catch(() => {});

  const stop = () => {
    if (stopped) return;
    stopped = true;
    signal?.removeEventListener('abort', stop);
    const closing = channel;
    channel = undefined;
    void (closing ? supabase.removeChannel(closing) : Promise.resolve())
      .catch(() => {})
      .finally(() => {
        onState?.('closed');
        finish();
      });
  };
  const fail = (error: CtxbusError) => {
    failLoad(error);
    if (stopped) return;
    onError?.(error);
    stop();
  };

  const list = async (): Promise<ContextItem[]> => {
    let query = supabase
      .schema(schema)
      .from('items')
      .select(ITEM_ROW_COLUMNS)
      .is('superseded_by', null);
    const { scopes, scopeKey, types, tags, minUrgency } = itemFilter;
    if (scopes?.length) query = query.in('scope', [...scopes]);
    if (scopeKey !== undefined) query = query.eq('scope_key', scopeKey);
    if (types?.length) query = query.in('type', [...types]);
    // Stored tags are lowercase; the hub's store compares them so too.
    if (tags?.length)
      query = query.overlaps(
        'tags',
        tags.map((tag) => tag.toLowerCase()),
      );
    if (minUrgency !== undefined) query = query.gte('urgency', URGENCY_RANK[minUrgency]);
    const { data, error, status } = await query.order('rid', { ascending: false }).limit(limit);
    if (error) throw dataApiError(error, status);
    return (data as unknown[]).map((row) => itemFromSupabaseRow(row));
  };

  // Changes that arrive while a listing is under way wait for it: applied after it in order.
  let pending: Change[] | null = [];
  let listing: Promise<void> | null = null;
  const relist = (): Promise<void> => {
    listing ??= (async () => {
      pending ??= [];
      try {
        const items = await list();
        if (stopped) return;
        cache.merge(items);
        const queued = pending;
        pending = null;
        for (const change of queued) apply(change);
      } finally {
        listing = null;
      }
    })();
    return listing;
  };

  const apply = (change: Change) => {
    if (pending) {
      pending.push(change);
      return;
    }
    if (change.eventType === 'DELETE') {
      const rid = Number((change.old as Row).rid);
      const gone = cache.items({ includeSuperseded: true }).filter((item) => item.seq === rid);
      cache.remove(gone.map((item) => item.id));
      return;
    }
    let item: ContextItem;
    try {
      item = itemFromSupabaseRow(change.new);
    } catch {
      // An incomplete record (Realtime leaves out unchanged large values, or a payload it
      // found too large): read the rows again instead.
      void relist().catch((error: unknown) => onState?.('reconnecting', error));
      return;
    }
    if (matches(item)) cache.merge([item]);
  };

  const start = async () => {
    onState?.('connecting');
    // A first listing right away: the page shows something, and a refused user ends here.
    cache.merge(await list());
    // The user's token for the join (supabase-js sets it asynchronously otherwise, and a join
    // sent before would be the anon key's: a channel that receives nothing).
    await supabase.realtime.setAuth();
    if (stopped) return;
    let everLive = false;
    channel = supabase
      .channel(options.channel ?? `ctxbus-items-${schema}`)
      .on('postgres_changes', { event: '*', schema, table: 'items' }, (change: Change) =>
        apply(change),
      )
      .subscribe((status, error) => {
        if (stopped) return;
        if (status === 'SUBSCRIBED') {
          // What changed before the subscription (or while it was away) comes from a listing.
          relist().then(
            () => {
              if (stopped) return;
              if (!everLive) markLoaded();
              everLive = true;
              onState?.('live');
            },
            (caught: unknown) => {
              const final = CtxbusError.isInstance(caught) && !caught.retryable;
              if (final) fail(caught);
              else onState?.('reconnecting', caught);
            },
          );
        } else if (status === 'CHANNEL_ERROR' || status === 'TIMED_OUT') {
          pending ??= [];
          onState?.('reconnecting', error ?? new CtxbusError('unavailable', `Realtime: ${status}`));
        } else if (status === 'CLOSED') stop();
      });
  };

  if (signal?.aborted) stop();
  else {
    signal?.addEventListener('abort', stop, { once: true });
    start().catch((error: unknown) =>
      fail(
        CtxbusError.isInstance(error)
          ? error
          : new CtxbusError('internal', `the Supabase cache stopped: ${(error as Error).message}`, {
              cause: error,
            }),
      ),
    );
  }
  return { loaded, done, stop };
}
